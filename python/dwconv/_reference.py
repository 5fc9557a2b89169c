"""dwconv.reference_conv1d: the oracle (dwconv_reference_forward), on host memory.

Every backend's forward is bitwise equal to it; tests compare against it. It reads
contiguous NCL or NLC x (channel-last x, a (B, L, C) tensor transposed, is NLC) from
torch CPU tensors or NumPy arrays and returns the same kind.
"""
import ctypes

from . import _core, _lib


def _kind(a):
    """(shape, strides, dtype code, pointer, allocate(shape, strides)) of a host array."""
    if type(a).__module__.startswith("torch"):
        from . import _torch as T
        if a.device.type != "cpu":
            raise ValueError(f"dwconv: the reference runs on host memory; this tensor is on "
                             f"{a.device}")
        shape, strides, code = T.meta(a, "tensor")
        return shape, strides, code, a.data_ptr(), \
            lambda s, st: T.empty(s, st, a.dtype, a.device)
    from ._interop import _np_meta, _np_ptr, np
    shape, strides, code = _np_meta(a, "array")

    def alloc(s, st):
        nlc = st == _core.layout_strides(s, True) and st != _core.layout_strides(s, False)
        return np.empty((s[0], s[2], s[1]), a.dtype).transpose(0, 2, 1) if nlc else \
            np.empty(s, a.dtype)
    return shape, strides, code, _np_ptr(a), alloc


def reference_conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1,
                     padding_mode="zeros", activation=None):
    """conv1d through dwconv's scalar reference (one thread, host memory): the oracle
    that every backend matches bit for bit."""
    xshape, xstrides, dtype, xptr, alloc = _kind(x)
    _core.check_3d(xshape, "x")
    xs = _core.dense_strides(xshape, xstrides, "x")
    nlc = _core.channel_last(xs, xshape)
    if xs != _core.layout_strides(xshape, nlc):
        raise ValueError("dwconv: the reference reads contiguous NCL or NLC x only")
    wshape, wstrides, wdtype, wptr, _ = _kind(weight)
    k = _core.check_weight(wshape, _core.is_contiguous(wshape, wstrides), xshape[1])
    bptr, bdtype = None, None
    if bias is not None:
        bshape, bstrides, bdtype, bptr, _ = _kind(bias)
        _core.check_bias(bshape, _core.is_contiguous(bshape, bstrides), xshape[1])
    _core.check_weight_dtype(dtype, wdtype, bdtype)
    opts = _core.resolve_options(k, stride, padding, dilation, padding_mode, activation)
    s, left, right, d, mode, act = opts
    desc = _core.new_desc(*xshape, k, dtype, wdtype, s, left, right, d, mode, act, nlc=nlc)
    shape = (xshape[0], xshape[1], _core.output_length(desc))
    y = alloc(shape, _core.layout_strides(shape, nlc))
    yptr = y.data_ptr() if hasattr(y, "data_ptr") else y.__array_interface__["data"][0]
    _lib.check(_lib.load().dwconv_reference_forward(ctypes.byref(desc), xptr, wptr, bptr, yptr))
    return y
