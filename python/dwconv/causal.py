"""causal-conv1d's functions (Dao-AILab/causal-conv1d), with its signatures and
semantics, written from its documented behaviour over dwconv's causal API.

    causal_conv1d_fn(x, weight, bias=None, seq_idx=None, initial_states=None,
                     return_final_states=False, final_states_out=None, activation=None)
    causal_conv1d_update(x, conv_state, weight, bias=None, activation=None,
                         cache_seqlens=None, conv_state_indices=None)

Layouts are causal-conv1d's: x (batch, dim, seqlen), channel-first or channel-last
(a (batch, seqlen, dim) tensor transposed); weight (dim, width); bias (dim,);
initial_states and final states (batch, dim, width - 1); conv_state (batch or pool,
dim, state_len >= width - 1). Beyond causal-conv1d: any width, every dtype pairing
dwconv has (weight float32 or x's dtype), and both layouts on every path.

Where the C API reads only contiguous NCL or NLC (the calls with states, seq_idx, or
the decode update), a tensor in another layout (a channel slice, a channel-last
initial state) is copied to the nearer one first; the plain call (no states, no
seq_idx) takes any strides in place.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _core, _lib, ops
from . import _torch as T

_ACTIVATIONS = {None: _lib.ACT_NONE, "silu": _lib.ACT_SILU, "swish": _lib.ACT_SILU}
_ACT_NAMES = {_lib.ACT_NONE: None, _lib.ACT_SILU: "silu"}


def _weight_2d(weight, dim):
    """causal-conv1d's (dim, width) weight (a (dim, 1, width) one is taken too)."""
    if weight.dim() == 3 and weight.shape[1] == 1:
        weight = weight.squeeze(1)
    _core.check_weight(tuple(weight.shape), weight.is_contiguous(), dim, forms="(dim, width)")
    return weight


def _check_call(x, weight, bias, extra=()):
    """The checks every causal call shares; returns (B, C, L, width)."""
    _core.check_3d(tuple(x.shape), "x", "(batch, dim, seqlen)")
    T.same_device(x.device, (("weight", weight), ("bias", bias)) + tuple(extra))
    b, c, length = x.shape
    k = _core.check_weight(tuple(weight.shape), weight.is_contiguous(), c,
                           forms="(dim, width)")
    if bias is not None:
        _core.check_bias(tuple(bias.shape), bias.is_contiguous(), c)
    _core.check_weight_dtype(T.dtype_code(x, "x"), T.dtype_code(weight, "weight"),
                             None if bias is None else T.dtype_code(bias, "bias"))
    return b, c, length, k


def _states(t, name, shape, x):
    """A (count, dim, S) state tensor of x's dtype, contiguous (copied if not)."""
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"dwconv: {name} must have shape {tuple(shape)} (batch, dim, "
                         f"width - 1), got {tuple(t.shape)}")
    if t.dtype != x.dtype:
        raise TypeError(f"dwconv: {name} is {t.dtype}, x is {x.dtype}: they must match")
    return t.contiguous()


def _desc_entry(key, x, weight, k, act, nlc):
    entry = _core.specs.get(key)
    if entry is None:
        b, c, length = x.shape
        desc = _core.new_desc(b, c, length, k, T.dtype_code(x, "x"),
                              T.dtype_code(weight, "weight"), act=act, nlc=nlc,
                              padding=_lib.PADDING_CAUSAL)
        entry = _core.DescEntry(desc, T.device(x.device).ctx)
        entry.nlc = nlc
        entry.out_shape = (b, c, length)
        entry.out_strides = _core.layout_strides(entry.out_shape, nlc)
        _core.remember(key, entry)
    return entry


def _call(dev, fn, *args):
    ctx = T.device(dev).ctx
    with ctx.lock:
        ctx.follow_stream()
        st = fn(ctx.handle, *args)
    if st:
        _lib.raise_status(st)


