#!/usr/bin/env python3
"""The GPU benchmark: dwconv against a device-to-device copy of the same bytes (the
ceiling) and PyTorch's F.conv1d(..., groups=C), all in one run on one device.

Run from a build tree (it loads src/.libs/libdwconv.so and its modules through ctypes
and calls dwconv_forward on torch tensors, on torch's current stream):
    python3 bench/gpu/bench_gpu.py [--json out.json] [--markdown out.md] [--case NAME]

Each time is the median of CUDA-event timings after warm-up, inputs rotated among
enough random sets that the 60 MB L2 cannot hold them. Bytes = x read once + y written
once. Every dwconv result is compared with PyTorch (close) and, bit for bit, with
dwconv's cpu backend (the oracle) on the same inputs.
"""
import argparse
import json
import math
import sys
import time

import torch

from dwconv_ctypes import (ACT_NONE, ACT_SILU, BF16, CAUSAL, CPU, CUDA, DTYPE_NAME,
                           EXPLICIT, F16, F32, NCL, NLC, SAME, TORCH_DTYPE, ZEROS, Dwconv,
                           load_library, make_desc, median_ms, pads, peak_fp32_tflops,
                           torch_conv)


class Case:
    def __init__(self, name, B, C, L, K, dtype=F32, layout=NCL, stride=1, dilation=1, pad=None,
                 padding=EXPLICIT, bias=False, act=ACT_NONE, target=None, kind="bandwidth",
                 base=None):
        self.__dict__.update(locals())
        del self.__dict__["self"]

    def desc(self, lib):
        return make_desc(lib, self.B, self.C, self.L, self.K, self.stride, self.dilation,
                         self.pad, self.padding, ZEROS, self.layout, self.dtype, self.act)

    def pads(self):
        return pads(self.K, self.stride, self.dilation, self.padding, self.pad)


REF = dict(B=32, C=512, L=8192, K=3, pad=(1, 1))
MID = dict(B=16, C=512, L=4096)
CAUSAL4 = dict(B=4, C=5120, L=4096, K=4, padding=CAUSAL, bias=True)
CASES = [
    Case("ref_f32", **REF, target=0.93),
    Case("ref_bf16", **REF, dtype=BF16, target=0.90),
    Case("ref_f16", **REF, dtype=F16, target=0.90),
    Case("ref_f32_nlc", **REF, layout=NLC, target=0.90),
    Case("stride2_k3", **MID, K=3, stride=2, pad=(1, 1), target=0.85),
    Case("dilation4_k3", **MID, K=3, dilation=4, pad=(4, 4), target=0.85),
    Case("k31_pad15", **MID, K=31, pad=(15, 15), target=0.85),
    Case("k31_s2_d4", **MID, K=31, stride=2, dilation=4, pad=(60, 60), target=0.85),
    Case("causal4_f32", **CAUSAL4, target=0.94),
    Case("causal4_bf16", **CAUSAL4, dtype=BF16, target=0.92),
    Case("causal4_bf16_nlc", **CAUSAL4, dtype=BF16, layout=NLC, target=0.90),
    Case("causal4_f32_silu", **CAUSAL4, act=ACT_SILU, kind="silu", base="causal4_f32"),
    Case("causal4_bf16_silu", **CAUSAL4, dtype=BF16, act=ACT_SILU, kind="silu",
         base="causal4_bf16"),
    Case("causal4_bf16_nlc_silu", **CAUSAL4, dtype=BF16, layout=NLC, act=ACT_SILU, kind="silu",
         base="causal4_bf16_nlc"),
    # a chunk of issue 13's chunked prefill (L 4096 in 4 chunks): 1024-long rows
    Case("causal4_f32_l1024", **dict(CAUSAL4, L=1024)),
    Case("causal4_bf16_l1024", **dict(CAUSAL4, L=1024), dtype=BF16),
    Case("small_1x512x8192", B=1, C=512, L=8192, K=3, pad=(1, 1), kind="small"),
    Case("k64_f32", B=8, C=512, L=8192, K=64, padding=SAME, kind="fma"),
    Case("k128_f32", B=8, C=512, L=8192, K=128, padding=SAME, kind="fma"),
    Case("k64_f32_nlc", B=8, C=512, L=8192, K=64, padding=SAME, layout=NLC, kind="fma"),
]


def conv(case, x, w, b, L_out):
    """PyTorch's result for case (x in the case's layout)."""
    left, right = case.pads()
    return torch_conv(x.transpose(1, 2) if case.layout == NLC else x, w, b, case.stride,
                      case.dilation, left, right, ZEROS, case.act, L_out)


