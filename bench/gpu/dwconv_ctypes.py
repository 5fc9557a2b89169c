"""What the GPU benchmarks share: dwconv's public C API through ctypes (contexts, plans
with strides, the descriptor), CUDA-event timing, and PyTorch's version of the same
convolution. Loaded by bench_gpu.py and sweep.py from a dwconv build tree."""
import ctypes
import os
import statistics
import subprocess

import torch
import torch.nn.functional as F

F32, F16, BF16 = 0, 1, 2
NCL, NLC = 0, 1
EXPLICIT, SAME, CAUSAL = 0, 1, 2
ZEROS, REFLECT, REPLICATE, CIRCULAR = 0, 1, 2, 3
ACT_NONE, ACT_RELU, ACT_SILU = 0, 1, 2
CPU, CUDA = 1, 2
TENSOR_X, TENSOR_Y = 0, 1
TORCH_DTYPE = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16}
DTYPE_NAME = {F32: "f32", F16: "f16", BF16: "bf16"}
MODE_NAME = {ZEROS: "zeros", REFLECT: "reflect", REPLICATE: "replicate", CIRCULAR: "circular"}
ACT_NAME = {ACT_NONE: "none", ACT_RELU: "relu", ACT_SILU: "silu"}


class Desc(ctypes.Structure):
    """dwconv_desc, frozen at its 0.1 layout."""
    _fields_ = [(n, ctypes.c_int64) for n in (
        "batch", "channels", "length", "kernel_size", "stride", "dilation", "pad_left",
        "pad_right")] + [(n, ctypes.c_int) for n in (
            "padding", "padding_mode", "layout", "dtype", "weight_dtype", "activation")]


