"""What every front end (torch, NumPy, DLPack) shares: one dwconv context per device,
plans cached per shape and options, the options' meanings (F.conv1d's), and the checks
that turn a wrong argument into a clear Python exception before any C call.

Nothing here knows torch or NumPy: tensors arrive as shapes, element strides, dtype
codes and pointers.
"""
import collections
import ctypes
import threading

from . import _lib
from ._lib import Desc, check

# Plans are host memory only (a validated descriptor); this bounds the cache of a
# process that sees many shapes (e.g. a varying sequence length).
MAX_PLANS = 1024

PADDING_MODES = {"zeros": _lib.PAD_ZEROS, "reflect": _lib.PAD_REFLECT,
                 "replicate": _lib.PAD_REPLICATE, "circular": _lib.PAD_CIRCULAR}
ACTIVATIONS = {None: _lib.ACT_NONE, "none": _lib.ACT_NONE, "relu": _lib.ACT_RELU,
               "silu": _lib.ACT_SILU, "swish": _lib.ACT_SILU}
DTYPE_NAMES = {_lib.F32: "float32", _lib.F16: "float16", _lib.BF16: "bfloat16"}


class Context:
    """A dwconv context on one device, its current stream, and its plans. The library
    wants a context used by one thread at a time: callers hold ``lock`` around
    follow_stream (or use_stream) and the call that follows it; ``stream`` (the stream
    last set) is read and written only under it."""
    __slots__ = ("handle", "backend", "device", "lock", "stream", "current_stream")

    def __init__(self, backend, device):
        lib = _lib.load()
        handle = ctypes.c_void_p()
        check(lib.dwconv_context_create(ctypes.byref(handle), backend, device))
        self.handle = handle.value
        self.backend, self.device = backend, device
        self.lock = threading.Lock()
        self.stream = 0  # the legacy default stream, as a new context has
        # On a GPU, the front end that owns the streams (torch) sets this: a
        # no-argument callable giving its current stream on this device. None on the cpu.
        self.current_stream = None

    def use_stream(self, stream):
        """Orders the next calls on ``stream`` (a cudaStream_t/hipStream_t as an int);
        the C call only when it differs from the stream last set."""
        if stream != self.stream:
            check(_lib._lib.dwconv_context_set_stream(self.handle, stream))
            self.stream = stream

    def follow_stream(self):
        """With ``lock`` held, right before a call: orders it on the front end's
        current stream (nothing on the cpu). conv1d's eager path inlines this."""
        if self.current_stream is not None:
            self.use_stream(self.current_stream())



# Plans and descriptors by everything that decides their validity (devices, dtypes,
# shapes, strides, options): a hit skips every check, since the same key passed them.
# Read without a lock (a dict lookup is atomic); an evicted plan is destroyed when its
# last user drops it.
specs = collections.OrderedDict()


def remember(key, entry):
    specs[key] = entry
    while len(specs) > MAX_PLANS:
        try:
            specs.popitem(last=False)
        except KeyError:
            break
    return entry


_contexts = {}
_contexts_lock = threading.Lock()


def context(backend, device):
    """The cached context of (backend, device), created on first use."""
    ctx = _contexts.get((backend, device))
    if ctx is None:
        with _contexts_lock:
            ctx = _contexts.get((backend, device))
            if ctx is None:
                ctx = _contexts[(backend, device)] = Context(backend, device)
    return ctx


class Plan:
    """A dwconv_plan and what its callers need besides: the output's shape and strides,
    and whether they are x's own (then an allocation like x's is the output's)."""
    __slots__ = ("handle", "ctx", "out_shape", "out_strides", "same_as_x")

    def __init__(self, handle, ctx):
        self.handle, self.ctx = handle, ctx
        self.same_as_x = False

    def __del__(self):
        try:
            if self.handle:
                _lib._lib.dwconv_plan_destroy(self.handle)
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class DescEntry:
    """A descriptor of the desc-only operations (the causal ones), cached like a plan."""
    __slots__ = ("desc", "ref", "ctx", "out_shape", "out_strides", "nlc")

    def __init__(self, desc, ctx):
        self.desc, self.ctx = desc, ctx
        self.ref = ctypes.byref(desc)


