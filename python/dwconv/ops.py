"""dwconv.conv1d: F.conv1d(x, weight, bias, groups=C) through dwconv, and the torch
operators under it.

Three ways in, one implementation (``_run_forward``, under ``_forward``):
- eager calls that need no gradient run it directly: a plan cached by the call's own
  arguments, one output allocation, one C call (the per-call cost is Python's, see
  python/bench/overhead.py);
- calls that need a gradient, and everything torch.compile traces, go through the
  custom operator ``torch.ops.dwconv.conv1d``, whose fake implementation gives
  torch.compile and CUDA graphs the output's shape and strides, and whose autograd
  formula calls ``torch.ops.dwconv.conv1d_backward`` (dwconv_plan_backward);
- NumPy arrays and other DLPack producers are viewed as tensors (no copy) by
  dwconv._interop and their result handed back in their own kind.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _core, _lib
from . import _torch as T

_opts = {}  # (K, stride, padding, dilation, padding_mode, activation) -> resolved codes
_specs_get = _core.specs.get  # (specs is never rebound)
_empty_like, _empty_strided = torch.empty_like, torch.empty_strided


def _resolve(k, stride, padding, dilation, padding_mode, activation):
    key = (k, stride, padding, dilation, padding_mode, activation)
    try:
        return _opts[key]
    except KeyError:
        opts = _opts[key] = _core.resolve_options(k, *key[1:])
        return opts
    except TypeError:  # an unhashable argument (a list): resolve it every time
        return _core.resolve_options(*key)


def _forward(x, weight, bias, opts, out):
    """y = conv(x) for resolved options: the one implementation of the forward (the
    operators' and every checked path's; conv1d's eager path caches the plan by its own
    arguments and goes straight to _run_forward)."""
    return _run_forward(_forward_plan(x, weight, bias, opts, out), x, weight, bias, out)


def _forward_plan(x, weight, bias, opts, out):
    """The cached plan of a forward, by everything that decides it."""
    key = ("fwd", x.device, x.dtype, x.shape, x.stride(), weight.device, weight.dtype,
           weight.shape, weight.is_contiguous(), opts,
           None if bias is None else (bias.device, bias.dtype, bias.shape, bias.is_contiguous()),
           None if out is None else (out.device, out.dtype, out.shape, out.stride()))
    plan = _specs_get(key)
    if plan is None:
        plan = _core.remember(key, _new_forward_plan(x, weight, bias, out, opts))
    return plan


def _run_forward(plan, x, weight, bias, out):
    """The call itself: the output, then dwconv_plan_forward on the plan's context."""
    if out is not None:
        y = out
    elif plan.same_as_x and type(x) is Tensor:
        # the common case, ~25% cheaper than empty_strided (no keywords to parse); only
        # for a plain tensor, whose empty_like is a plain tensor as empty_strided's is
        y = _empty_like(x)
    else:
        y = _empty_strided(plan.out_shape, plan.out_strides, dtype=x.dtype, device=x.device)
    ctx = plan.ctx
    with ctx.lock:
        # ctx.follow_stream() inlined: on a GPU, torch's current stream, the C call to
        # set it only when it changed (the stream last set is under this lock too)
        if ctx.current_stream is not None:
            stream = ctx.current_stream()
            if stream != ctx.stream:
                ctx.use_stream(stream)
        st = _lib._lib.dwconv_plan_forward(plan.handle, x.data_ptr(), weight.data_ptr(),
                                           None if bias is None else bias.data_ptr(),
                                           y.data_ptr())
    if st:
        _lib.raise_status(st)
    return y


def _new_forward_plan(x, weight, bias, out, opts):
    T.same_device(x.device, (("weight", weight), ("bias", bias), ("out", out)))
    return _core.forward_plan(
        T.device(x.device).ctx, T.meta(x, "x"), T.meta(weight, "weight"),
        None if bias is None else T.meta(bias, "bias"),
        None if out is None else T.meta(out, "out"), opts)