def load_library(build):
    """libdwconv of a build tree, its modules found through DWCONV_MODULE_PATH."""
    os.environ.setdefault("DWCONV_MODULE_PATH", os.path.join(build, "src/.libs/dwconv"))
    lib = ctypes.CDLL(os.path.join(build, "src/.libs/libdwconv.so"))
    p, i, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
    sig = {
        "dwconv_desc_init": (i, [ctypes.POINTER(Desc), i64, i64, i64, i64]),
        "dwconv_desc_resolve": (i, [ctypes.POINTER(Desc), p, p, ctypes.POINTER(i64)]),
        "dwconv_context_create": (i, [ctypes.POINTER(p), i, i]),
        "dwconv_context_destroy": (i, [p]),
        "dwconv_context_set_stream": (i, [p, p]),
        "dwconv_forward": (i, [p, ctypes.POINTER(Desc), p, p, p, p]),
        "dwconv_plan_create": (i, [ctypes.POINTER(p), p, ctypes.POINTER(Desc)]),
        "dwconv_plan_destroy": (i, [p]),
        "dwconv_plan_set_strides": (i, [p, i, i64, i64, i64]),
        "dwconv_plan_forward": (i, [p, p, p, p, p]),
        "dwconv_last_error": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def make_desc(lib, B, C, L, K, stride=1, dilation=1, pad=None, padding=EXPLICIT, mode=ZEROS,
              layout=NCL, dtype=F32, act=ACT_NONE):
    """A resolved descriptor and its output length."""
    d = Desc()
    lib.dwconv_desc_init(ctypes.byref(d), B, C, L, K)
    d.stride, d.dilation, d.padding, d.padding_mode = stride, dilation, padding, mode
    if pad is not None:
        d.pad_left, d.pad_right = pad
    d.layout, d.dtype, d.weight_dtype, d.activation = layout, dtype, dtype, act
    out = ctypes.c_int64()
    if lib.dwconv_desc_resolve(ctypes.byref(d), None, None, ctypes.byref(out)) != 0:
        raise ValueError(lib.dwconv_last_error().decode())
    return d, out.value


def pointer(t):
    return t.data_ptr() if t is not None else None


class Dwconv:
    """A dwconv context of one backend, kernel family forced where it applies."""

    def __init__(self, lib, backend, kernel="auto"):
        self.lib = lib
        os.environ["DWCONV_GPU_KERNEL"] = kernel
        self.ctx = ctypes.c_void_p()
        try:
            self.check(lib.dwconv_context_create(ctypes.byref(self.ctx), backend, 0), "context")
        finally:
            del os.environ["DWCONV_GPU_KERNEL"]

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: {self.lib.dwconv_last_error().decode()}")

    def set_stream(self, stream):
        self.check(self.lib.dwconv_context_set_stream(self.ctx, stream), "set_stream")

    def forward(self, desc, x, w, b, y):
        """dwconv_forward: the descriptor validated on every call."""
        self.check(self.lib.dwconv_forward(self.ctx, ctypes.byref(desc), pointer(x), pointer(w),
                                           pointer(b), pointer(y)), "forward")

    def plan(self, desc, x_strides=None, y_strides=None):
        return Plan(self, desc, x_strides, y_strides)


class Plan:
    """A dwconv_plan: the descriptor validated once, strides of x and y in elements."""

    def __init__(self, ctx, desc, x_strides=None, y_strides=None):
        self.ctx, self.lib = ctx, ctx.lib
        self.plan = ctypes.c_void_p()
        ctx.check(self.lib.dwconv_plan_create(ctypes.byref(self.plan), ctx.ctx, ctypes.byref(desc)),
                  "plan")
        for tensor, s in ((TENSOR_X, x_strides), (TENSOR_Y, y_strides)):
            if s is not None:
                ctx.check(self.lib.dwconv_plan_set_strides(self.plan, tensor, *s), "strides")
        self.call = self.lib.dwconv_plan_forward

    def forward(self, x, w, b, y):
        if self.call(self.plan, pointer(x), pointer(w), pointer(b), pointer(y)) != 0:
            raise RuntimeError(f"plan_forward: {self.lib.dwconv_last_error().decode()}")

    def __del__(self):
        if self.plan:
            self.lib.dwconv_plan_destroy(self.plan)


def median_ms(fn, inputs, reps, warmup=3):
    """Median of CUDA-event times of fn(inputs[i % n]) on the current stream. A GPU sleep
    before each start event keeps the device busy while the host enqueues, so host-side
    call overhead never shows up as idle time between the events."""
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for i, (start, stop) in enumerate(events):
        torch.cuda._sleep(200_000)
        start.record()
        fn(inputs[i % len(inputs)])
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def pads(K, stride, dilation, padding, pad):
    span = dilation * (K - 1)
    if padding == CAUSAL:
        return span, 0
    if padding == SAME:
        return span // 2, span - span // 2
    return pad if pad is not None else (0, 0)


def torch_conv(x_ncl, w, b, stride, dilation, left, right, mode, act, L_out):
    """F.conv1d(groups=C) of a (B, C, L) view with dwconv's padding and activation, as a
    PyTorch user writes it: zeros by conv1d's own padding (unequal sides: the larger,
    then a slice, as Mamba's reference does), other modes by F.pad first (what
    nn.Conv1d's padding_mode does)."""
    C = x_ncl.shape[1]
    if mode != ZEROS or (max(left, right) - left) % stride:
        name = {ZEROS: "constant", REFLECT: "reflect", REPLICATE: "replicate",
                CIRCULAR: "circular"}[mode]
        xp = F.pad(x_ncl, (left, right), mode=name)
        y = F.conv1d(xp, w.unsqueeze(1), b, stride, 0, dilation, C)[..., :L_out]
    elif left != right:
        pad = max(left, right)
        y = F.conv1d(x_ncl, w.unsqueeze(1), b, stride, pad, dilation, C)
        start = (pad - left) // stride
        y = y[..., start:start + L_out]
    else:
        y = F.conv1d(x_ncl, w.unsqueeze(1), b, stride, left, dilation, C)
    if act == ACT_SILU:
        y = F.silu(y)
    elif act == ACT_RELU:
        y = F.relu(y)
    return y


def peak_fp32_tflops():
    """2 flops x 128 FP32 lanes x SMs x the maximum SM clock (nvidia-smi)."""
    try:
        mhz = float(subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm",
                                    "--format=csv,noheader,nounits"], capture_output=True,
                                   text=True, check=True).stdout.split()[0])
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        mhz = 1980.0
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return 2 * 128 * sms * mhz * 1e6 / 1e12, mhz