# ---- options --------------------------------------------------------------------------
def _one_int(value, name):
    """An int, or a 1-tuple of one as nn.Conv1d stores stride and dilation."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"dwconv: {name} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"dwconv: {name} must be >= 1, got {value}")
    return value


def resolve_options(kernel_size, stride, padding, dilation, padding_mode, activation):
    """F.conv1d's arguments -> (stride, pad_left, pad_right, dilation, mode, act) codes.
    padding: an int, a 1-tuple, a (left, right) pair, "valid", "same" or "causal"."""
    stride = _one_int(stride, "stride")
    dilation = _one_int(dilation, "dilation")
    span = dilation * (kernel_size - 1)
    if isinstance(padding, str):
        if padding == "valid":
            left = right = 0
        elif padding == "same":
            if stride != 1:
                raise ValueError("dwconv: padding='same' is not supported for strided "
                                 f"convolutions (stride {stride}), as in PyTorch")
            left, right = span // 2, span - span // 2
        elif padding == "causal":
            left, right = span, 0
        else:
            raise ValueError(f"dwconv: padding {padding!r}: use an int, a (left, right) pair, "
                             "'valid', 'same' or 'causal'")
    else:
        pads = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,)
        if len(pads) == 1:
            pads = pads * 2
        if len(pads) != 2 or any(isinstance(p, bool) or not isinstance(p, int) for p in pads):
            raise TypeError(f"dwconv: padding {padding!r}: use an int, a (left, right) pair of "
                            "ints, 'valid', 'same' or 'causal'")
        left, right = pads
        if left < 0 or right < 0:
            raise ValueError(f"dwconv: padding {padding!r} is negative")
    mode = PADDING_MODES.get(padding_mode)
    if mode is None:
        raise ValueError(f"dwconv: padding_mode {padding_mode!r}: use one of "
                         f"{', '.join(PADDING_MODES)}")
    act = activation_code(activation)
    return stride, left, right, dilation, mode, act


def activation_code(activation, allowed=ACTIVATIONS):
    try:
        return allowed[activation]
    except (KeyError, TypeError):
        names = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"dwconv: activation {activation!r}: use one of {names}") from None


# ---- checks on shapes (framework-neutral) ----------------------------------------------
def dense_strides(shape, strides, name):
    """Element strides with those of size-1 dimensions made natural (they address
    nothing; frameworks leave any value there); a zero or negative stride on a real
    dimension is refused by name."""
    out = list(strides)
    natural = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] == 1:
            out[d] = natural
        elif out[d] < 1:
            raise ValueError(f"dwconv: {name} has stride {strides[d]} in dimension {d} "
                             f"(shape {tuple(shape)}, strides {tuple(strides)}): an expanded "
                             "or reversed view; pass a tensor with positive strides "
                             "(e.g. .contiguous())")
        natural *= max(shape[d], 1)
    return tuple(out)


def is_contiguous(shape, strides):
    natural = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1 and strides[d] != natural:
            return False
        natural *= shape[d]
    return True


def channel_last(strides, shape):
    """A (B, C, L) tensor whose channels are adjacent: the NLC layout (a (B, L, C)
    tensor transposed, or a channel slice of one)."""
    return shape[1] > 1 and strides[1] == 1 and strides[2] != 1


def layout_strides(shape, nlc):
    """Contiguous strides of (B, C, n) in NCL or NLC."""
    b, c, n = shape
    return (n * c, 1, c) if nlc else (c * n, n, 1)


def check_3d(shape, name, what="(batch, channels, length)"):
    if len(shape) != 3:
        raise ValueError(f"dwconv: {name} must be 3-D {what}, got shape {tuple(shape)}")


def check_weight(wshape, wcontig, channels, name="weight", forms="(C, 1, K) or (C, K)"):
    """The kernel size of a (C, 1, K) or (C, K) weight; refuses anything else."""
    if len(wshape) == 3 and wshape[1] == 1:
        k = wshape[2]
    elif len(wshape) == 2:
        k = wshape[1]
    else:
        raise ValueError(f"dwconv: {name} must be {forms}, got shape {tuple(wshape)}")
    if wshape[0] != channels:
        raise ValueError(f"dwconv: {name} has {wshape[0]} channels, x has {channels}")
    if k < 1:
        raise ValueError(f"dwconv: {name} has kernel size {k}")
    if not wcontig:
        raise ValueError(f"dwconv: {name} must be contiguous (call .contiguous() on it)")
    return k


def check_bias(bshape, bcontig, channels, name="bias"):
    if tuple(bshape) != (channels,):
        raise ValueError(f"dwconv: {name} must have shape ({channels},), got {tuple(bshape)}")
    if not bcontig:
        raise ValueError(f"dwconv: {name} must be contiguous (call .contiguous() on it)")


def check_weight_dtype(dtype, wdtype, bdtype):
    if wdtype != _lib.F32 and wdtype != dtype:
        raise TypeError(f"dwconv: weight is {DTYPE_NAMES[wdtype]}, x is {DTYPE_NAMES[dtype]}: "
                        "the weight is float32 or the dtype of x")
    if bdtype is not None and bdtype != wdtype:
        raise TypeError(f"dwconv: bias is {DTYPE_NAMES[bdtype]}, weight is "
                        f"{DTYPE_NAMES[wdtype]}: they must match")


def new_desc(b, c, length, k, dtype, wdtype, stride=1, pad_left=0, pad_right=0, dilation=1,
             mode=0, act=0, nlc=False, padding=_lib.PADDING_EXPLICIT):
    lib = _lib.load()
    d = Desc()
    check(lib.dwconv_desc_init(ctypes.byref(d), b, c, length, k))
    d.stride, d.dilation, d.pad_left, d.pad_right = stride, dilation, pad_left, pad_right
    d.padding, d.padding_mode, d.activation = padding, mode, act
    d.layout = _lib.NLC if nlc else _lib.NCL
    d.dtype, d.weight_dtype = dtype, wdtype
    return d


def output_length(desc):
    out = ctypes.c_int64()
    check(_lib._lib.dwconv_desc_resolve(ctypes.byref(desc), None, None, ctypes.byref(out)))
    return out.value


def conv_plan(ctx, desc, x_strides, y_strides=None, dy_strides=None, dx_strides=None,
              grad_dtype=None):
    """A plan for desc on ctx with the tensors' element strides set."""
    lib = _lib._lib
    handle = ctypes.c_void_p()
    check(lib.dwconv_plan_create(ctypes.byref(handle), ctx.handle, ctypes.byref(desc)))
    plan = Plan(handle.value, ctx)
    try:
        for tensor, strides in ((_lib.TENSOR_X, x_strides), (_lib.TENSOR_Y, y_strides),
                                (_lib.TENSOR_DY, dy_strides), (_lib.TENSOR_DX, dx_strides)):
            if strides is not None:
                check(lib.dwconv_plan_set_strides(plan.handle, tensor, *strides))
        if grad_dtype is not None:
            check(lib.dwconv_plan_set_grad_dtype(plan.handle, grad_dtype))
    except BaseException:
        del plan  # destroys it
        raise
    return plan