def _backward(dy, x, weight, bias, opts, need_dx, need_dweight, need_dbias):
    """(dx, dweight, dbias) of conv1d, each None when not needed."""
    if dy.dtype != x.dtype:
        raise TypeError(f"dwconv: the output's gradient is {dy.dtype}, x is {x.dtype}")
    if 0 in dy.stride() and not dy.is_contiguous():
        dy = dy.contiguous()  # an expanded gradient (from .sum(), say): dwconv needs strides >= 1
    dev = x.device
    # everything the checks below look at: a hit must not skip a check that would fail
    key = ("bwd", dev, x.dtype, x.shape, x.stride(), weight.device, weight.dtype, weight.shape,
           weight.is_contiguous(), opts,
           None if bias is None else (bias.device, bias.dtype, bias.shape, bias.is_contiguous()),
           dy.device, dy.shape, dy.stride())
    plan = _core.specs.get(key)
    if plan is None:
        T.same_device(dev, (("weight", weight), ("bias", bias), ("the output's gradient", dy)))
        plan = _core.remember(key, _core.backward_plan(
            T.device(dev).ctx, T.meta(x, "x"), T.meta(weight, "weight"),
            None if bias is None else T.meta(bias, "bias"), (tuple(dy.shape), dy.stride()),
            opts))
    dx = torch.empty_strided(plan.out_shape, plan.out_strides, dtype=x.dtype, device=dev) \
        if need_dx else None
    dweight = torch.empty_like(weight, memory_format=torch.contiguous_format) \
        if need_dweight else None
    dbias = torch.empty_like(bias, memory_format=torch.contiguous_format) \
        if need_dbias and bias is not None else None
    ctx = plan.ctx
    with ctx.lock:
        ctx.follow_stream()
        st = _lib._lib.dwconv_plan_backward(
            plan.handle, x.data_ptr(), weight.data_ptr(), T.ptr(bias), dy.data_ptr(),
            T.ptr(dx), T.ptr(dweight), T.ptr(dbias))
    if st:
        _lib.raise_status(st)
    return dx, dweight, dbias


def _out_length(length, k, opts):
    stride, left, right, dilation = opts[:4]
    return (length + left + right - dilation * (k - 1) - 1) // stride + 1


# ---- the custom operators ---------------------------------------------------------------
@torch.library.custom_op("dwconv::conv1d", mutates_args=())
def conv1d_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: int, pad_left: int,
              pad_right: int, dilation: int, padding_mode: int, activation: int) -> Tensor:
    """The operator: options as resolved codes (see dwconv._core.resolve_options)."""
    return _forward(x, weight, bias,
                    (stride, pad_left, pad_right, dilation, padding_mode, activation), None)


@conv1d_op.register_fake
def _conv1d_fake(x, weight, bias, stride, pad_left, pad_right, dilation, padding_mode,
                 activation):
    b, c, length = x.shape
    shape = (b, c, _out_length(length, weight.shape[-1],
                               (stride, pad_left, pad_right, dilation)))
    return x.new_empty_strided(shape, _core.layout_strides(shape, T.layout_of(x)))


@torch.library.custom_op("dwconv::conv1d_out", mutates_args=("out",))
def conv1d_out_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: int,
                  pad_left: int, pad_right: int, dilation: int, padding_mode: int,
                  activation: int, out: Tensor) -> None:
    """conv1d into a given tensor (the out= form, for torch.compile)."""
    _forward(x, weight, bias, (stride, pad_left, pad_right, dilation, padding_mode, activation),
             out)


@conv1d_out_op.register_fake
def _conv1d_out_fake(x, weight, bias, stride, pad_left, pad_right, dilation, padding_mode,
                     activation, out):
    return None


