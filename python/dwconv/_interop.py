"""NumPy arrays and DLPack producers (CuPy, JAX, ...) through the torch-facing functions.

- conv1d on NumPy arrays runs without torch: the arrays' own memory (any strides)
  goes to the cpu backend, and the result is a NumPy array.
- Everything else is viewed as torch tensors without a copy (torch.from_numpy, or
  torch.from_dlpack, which also orders the producer's stream before torch's), runs
  through the torch functions, and comes back in the producer's kind: NumPy arrays
  as NumPy arrays, others through their array namespace's from_dlpack (the Python
  array API), or as torch tensors when the producer has none.
"""
import numbers

from . import _core, _lib

try:
    import numpy as np
except ImportError:  # a torch-only installation
    np = None

_NP_DTYPES = {"float32": _lib.F32, "float16": _lib.F16, "bfloat16": _lib.BF16}


def _is_numpy(a):
    return np is not None and isinstance(a, np.ndarray)


def _np_meta(a, name):
    code = _NP_DTYPES.get(a.dtype.name)
    if code is None:
        raise TypeError(f"dwconv: {name} is {a.dtype}; dwconv takes float32, float16 and "
                        "bfloat16 (ml_dtypes.bfloat16)")
    size = a.dtype.itemsize
    if any(s % size for s in a.strides):
        raise ValueError(f"dwconv: {name} has strides {a.strides} bytes, not whole elements")
    return a.shape, tuple(s // size for s in a.strides), code


def _np_ptr(a):
    return a.__array_interface__["data"][0]


def _np_conv1d(x, weight, bias, opts, out):
    for name, a in (("weight", weight), ("bias", bias), ("out", out)):
        if a is not None and not _is_numpy(a):
            raise TypeError(f"dwconv: x is a NumPy array, {name} is {type(a).__name__}: "
                            "pass NumPy arrays for all of them")
    if out is not None and not out.flags.writeable:
        raise ValueError("dwconv: out is a read-only array")
    ctx = _core.context(_lib.BACKEND_CPU, 0)
    plan = _core.forward_plan(ctx, _np_meta(x, "x"), _np_meta(weight, "weight"),
                              None if bias is None else _np_meta(bias, "bias"),
                              None if out is None else _np_meta(out, "out"), opts)
    if out is None:
        b, c, n = plan.out_shape
        nlc = plan.out_strides == _core.layout_strides(plan.out_shape, True)
        out = np.empty((b, n, c), x.dtype).transpose(0, 2, 1) if nlc else \
            np.empty(plan.out_shape, x.dtype)
    with ctx.lock:
        st = _lib._lib.dwconv_plan_forward(plan.handle, _np_ptr(x), _np_ptr(weight),
                                           None if bias is None else _np_ptr(bias),
                                           _np_ptr(out))
    _lib.check(st)
    return out


def conv1d(x, weight, bias, stride, padding, dilation, padding_mode, activation, out):
    """dwconv.conv1d for an x that is not a torch tensor."""
    if _is_numpy(x):
        k = weight.shape[-1]
        opts = _core.resolve_options(k, stride, padding, dilation, padding_mode, activation)
        if x.ndim == 2:
            y = _np_conv1d(x[None], weight, bias, opts, None if out is None else out[None])
            return y[0] if out is None else out
        _core.check_3d(x.shape, "x")
        return _np_conv1d(x, weight, bias, opts, out)
    from . import ops
    args, back = to_torch((x, weight, bias, out))
    y = ops.conv1d(args[0], args[1], args[2], stride, padding, dilation, padding_mode,
                   activation, args[3])
    return out if out is not None else back(y)


# ---- views as torch tensors -----------------------------------------------------------
def _torch():
    try:
        import torch
    except ImportError:
        raise TypeError("dwconv: this function takes torch tensors, or NumPy arrays and "
                        "DLPack producers viewed as tensors, which needs torch installed "
                        "(dwconv.conv1d alone takes NumPy arrays without torch)") from None
    return torch


def _np_to_torch(torch, a):
    if a.dtype.name == "bfloat16":  # ml_dtypes: torch.from_numpy has no bfloat16
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _np_from_torch(torch, t, like):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(like.dtype)
    return t.numpy()


def from_dlpack(obj):
    """A torch tensor viewing obj's memory (torch.from_dlpack: any producer of
    __dlpack__, e.g. a CuPy or JAX array), ready for every dwconv function."""
    return _torch().from_dlpack(obj)


def to_torch(values):
    """Views the arrays among values (NumPy arrays, DLPack producers) as torch tensors;
    returns them and a function that turns a torch result back into the kind of the
    first array."""
    torch = _torch()
    first = next((v for v in values if v is not None and not isinstance(v, torch.Tensor)
                  and not isinstance(v, (numbers.Number, str, bool))), None)
    out = []
    for v in values:
        if _is_numpy(v):
            v = _np_to_torch(torch, v)
        elif v is not None and not isinstance(v, torch.Tensor) and hasattr(v, "__dlpack__"):
            v = torch.from_dlpack(v)
        out.append(v)
    if first is None or isinstance(first, torch.Tensor):
        return out, lambda t: t
    if _is_numpy(first):
        return out, lambda t: _np_from_torch(torch, t, first)
    if hasattr(first, "__dlpack__"):
        namespace = getattr(first, "__array_namespace__", None)
        if namespace is not None:
            return out, lambda t: namespace().from_dlpack(t)
        return out, lambda t: t
    raise TypeError(f"dwconv: cannot use a {type(first).__name__}: pass torch tensors, NumPy "
                    "arrays, or objects with __dlpack__")