# ---- with states: dwconv_causal_forward / dwconv_causal_backward ------------------------
def _states_forward(x, weight, bias, initial_states, want_final, act):
    b, c, length, k = _check_call(x, weight, bias, (("initial_states", initial_states),))
    nlc = T.layout_of(x)
    entry = _desc_entry(("causal", x.device, x.dtype, weight.dtype, tuple(x.shape), k, act,
                         nlc), x, weight, k, act, nlc)
    y = T.empty(entry.out_shape, entry.out_strides, x.dtype, x.device)
    final = x.new_empty((b, c, k - 1)) if want_final else x.new_empty(0)
    _call(x.device, _lib._lib.dwconv_causal_forward, entry.ref, x.data_ptr(), weight.data_ptr(),
          T.ptr(bias), T.ptr(initial_states), final.data_ptr() if want_final else None,
          y.data_ptr())
    return y, final


@torch.library.custom_op("dwconv::causal_conv1d_states", mutates_args=())
def causal_states_op(x: Tensor, weight: Tensor, bias: Optional[Tensor],
                     initial_states: Optional[Tensor], want_final: bool,
                     activation: int) -> Tuple[Tensor, Tensor]:
    """(y, final_states) of a chunk that continues initial_states (None: zeros). x is
    contiguous NCL or NLC; final_states is empty unless want_final."""
    return _states_forward(x, weight, bias, initial_states, want_final, activation)


@causal_states_op.register_fake
def _states_fake(x, weight, bias, initial_states, want_final, activation):
    shape = tuple(x.shape)
    y = x.new_empty_strided(shape, _core.layout_strides(shape, T.layout_of(x)))
    final = x.new_empty((shape[0], shape[1], weight.shape[-1] - 1)) if want_final \
        else x.new_empty(0)
    return y, final


@torch.library.custom_op("dwconv::causal_conv1d_states_backward", mutates_args=())
def causal_states_backward_op(dy: Tensor, dfinal: Optional[Tensor], x: Tensor, weight: Tensor,
                              bias: Optional[Tensor], initial_states: Optional[Tensor],
                              activation: int, need_dx: bool, need_dweight: bool,
                              need_dbias: bool, need_dinitial: bool
                              ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias, dinitial_states) through dwconv_causal_backward; an unwanted
    one is an empty tensor."""
    b, c, length = x.shape
    k = weight.shape[-1]
    nlc = T.layout_of(x)
    if dy.dtype != x.dtype:
        raise TypeError(f"dwconv: the output's gradient is {dy.dtype}, x is {x.dtype}")
    dy = T.in_layout(dy, nlc)
    dfinal = None if dfinal is None else _states(dfinal, "the final states' gradient",
                                                 (b, c, k - 1), x)
    entry = _desc_entry(("causal", x.device, x.dtype, weight.dtype, tuple(x.shape), k,
                         activation, nlc), x, weight, k, activation, nlc)
    empty = x.new_empty(0)
    dx = T.empty(entry.out_shape, entry.out_strides, x.dtype, x.device) if need_dx else empty
    dweight = torch.empty_like(weight, memory_format=torch.contiguous_format) \
        if need_dweight else empty
    need_dbias = need_dbias and bias is not None
    dbias = torch.empty_like(bias, memory_format=torch.contiguous_format) \
        if need_dbias else empty
    dinit = x.new_empty((b, c, k - 1)) if need_dinitial else empty
    _call(x.device, _lib._lib.dwconv_causal_backward, entry.ref, x.data_ptr(),
          weight.data_ptr(), T.ptr(bias), T.ptr(initial_states), dy.data_ptr(), T.ptr(dfinal),
          dx.data_ptr() if need_dx else None, dweight.data_ptr() if need_dweight else None,
          dbias.data_ptr() if need_dbias else None, dinit.data_ptr() if need_dinitial else None)
    return dx, dweight, dbias, dinit


@causal_states_backward_op.register_fake
def _states_backward_fake(dy, dfinal, x, weight, bias, initial_states, activation, need_dx,
                          need_dweight, need_dbias, need_dinitial):
    shape = tuple(x.shape)
    empty = x.new_empty(0)
    return (x.new_empty_strided(shape, _core.layout_strides(shape, T.layout_of(x)))
            if need_dx else empty,
            torch.empty_like(weight, memory_format=torch.contiguous_format)
            if need_dweight else empty,
            torch.empty_like(bias, memory_format=torch.contiguous_format)
            if need_dbias and bias is not None else empty,
            x.new_empty((shape[0], shape[1], weight.shape[-1] - 1)) if need_dinitial else empty)


def _states_setup(ctx, inputs, output):
    x, weight, bias, initial_states, want_final, activation = inputs
    ctx.save_for_backward(x, weight, bias, initial_states)
    ctx.activation, ctx.want_final = activation, want_final


def _states_grad(ctx, dy, dfinal):
    x, weight, bias, initial_states = ctx.saved_tensors
    need = ctx.needs_input_grad
    need_dinitial = need[3] and initial_states is not None
    if not (need[0] or need[1] or (need[2] and bias is not None) or need_dinitial):
        return (None,) * 6
    if not ctx.want_final or dfinal is None or dfinal.numel() == 0:
        dfinal = None
    dx, dweight, dbias, dinit = causal_states_backward_op(
        dy, dfinal, x, weight, bias, initial_states, ctx.activation, need[0], need[1], need[2],
        need_dinitial)
    return (dx if need[0] else None, dweight if need[1] else None,
            dbias if need[2] and bias is not None else None,
            dinit if need_dinitial else None, None, None)


causal_states_op.register_autograd(_states_grad, setup_context=_states_setup)


# ---- packed sequences by seq_idx: dwconv_causal_varlen_forward ---------------------------
@torch.library.custom_op("dwconv::causal_conv1d_seq_idx", mutates_args=())
def causal_seq_idx_op(x: Tensor, weight: Tensor, bias: Optional[Tensor], seq_idx: Tensor,
                      activation: int) -> Tensor:
    """The causal convolution of packed sequences: a tap reads x only where seq_idx
    equals the output position's. x is contiguous NCL or NLC."""
    b, c, length, k = _check_call(x, weight, bias)
    seq_idx = T.int32_index(seq_idx, "seq_idx", (b, length), x.device)
    nlc = T.layout_of(x)
    entry = _desc_entry(("causal", x.device, x.dtype, weight.dtype, tuple(x.shape), k,
                         activation, nlc), x, weight, k, activation, nlc)
    y = T.empty(entry.out_shape, entry.out_strides, x.dtype, x.device)
    _call(x.device, _lib._lib.dwconv_causal_varlen_forward, entry.ref, x.data_ptr(),
          weight.data_ptr(), T.ptr(bias), None, seq_idx.data_ptr(), 0, None, None, y.data_ptr())
    return y