@torch.library.custom_op("dwconv::conv1d_backward", mutates_args=())
def conv1d_backward_op(dy: Tensor, x: Tensor, weight: Tensor, bias: Optional[Tensor],
                       stride: int, pad_left: int, pad_right: int, dilation: int,
                       padding_mode: int, activation: int, need_dx: bool, need_dweight: bool,
                       need_dbias: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias); an unwanted one is an empty tensor."""
    grads = _backward(dy, x, weight, bias,
                      (stride, pad_left, pad_right, dilation, padding_mode, activation),
                      need_dx, need_dweight, need_dbias)
    return tuple(g if g is not None else x.new_empty(0) for g in grads)


@conv1d_backward_op.register_fake
def _conv1d_backward_fake(dy, x, weight, bias, stride, pad_left, pad_right, dilation,
                          padding_mode, activation, need_dx, need_dweight, need_dbias):
    dx = x.new_empty_strided(x.shape, _core.layout_strides(tuple(x.shape), T.layout_of(x))) \
        if need_dx else x.new_empty(0)
    dweight = torch.empty_like(weight, memory_format=torch.contiguous_format) \
        if need_dweight else x.new_empty(0)
    dbias = torch.empty_like(bias, memory_format=torch.contiguous_format) \
        if need_dbias and bias is not None else x.new_empty(0)
    return dx, dweight, dbias


def _setup_context(ctx, inputs, output):
    x, weight, bias = inputs[:3]
    ctx.save_for_backward(x, weight, bias)
    ctx.opts = inputs[3:]


def _conv1d_grad(ctx, dy):
    x, weight, bias = ctx.saved_tensors
    need_dx, need_dweight, need_dbias = ctx.needs_input_grad[:3]
    need_dbias = need_dbias and bias is not None
    if not (need_dx or need_dweight or need_dbias):
        return (None,) * 9
    dx, dweight, dbias = conv1d_backward_op(dy, x, weight, bias, *ctx.opts, need_dx,
                                            need_dweight, need_dbias)
    return (dx if need_dx else None, dweight if need_dweight else None,
            dbias if need_dbias else None) + (None,) * 6


conv1d_op.register_autograd(_conv1d_grad, setup_context=_setup_context)


# ---- the public function ----------------------------------------------------------------
_grad_enabled = torch.is_grad_enabled
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, padding_mode="zeros",
           activation=None, out=None):
    """Depthwise conv1d: ``F.conv1d(x, weight, bias, stride, padding, dilation,
    groups=C)``, then the activation, through dwconv.

    x: (B, C, L) (or unbatched (C, L)) float32/float16/bfloat16 on the cpu or a GPU,
    any strides: a (B, L, C) tensor transposed to (B, C, L), or a slice, is read in
    place (channel-last input gives channel-last output). weight: (C, 1, K) or (C, K),
    float32 or x's dtype; bias: (C,), the weight's dtype. padding: an int, a
    (left, right) pair, "valid", "same" or "causal". padding_mode: "zeros", "reflect",
    "replicate", "circular" (nn.Conv1d's). activation: None, "relu", "silu"/"swish".
    out: a (B, C, L_out) tensor to write (any strides). NumPy arrays and DLPack
    producers are accepted and answered in kind.
    """
    if not isinstance(x, Tensor):
        from . import _interop
        return _interop.conv1d(x, weight, bias, stride, padding, dilation, padding_mode,
                               activation, out)
    shape = x.shape
    if len(shape) == 2:  # unbatched (C, L), as F.conv1d takes it
        y = conv1d(x.unsqueeze(0), weight, bias, stride, padding, dilation, padding_mode,
                   activation, None if out is None else out.unsqueeze(0))
        return y.squeeze(0) if out is None else out
    if _compiling():
        opts = _core.resolve_options(weight.shape[-1], stride, padding, dilation,
                                     padding_mode, activation)
        if out is not None:
            conv1d_out_op(x, weight, bias, *opts, out)
            return out
        return conv1d_op(x, weight, bias, *opts)
    if _grad_enabled() and (x.requires_grad or weight.requires_grad or
                            (bias is not None and bias.requires_grad)):
        opts = _resolve(weight.shape[-1], stride, padding, dilation, padding_mode, activation)
        if out is not None:
            raise RuntimeError("dwconv.conv1d: out= does not support automatic "
                               "differentiation (an argument requires grad)")
        return conv1d_op(x, weight, bias, *opts)
    # Eager without autograd, the hot path: the plan cached by this call's own arguments
    # (the options unresolved: they and the weight's K decide the resolved ones; as in
    # _resolve, an option equal to a cached one, True to 1, is taken as it), so a hit
    # is one key and one lookup. The same tensors' metadata as _forward_plan's key.
    key = ("eager", x.device, x.dtype, shape, x.stride(), weight.device, weight.dtype,
           weight.shape, weight.is_contiguous(), stride, padding, dilation, padding_mode,
           activation,
           None if bias is None else (bias.device, bias.dtype, bias.shape, bias.is_contiguous()),
           None if out is None else (out.device, out.dtype, out.shape, out.stride()))
    try:
        plan = _specs_get(key)
    except TypeError:  # an unhashable argument (a list): resolve and look up every time
        key = plan = None
    if plan is None:
        opts = _core.resolve_options(weight.shape[-1], stride, padding, dilation,
                                     padding_mode, activation)  # raises on a bad option
        plan = _forward_plan(x, weight, bias, opts, out)
        if key is not None:
            _core.remember(key, plan)
    return _run_forward(plan, x, weight, bias, out)


def conv1d_backward(dy, x, weight, bias=None, stride=1, padding=0, dilation=1,
                    padding_mode="zeros", activation=None, output_mask=(True, True, True)):
    """The gradients (dx, dweight, dbias) of conv1d given dy, each None unless asked
    for in output_mask; dweight and dbias in the weight's dtype. (Autograd calls this
    for you; it is here for callers that write their own backward.)"""
    opts = _resolve(weight.shape[-1], stride, padding, dilation, padding_mode, activation)
    return _backward(dy, x, weight, bias, opts, *output_mask)