def run_case(case, lib, gpu, forced, cpu, args, l2_bytes):
    torch.manual_seed(sum(case.name.encode()))
    desc, L_out = case.desc(lib)
    dt = TORCH_DTYPE[case.dtype]
    xshape = (case.B, case.C, case.L) if case.layout == NCL else (case.B, case.L, case.C)
    yshape = (case.B, case.C, L_out) if case.layout == NCL else (case.B, L_out, case.C)
    esize = torch.finfo(dt).bits // 8
    x_bytes, y_bytes = math.prod(xshape) * esize, math.prod(yshape) * esize
    sets = max(1, min(8, math.ceil(3 * l2_bytes / (x_bytes + y_bytes))))
    xs = [torch.randn(xshape, device="cuda", dtype=dt) for _ in range(sets)]
    w = (torch.randn(case.C, case.K, device="cuda") / math.sqrt(case.K)).to(dt)
    b = torch.randn(case.C, device="cuda", dtype=dt) if case.bias else None
    y = torch.empty(yshape, device="cuda", dtype=dt)
    src = torch.empty((x_bytes + y_bytes) // 2, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    src.random_(0, 256)

    r = {"case": case.name, "shape": f"B{case.B} C{case.C} L{case.L} K{case.K}",
         "dtype": DTYPE_NAME[case.dtype], "layout": "NLC" if case.layout == NLC else "NCL",
         "stride": case.stride, "dilation": case.dilation, "pad": list(case.pads()),
         "bias": case.bias, "act": ["none", "relu", "silu"][case.act], "bytes": x_bytes + y_bytes,
         "target": case.target, "kind": case.kind, "input_sets": sets}
    r["copy_ms"] = median_ms(lambda _: dst.copy_(src), [None], args.reps)
    r["dwconv_ms"] = median_ms(lambda x: gpu.forward(desc, x, w, b, y), xs, args.reps)
    r["kernel_ms"] = {name: median_ms(lambda x: ctx.forward(desc, x, w, b, y), xs, max(5, args.reps // 3))
                      for name, ctx in forced.items()}
    r["generic_ms"] = r["kernel_ms"]["generic"]
    r["torch_ms"] = median_ms(lambda x: conv(case, x, w, b, L_out), xs, max(5, args.reps // 3))
    r["fraction"] = r["copy_ms"] / r["dwconv_ms"]
    r["dwconv_tb_s"] = r["bytes"] / r["dwconv_ms"] / 1e9
    r["copy_tb_s"] = r["bytes"] / r["copy_ms"] / 1e9
    flops = 2 * case.B * case.C * L_out * case.K
    r["tflops"] = flops / r["dwconv_ms"] / 1e9

    # correctness on the last input set: PyTorch (close), the cpu backend (bit for bit)
    y.fill_(float("nan"))
    gpu.forward(desc, xs[-1], w, b, y)
    ref = conv(case, xs[-1], w, b, L_out)
    got = y.transpose(1, 2) if case.layout == NLC else y
    err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
    r["torch_rel_err"] = err
    r["torch_close"] = bool(err < (1e-4 if case.dtype == F32 else 2e-2))
    if not args.no_oracle:
        xh, wh = xs[-1].cpu(), w.cpu()
        bh = b.cpu() if b is not None else None
        yh = torch.empty(yshape, dtype=dt)
        cpu.forward(desc, xh, wh, bh, yh)
        ibits = torch.int32 if esize == 4 else torch.int16
        r["bitwise_cpu"] = bool(torch.equal(y.cpu().view(ibits), yh.view(ibits)))
    if case.kind == "small":  # what a call costs the host, beyond the kernel
        plan = gpu.plan(desc)
        for name, call in (("host_us_per_call", lambda: gpu.forward(desc, xs[0], w, b, y)),
                           ("plan_host_us_per_call", lambda: plan.forward(xs[0], w, b, y)),
                           ("ctypes_us_per_call", lambda: gpu.lib.dwconv_last_error())):
            call()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(1000):
                call()
            r[name] = (time.perf_counter() - t0) * 1e3
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            plan.forward(xs[0], w, b, y)
            torch.cuda.synchronize()
        r["roundtrip_us"] = (time.perf_counter() - t0) / 200 * 1e6
    return r


def markdown(results, device, peak, mhz, command):
    by = {r["case"]: r for r in results}
    lines = [f"Device: {device}; copy ceiling measured per case in the same run; "
             f"FP32 peak {peak:.1f} TFLOP/s ({mhz:.0f} MHz max SM clock).", f"Command: `{command}`", "",
             "| case | shape | dtype | layout | copy ms | dwconv ms | fraction of copy | target | "
             "generic kernel ms | PyTorch ms | vs PyTorch | checks |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        target = "—"
        if r["target"]:
            target = f"{r['target']:.2f} {'met' if r['fraction'] >= r['target'] else 'MISSED'}"
        elif r["kind"] == "silu":
            base = by.get(r["case"].removesuffix("_silu"))
            if base:
                slow = r["dwconv_ms"] / base["dwconv_ms"] - 1
                target = f"+{slow * 100:.1f}% vs no silu ({'met' if slow <= 0.03 else 'MISSED'} <= 3%)"
        elif r["kind"] == "fma":
            target = f"{r['tflops']:.1f} TFLOP/s = {r['tflops'] / peak:.2f} of FP32 peak"
        elif r["kind"] == "small":
            target = (f"host µs/call: plan {r['plan_host_us_per_call']:.1f} "
                      f"({'met' if r['plan_host_us_per_call'] <= 3 else 'MISSED'} <= 3), "
                      f"dwconv_forward {r['host_us_per_call']:.1f}, a bare ctypes call "
                      f"{r['ctypes_us_per_call']:.1f}; round trip {r['roundtrip_us']:.1f} µs")
        checks = ("bitwise=cpu" if r.get("bitwise_cpu") else "BITWISE DIFF" if "bitwise_cpu" in r
                  else "no oracle") + (", torch close" if r["torch_close"] else ", TORCH DIFF")
        lines.append(
            f"| {r['case']} | {r['shape']} s{r['stride']} d{r['dilation']} pad {r['pad'][0]}/{r['pad'][1]}"
            f"{' bias' if r['bias'] else ''}{' ' + r['act'] if r['act'] != 'none' else ''} | {r['dtype']} | "
            f"{r['layout']} | {r['copy_ms']:.4f} | {r['dwconv_ms']:.4f} | {r['fraction']:.3f} | {target} | "
            f"{r['generic_ms']:.4f} | {r['torch_ms']:.4f} | {r['torch_ms'] / r['dwconv_ms']:.1f}x | {checks} |")
    kernels = [k for k in results[0]["kernel_ms"] if k != "generic"] if results else []
    if kernels:  # each kernel forced; a kernel that does not apply falls back (same time as auto)
        lines += ["", "Each kernel forced (DWCONV_GPU_KERNEL), ms; * = within 1% of the automatic choice:",
                  "", "| case | auto | " + " | ".join(kernels) + " |", "|---" * (len(kernels) + 2) + "|"]
        for r in results:
            cells = [f"{r['kernel_ms'][k]:.4f}" + ("*" if abs(r["kernel_ms"][k] / r["dwconv_ms"] - 1) < 0.01
                                                   else "") for k in kernels]
            lines.append(f"| {r['case']} | {r['dwconv_ms']:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=".", help="the dwconv build tree")
    ap.add_argument("--case", action="append", help="run only these cases")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--no-oracle", action="store_true", help="skip the cpu-backend comparison")
    ap.add_argument("--kernels", default="generic",
                    help="comma-separated DWCONV_GPU_KERNEL values also timed (forced where they apply)")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()

    lib = load_library(args.build)
    gpu, cpu = Dwconv(lib, CUDA), Dwconv(lib, CPU)
    forced = {name: Dwconv(lib, CUDA, name) for name in ["generic"] + [
        k for k in args.kernels.split(",") if k and k != "generic"]}
    # One stream for everything timed: torch's default stream is the legacy NULL stream,
    # and dwconv_context_set_stream(NULL) would mean the context's own stream instead.
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    for ctx in [gpu] + list(forced.values()):
        ctx.set_stream(stream.cuda_stream)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    peak, mhz = peak_fp32_tflops()
    device = f"{props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, " \
             f"cuDNN {torch.backends.cudnn.version()}, {time.strftime('%Y-%m-%d %H:%M %Z')}"
    print(device, flush=True)
    results = []
    for case in CASES:
        if args.case and case.name not in args.case:
            continue
        r = run_case(case, lib, gpu, forced, cpu, args, l2)
        results.append(r)
        print(f"{r['case']:24s} copy {r['copy_ms']:.4f} ms  dwconv {r['dwconv_ms']:.4f} ms  "
              f"fraction {r['fraction']:.3f}  generic {r['generic_ms']:.4f}  torch {r['torch_ms']:.4f}  "
              f"{r['tflops']:.1f} TFLOP/s  bitwise {r.get('bitwise_cpu')}  torch err {r['torch_rel_err']:.1e}  "
              + " ".join(f"{k} {v:.4f}" for k, v in r["kernel_ms"].items()), flush=True)
    command = "python3 " + " ".join(sys.argv)
    table = markdown(results, device, peak, mhz, command)
    print(table)
    if args.markdown:
        open(args.markdown, "w").write(table)
    if args.json:
        json.dump({"device": device, "peak_fp32_tflops": peak, "results": results},
                  open(args.json, "w"), indent=1)
    bad = [r["case"] for r in results if not r["torch_close"] or r.get("bitwise_cpu") is False]
    if bad:
        print("WRONG RESULTS:", ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