# ---- conv1d: the forward and backward plans (framework-neutral builders) ---------------
def forward_plan(ctx, x, weight, bias, out, opts):
    """Checks a conv1d call and returns its Plan (out_shape, out_strides set). Each
    tensor is (shape, element strides, dtype code); bias and out may be None. The
    output follows x's layout: channel-last x gives a channel-last y."""
    xshape, xstrides, dtype = x
    check_3d(xshape, "x")
    b, c, length = xshape
    k = check_weight(weight[0], is_contiguous(weight[0], weight[1]), c)
    if bias is not None:
        check_bias(bias[0], is_contiguous(bias[0], bias[1]), c)
    check_weight_dtype(dtype, weight[2], None if bias is None else bias[2])
    xs = dense_strides(xshape, xstrides, "x")
    stride, left, right, dilation, mode, act = opts
    desc = new_desc(b, c, length, k, dtype, weight[2], stride, left, right, dilation, mode, act,
                    nlc=channel_last(xs, xshape))
    out_shape = (b, c, output_length(desc))
    if out is None:
        ys = layout_strides(out_shape, channel_last(xs, xshape))
    else:
        if tuple(out[0]) != out_shape:
            raise ValueError(f"dwconv: out has shape {tuple(out[0])}, the output is {out_shape}")
        if out[2] != dtype:
            raise TypeError(f"dwconv: out is {DTYPE_NAMES[out[2]]}, x is {DTYPE_NAMES[dtype]}")
        ys = dense_strides(out_shape, out[1], "out")
    plan = conv_plan(ctx, desc, xs, ys)
    plan.out_shape, plan.out_strides = out_shape, ys
    # x's exact strides (not xs) are the output's: an empty_like(x) has them
    plan.same_as_x = out is None and out_shape == tuple(xshape) and ys == tuple(xstrides)
    return plan


def backward_plan(ctx, x, weight, bias, dy, opts):
    """The Plan of conv1d's backward for x, weight and bias (shape, strides, dtype; bias
    may be None) and dy (shape, strides), checked as the forward checks them;
    out_shape/out_strides describe dx (in x's layout)."""
    xshape, xstrides, dtype = x
    check_3d(xshape, "x")
    b, c, length = xshape
    k = check_weight(weight[0], is_contiguous(weight[0], weight[1]), c)
    if bias is not None:
        check_bias(bias[0], is_contiguous(bias[0], bias[1]), c)
    check_weight_dtype(dtype, weight[2], None if bias is None else bias[2])
    xs = dense_strides(xshape, xstrides, "x")
    nlc = channel_last(xs, xshape)
    stride, left, right, dilation, mode, act = opts
    desc = new_desc(b, c, length, k, dtype, weight[2], stride, left, right, dilation, mode, act,
                    nlc=nlc)
    out_shape = (b, c, output_length(desc))
    if tuple(dy[0]) != out_shape:
        raise ValueError(f"dwconv: the output's gradient has shape {tuple(dy[0])}, the "
                         f"output {out_shape}")
    dys = dense_strides(out_shape, dy[1], "the output's gradient")
    dxs = layout_strides(xshape, nlc)
    plan = conv_plan(ctx, desc, xs, dy_strides=dys, dx_strides=dxs)
    plan.out_shape, plan.out_strides = xshape, dxs
    return plan