@causal_seq_idx_op.register_fake
def _seq_idx_fake(x, weight, bias, seq_idx, activation):
    shape = tuple(x.shape)
    return x.new_empty_strided(shape, _core.layout_strides(shape, T.layout_of(x)))


def _seq_idx_grad(ctx, dy):
    raise NotImplementedError(
        "dwconv: causal_conv1d_fn with seq_idx has no backward: the C library has no "
        "gradient for packed sequences yet (dwconv_causal_backward takes whole rows)")


causal_seq_idx_op.register_autograd(_seq_idx_grad, setup_context=lambda ctx, i, o: None)


# ---- decode: dwconv_causal_update ----------------------------------------------------------
def _update(x, conv_state, weight, bias, act, cache_seqlens, conv_state_indices):
    """The decode step; x is (B, C, T), contiguous NCL or NLC. Writes conv_state."""
    key = ("update", x.device, x.dtype, x.shape, x.stride(), weight.dtype, weight.shape,
           weight.is_contiguous(), act,
           None if bias is None else (bias.device, bias.dtype, bias.shape, bias.is_contiguous()),
           conv_state.device, conv_state.dtype, conv_state.shape, conv_state.is_contiguous(),
           None if cache_seqlens is None else
           (cache_seqlens.device, cache_seqlens.dtype, cache_seqlens.shape),
           None if conv_state_indices is None else
           (conv_state_indices.device, conv_state_indices.dtype, conv_state_indices.shape))
    entry = _core.specs.get(key)
    if entry is None:
        entry = _core.remember(key, _new_update_entry(x, conv_state, weight, bias, act,
                                                      cache_seqlens, conv_state_indices))
    y = torch.empty_strided(entry.out_shape, entry.out_strides, dtype=x.dtype, device=x.device)
    ctx = entry.ctx
    with ctx.lock:
        ctx.follow_stream()
        st = _lib._lib.dwconv_causal_update(
            ctx.handle, entry.ref, x.data_ptr(), conv_state.data_ptr(), conv_state.shape[0],
            conv_state.shape[2], weight.data_ptr(), None if bias is None else bias.data_ptr(),
            None if cache_seqlens is None else cache_seqlens.data_ptr(),
            None if conv_state_indices is None else conv_state_indices.data_ptr(), y.data_ptr())
    if st:
        _lib.raise_status(st)
    return y


