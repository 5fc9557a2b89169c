#!/usr/bin/env python3
"""The Python binding's cost per call: dwconv.conv1d against the bare C call.

    python3 python/bench/overhead.py [--device cpu|cuda] [--shape B C L] [--k K]
                                     [--dtype f32|f16|bf16] [--reps N] [--json FILE]

Run with the package importable (PYTHONPATH=python) and the library found (a build
tree, make install, or DWCONV_LIBRARY). Four timings, each the median over --reps
rounds of 200 calls, the rounds of all four interleaved so that drift hits them alike:

  c_call    dwconv_plan_forward through ctypes with every argument precomputed and the
            output allocated once: the C call (plus ctypes's own crossing)
  ctypes    a trivial C call (dwconv_version) through ctypes: that crossing alone
  alloc     c_call plus the output's allocation (torch.empty_strided), which any
            binding that returns a new tensor pays
  conv1d    dwconv.conv1d(x, w, padding=K//2) in eager mode without autograd: what a
            user calls (the plan cache, the checks, the stream, the allocation)

binding = conv1d - c_call + ctypes: the time Python and the binding add over the C
function itself (the target: 10 us or less). On the GPU the calls are asynchronous, so
these are host times per call; "gpu_per_call" is the wall time per call of a loop of
conv1d calls ended by one synchronisation, and "kernel" the CUDA-event time of the bare
call: when the host time stays under the kernel time, the binding costs no GPU time.
"""
import argparse
import ctypes
import json
import statistics
import sys
import time

import torch

import dwconv
from dwconv import _core, _lib
from dwconv import _torch as T

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
CALLS = 200  # per round: long enough for the clock, short enough to interleave


def per_call(fn):
    start = time.perf_counter_ns()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter_ns() - start) / CALLS / 1000.0  # us


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shape", type=int, nargs=3, default=None, metavar=("B", "C", "L"),
                    help="default 1 512 8192 on cuda (the issue's small problem), "
                         "1 8 256 on the cpu (so the C work does not drown the binding)")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--dtype", default="f32", choices=DTYPES)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = torch.device(args.device)
    shape = args.shape or ([1, 512, 8192] if dev.type == "cuda" else [1, 8, 256])
    dtype = DTYPES[args.dtype]
    torch.set_grad_enabled(False)
    x = torch.randn(*shape, device=dev, dtype=dtype)
    w = torch.randn(shape[1], 1, args.k, device=dev, dtype=dtype)
    pad = args.k // 2

    # the bare C call: the plan dwconv.conv1d uses, every argument a precomputed int
    y = dwconv.conv1d(x, w, padding=pad)
    d = T.device(dev)
    plan = next(p for key, p in _core.specs.items() if key[0] == "fwd" and key[3] == x.shape)
    lib = _lib.load()
    fwd, version = lib.dwconv_plan_forward, lib.dwconv_version
    handle, px, pw, py = plan.handle, x.data_ptr(), w.data_ptr(), y.data_ptr()
    d.use_stream()
    out_shape, out_strides = plan.out_shape, plan.out_strides

    def c_call():
        fwd(handle, px, pw, None, py)

    def alloc():
        torch.empty_strided(out_shape, out_strides, dtype=dtype, device=dev)
        fwd(handle, px, pw, None, py)

    def conv1d():
        dwconv.conv1d(x, w, padding=pad)

    def ctypes_call():
        version()

    fns = {"c_call": c_call, "ctypes": ctypes_call, "alloc": alloc, "conv1d": conv1d}
    for fn in fns.values():  # warm-up
        per_call(fn)
    rounds = {name: [] for name in fns}
    for _ in range(args.reps):
        for name, fn in fns.items():
            rounds[name].append(per_call(fn))
            if dev.type == "cuda":
                torch.cuda.synchronize()  # each round starts with an empty queue
    med = {name: statistics.median(v) for name, v in rounds.items()}
    result = {"device": str(dev), "device_name": torch.cuda.get_device_name(dev)
              if dev.type == "cuda" else "cpu", "shape": shape, "k": args.k,
              "dtype": args.dtype, "torch": torch.__version__,
              "library": dwconv.library_version(), "us_per_call": med,
              "binding_us": med["conv1d"] - med["c_call"] + med["ctypes"]}
    if dev.type == "cuda":
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        kernel, loop = [], []
        for _ in range(args.reps):
            start.record()
            for _ in range(CALLS):
                c_call()
            stop.record()
            stop.synchronize()
            kernel.append(start.elapsed_time(stop) * 1000 / CALLS)
            t0 = time.perf_counter_ns()
            for _ in range(CALLS):
                conv1d()
            torch.cuda.synchronize()
            loop.append((time.perf_counter_ns() - t0) / CALLS / 1000)
        result["kernel_us"] = statistics.median(kernel)
        result["gpu_per_call_us"] = statistics.median(loop)
    print(json.dumps(result, indent=1))
    print(f"binding overhead: {result['binding_us']:.2f} us per call over the C call "
          f"({'meets' if result['binding_us'] <= 10 else 'misses'} the 10 us target)",
          file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
