"""Torch tensors to dwconv: dtypes, devices and their contexts, the current stream.

A tensor's device picks the backend (cpu, or cuda:N as dwconv's CUDA backend, or its
HIP backend under a ROCm build of torch) and so the cached context of that device;
GPU calls are ordered on torch's current stream of the tensor's device.
"""
import functools

import torch

from . import _core, _lib

DTYPES = {torch.float32: _lib.F32, torch.float16: _lib.F16, torch.bfloat16: _lib.BF16}
TORCH_DTYPES = {code: dtype for dtype, code in DTYPES.items()}
_GPU_BACKEND = _lib.BACKEND_HIP if getattr(torch.version, "hip", None) else _lib.BACKEND_CUDA

try:  # the raw cudaStream_t of the current stream: what inductor calls, ~10x cheaper
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # a torch built without CUDA
    _raw_stream = None


def _stream_getter(index):
    """() -> the current stream of torch on cuda:index, as an int (a C-level partial:
    no Python frame per call)."""
    if _raw_stream is not None:
        return functools.partial(_raw_stream, index)
    return lambda: torch.cuda.current_stream(index).cuda_stream


class Device:
    """What a call on one torch device needs: its dwconv context, whose
    current_stream gives torch's current stream there (None on the cpu)."""
    __slots__ = ("ctx", "index")

    def __init__(self, device):
        if device.type == "cpu":
            self.ctx, self.index = _core.context(_lib.BACKEND_CPU, 0), 0
        elif device.type == "cuda":
            self.index = device.index if device.index is not None else \
                torch.cuda.current_device()
            self.ctx = _core.context(_GPU_BACKEND, self.index)
            # set before this Device is returned (and so before any call on the context);
            # every Device of the index sets an equal getter
            self.ctx.current_stream = _stream_getter(self.index)
        else:
            raise ValueError(f"dwconv: tensors on {device} are not supported "
                             "(cpu and cuda devices are)")

    def use_stream(self):
        """Call with ctx.lock held, right before the C call."""
        self.ctx.follow_stream()


_devices = {}


def device(dev):
    d = _devices.get(dev)
    if d is None:
        d = _devices[dev] = Device(dev)
    return d


def dtype_code(t, name):
    code = DTYPES.get(t.dtype)
    if code is None:
        raise TypeError(f"dwconv: {name} is {t.dtype}; dwconv takes float32, float16 and "
                        "bfloat16")
    return code


def meta(t, name):
    """(shape, element strides, dtype code) of a tensor."""
    return tuple(t.shape), tuple(t.stride()), dtype_code(t, name)


def same_device(dev, tensors):
    """Refuses a tensor on another device than x's, by name."""
    for name, t in tensors:
        if t is not None and t.device != dev:
            raise ValueError(f"dwconv: {name} is on {t.device}, x is on {dev}: every tensor "
                             "of a call must be on one device")


def int32_index(t, name, shape, dev):
    """An int32 index tensor of the given shape on x's device (contiguous)."""
    if t is None:
        return None
    if t.dtype != torch.int32:
        raise TypeError(f"dwconv: {name} must be int32, got {t.dtype}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"dwconv: {name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    if t.device != dev:
        raise ValueError(f"dwconv: {name} is on {t.device}, x is on {dev}")
    if not t.is_contiguous():
        raise ValueError(f"dwconv: {name} must be contiguous (call .contiguous() on it)")
    return t


def ptr(t):
    return t.data_ptr() if t is not None else None


def empty(shape, strides, dtype, dev):
    return torch.empty_strided(shape, strides, dtype=dtype, device=dev)


def in_layout(t, nlc):
    """t itself when contiguous in NCL (nlc False) or NLC (True), else a copy that is:
    for the operations whose C API takes only those two layouts."""
    if nlc:
        return t.transpose(1, 2).contiguous().transpose(1, 2)  # t itself when it is
    return t.contiguous()


def layout_of(t):
    """True when t is channel-last (NLC-like), from its strides."""
    return _core.channel_last(t.stride(), t.shape)


def check_status(status):
    if status:
        _lib.raise_status(status)