def _new_update_entry(x, conv_state, weight, bias, act, cache_seqlens, conv_state_indices):
    b, c, length, k = _check_call(x, weight, bias, (
        ("conv_state", conv_state), ("cache_seqlens", cache_seqlens),
        ("conv_state_indices", conv_state_indices)))
    if conv_state.dim() != 3 or conv_state.shape[1] != c:
        raise ValueError(f"dwconv: conv_state must be (batch, dim={c}, state_len), got shape "
                         f"{tuple(conv_state.shape)}")
    if conv_state.dtype != x.dtype:
        raise TypeError(f"dwconv: conv_state is {conv_state.dtype}, x is {x.dtype}: they must "
                        "match")
    if not conv_state.is_contiguous():
        raise ValueError("dwconv: conv_state must be contiguous (batch, dim, state_len): it "
                         "is updated in place, so it cannot be copied")
    if conv_state.shape[2] < k - 1:
        raise ValueError(f"dwconv: conv_state has state_len {conv_state.shape[2]}, shorter "
                         f"than width - 1 = {k - 1}")
    T.int32_index(cache_seqlens, "cache_seqlens", (b,), x.device)
    T.int32_index(conv_state_indices, "conv_state_indices", (b,), x.device)
    if conv_state_indices is None and conv_state.shape[0] < b:
        raise ValueError(f"dwconv: conv_state holds {conv_state.shape[0]} states for a batch "
                         f"of {b} (pass conv_state_indices to pick slots)")
    nlc = T.layout_of(x)
    desc = _core.new_desc(b, c, length, k, T.dtype_code(x, "x"), T.dtype_code(weight, "weight"),
                          act=act, nlc=nlc, padding=_lib.PADDING_CAUSAL)
    entry = _core.DescEntry(desc, T.device(x.device).ctx)
    entry.nlc, entry.out_shape = nlc, (b, c, length)
    entry.out_strides = _core.layout_strides(entry.out_shape, nlc)
    return entry


@torch.library.custom_op("dwconv::causal_conv1d_update", mutates_args=("conv_state",))
def causal_update_op(x: Tensor, conv_state: Tensor, weight: Tensor, bias: Optional[Tensor],
                     activation: int, cache_seqlens: Optional[Tensor],
                     conv_state_indices: Optional[Tensor]) -> Tensor:
    """The decode step on (B, C, T) x (contiguous NCL or NLC); updates conv_state."""
    return _update(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices)


@causal_update_op.register_fake
def _update_fake(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices):
    shape = tuple(x.shape)
    return x.new_empty_strided(shape, _core.layout_strides(shape, T.layout_of(x)))


# ---- the public functions -------------------------------------------------------------------
_grad_enabled = torch.is_grad_enabled
_compiling = ops._compiling


def _needs_grad(*tensors):
    return _grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def causal_conv1d_fn(x, weight, bias=None, seq_idx=None, initial_states=None,
                     return_final_states=False, final_states_out=None, activation=None):
    """causal-conv1d's causal_conv1d_fn: out = act(causal depthwise conv of x).

    x: (batch, dim, seqlen); weight: (dim, width); bias: (dim,) or None; seq_idx:
    (batch, seqlen) int32, taps read only positions of the same sequence id;
    initial_states: (batch, dim, width - 1), the inputs before x (None: zeros);
    return_final_states: also return the last width - 1 inputs of each row (x after
    initial_states), written into final_states_out when given; activation: None,
    "silu" or "swish". Returns out (batch, dim, seqlen) in x's layout, or
    (out, final_states). Differentiable in x, weight, bias and initial_states (not
    with seq_idx)."""
    if not isinstance(x, Tensor):
        from . import _interop
        args, back = _interop.to_torch((x, weight, bias, seq_idx, initial_states,
                                        final_states_out))
        result = causal_conv1d_fn(*args[:5], return_final_states, args[5], activation)
        if isinstance(result, tuple):
            return back(result[0]), final_states_out if final_states_out is not None \
                else back(result[1])
        return back(result)
    act = _core.activation_code(activation, _ACTIVATIONS)
    weight = _weight_2d(weight, x.shape[1] if x.dim() == 3 else -1)
    if seq_idx is not None and (initial_states is not None or return_final_states):
        raise ValueError("dwconv: causal_conv1d_fn takes seq_idx or states "
                         "(initial_states, return_final_states), not both (as causal-conv1d)")
    if final_states_out is not None and not return_final_states:
        raise ValueError("dwconv: final_states_out is given but return_final_states is False")
    if seq_idx is None and initial_states is None and not return_final_states:
        return ops.conv1d(x, weight, bias, padding="causal", activation=_ACT_NAMES[act])
    _core.check_3d(tuple(x.shape), "x", "(batch, dim, seqlen)")
    x = T.in_layout(x, T.layout_of(x))
    if seq_idx is not None:
        if _needs_grad(x, weight, bias):
            raise NotImplementedError(
                "dwconv: causal_conv1d_fn with seq_idx has no backward yet (the C library "
                "has no gradient for packed sequences); call it under torch.no_grad()")
        return causal_seq_idx_op(x, weight, bias, seq_idx, act)
    if initial_states is not None:
        initial_states = _states(initial_states, "initial_states",
                                 (x.shape[0], x.shape[1], weight.shape[-1] - 1), x)
    if _compiling() or _needs_grad(x, weight, bias, initial_states):
        y, final = causal_states_op(x, weight, bias, initial_states, return_final_states, act)
    else:
        y, final = _states_forward(x, weight, bias, initial_states, return_final_states, act)
    if not return_final_states:
        return y
    if final_states_out is not None:
        final = final_states_out.copy_(final)
    return y, final


def causal_conv1d_update(x, conv_state, weight, bias=None, activation=None, cache_seqlens=None,
                         conv_state_indices=None):
    """causal-conv1d's causal_conv1d_update: one decode step.

    x: (batch, dim) or (batch, dim, seqlen) new tokens; conv_state: (batch, dim,
    state_len), or a pool indexed by conv_state_indices (batch,) int32 (a negative
    index skips its row: no state change, its output left unwritten), updated in
    place; weight (dim, width); bias (dim,); activation None/"silu"/"swish";
    cache_seqlens: (batch,) int32: None keeps each state as a shift register (newest
    last), else a circular buffer where the tokens go at cache_seqlens % state_len.
    Returns out, shaped like x."""
    if not isinstance(x, Tensor):
        from . import _interop
        args, back = _interop.to_torch((x, conv_state, weight, bias, cache_seqlens,
                                        conv_state_indices))
        return back(causal_conv1d_update(args[0], args[1], args[2], args[3], activation,
                                         args[4], args[5]))
    act = _core.activation_code(activation, _ACTIVATIONS)
    if weight.dim() != 2:
        weight = _weight_2d(weight, x.shape[1])
    squeeze = x.dim() == 2
    if squeeze:
        x = x.unsqueeze(-1)
    elif x.dim() != 3:
        raise ValueError("dwconv: x must be (batch, dim) or (batch, dim, seqlen), got shape "
                         f"{tuple(x.shape)}")
    x = T.in_layout(x, T.layout_of(x))
    if _compiling():
        y = causal_update_op(x, conv_state, weight, bias, act, cache_seqlens, conv_state_indices)
    else:
        y = _update(x, conv_state, weight, bias, act, cache_seqlens, conv_state_indices)
    return y.squeeze(-1) if squeeze else y
