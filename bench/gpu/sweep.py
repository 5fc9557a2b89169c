#!/usr/bin/env python3
"""The shape sweep: dwconv's forward over a fixed-seed set of realistic shapes, each
against a device copy of the same bytes timed in the same run (fraction = copy ms /
dwconv ms), PyTorch's F.conv1d(groups=C), and causal-conv1d where it applies (causal
padding, zeros, K 2-4, stride 1, dilation 1, no relu) when `import causal_conv1d`
works.

Run from a dwconv build tree on a GPU machine (ctypes over the public C API: dwconv_plan_create
and dwconv_plan_forward, on torch's current stream, timed with CUDA events):
    python3 bench/gpu/sweep.py [--count N] [--seed S] [--json out.json] [--markdown out.md]

Shapes: the issue's named cases (the reference problem, Mamba's causal K4 with C up to
8192 in both layouts with and without silu, Mamba-2's channel slice of its projection,
conformer K15/K31, ConvNeXt-style K7 on long rows, K up to 64, the small problem), then
random ones over B 1-64, C 64-8192, L 64-65536, K 2-64, stride 1-4, dilation 1-8, every
padding preset and mode, f32/f16/bf16, NCL/NLC, bias and activation on and off, odd
sizes included; random shapes are shrunk (B, then L) to at most --max-mb of x plus y.
Bytes = x read once + y written once. Every result is checked bit for bit against
dwconv's cpu backend: the shape itself up to --check-mb, else a replica with B = 1 and
at most 64 channels (every other option the same). Prints a markdown table and the
distribution of fractions (min, 10th percentile, median) overall and for K <= 8.
"""
import argparse
import json
import math
import random
import statistics
import sys
import time
import zlib

import torch

from dwconv_ctypes import (ACT_NAME, ACT_NONE, ACT_RELU, ACT_SILU, BF16, CAUSAL, CIRCULAR, CPU,
                           CUDA, DTYPE_NAME, EXPLICIT, F16, F32, MODE_NAME, NCL, NLC, REFLECT,
                           REPLICATE, SAME, TORCH_DTYPE, ZEROS, Dwconv, load_library, make_desc,
                           median_ms, pads, peak_fp32_tflops, torch_conv)

try:
    from causal_conv1d import causal_conv1d_fn
except ImportError:
    causal_conv1d_fn = None

PRESET_NAME = {EXPLICIT: "explicit", SAME: "same", CAUSAL: "causal"}


class Shape:
    """One forward problem. slice_width: x is channels [slice_at, slice_at + C) of a
    (B, L, slice_width) tensor (channel-last only), as Mamba-2 convolves its projection."""

    def __init__(self, group, B, C, L, K, dtype=F32, layout=NCL, stride=1, dilation=1,
                 padding=EXPLICIT, pad=(0, 0), mode=ZEROS, bias=False, act=ACT_NONE,
                 slice_width=None, slice_at=0):
        self.__dict__.update(locals())
        del self.__dict__["self"]

    def pads(self):
        return pads(self.K, self.stride, self.dilation, self.padding, self.pad)

    def desc(self, lib, B=None, C=None):
        return make_desc(lib, B or self.B, C or self.C, self.L, self.K, self.stride,
                         self.dilation, self.pad if self.padding == EXPLICIT else None,
                         self.padding, self.mode, self.layout, self.dtype, self.act)

    def output_length(self):
        left, right = self.pads()
        return (self.L + left + right - self.dilation * (self.K - 1) - 1) // self.stride + 1

    def bytes(self):
        size = 4 if self.dtype == F32 else 2
        return self.B * self.C * (self.L + self.output_length()) * size

    def label(self):
        left, right = self.pads()
        opts = [f"s{self.stride}" if self.stride > 1 else "", f"d{self.dilation}" if self.dilation > 1 else "",
                PRESET_NAME[self.padding] if self.padding != EXPLICIT else f"pad {left}/{right}",
                MODE_NAME[self.mode] if self.mode != ZEROS else "", "bias" if self.bias else "",
                ACT_NAME[self.act] if self.act != ACT_NONE else "",
                f"slice of {self.slice_width}" if self.slice_width else ""]
        return (f"B{self.B} C{self.C} L{self.L} K{self.K} " + " ".join(o for o in opts if o)).strip()

    def causal_conv1d_applies(self):
        return (self.padding == CAUSAL and self.mode == ZEROS and 2 <= self.K <= 4 and
                self.stride == 1 and self.dilation == 1 and self.act != ACT_RELU)


def valid(lib, s):
    try:
        s.desc(lib)
        return True
    except ValueError:
        return False


def named_shapes():
    """The issue's cases and the workloads it names."""
    out = []
    ref = dict(B=32, C=512, L=8192, K=3, pad=(1, 1))
    for dtype in (F32, BF16, F16):
        out.append(Shape("reference", **ref, dtype=dtype))
    out.append(Shape("reference", **ref, layout=NLC))
    # causal-conv1d's own shape: f32 and bf16, NCL and NLC, silu off and on
    for dtype in (F32, BF16):
        for layout in (NCL, NLC):
            for act in (ACT_NONE, ACT_SILU):
                out.append(Shape("mamba_causal", 4, 5120, 4096, 4, dtype, layout, padding=CAUSAL,
                                 bias=True, act=act))
    out.append(Shape("conformer", 16, 512, 4096, 31, pad=(15, 15)))
    out.append(Shape("small", 1, 512, 8192, 3, pad=(1, 1)))
    for layout in (NCL, NLC):
        out.append(Shape("large_k", 8, 512, 8192, 64, layout=layout, padding=SAME))
    return out


def workload_shapes(rng):
    """Mamba causal K2-4 (C up to 8192), Mamba-2 slices, conformer K15/K31, ConvNeXt K7
    on long rows, K 33-64."""
    out = []
    for C in (1024, 1536, 2048, 3072, 4096, 5120, 6144, 8192):
        for layout in (NCL, NLC):
            for act in (ACT_NONE, ACT_SILU):
                out.append(Shape("mamba_causal", rng.choice((1, 2, 4, 8)), C,
                                 rng.choice((512, 1024, 2048, 4096, 8192)),
                                 rng.choice((4, 4, 4, 3, 2)), rng.choice((BF16, BF16, F16, F32)),
                                 layout, padding=CAUSAL, bias=rng.random() < 0.8, act=act))
    for d_inner in (1536, 2048, 4096, 5120):  # Mamba-2: xBC inside zxbcdt, d_state 128, 1 group
        heads, conv_dim = d_inner // 64, d_inner + 2 * 128
        out.append(Shape("mamba2_slice", rng.choice((1, 2, 4)), conv_dim, rng.choice((1024, 2048, 4096)),
                         4, rng.choice((BF16, BF16, F32)), NLC, padding=CAUSAL, bias=True,
                         act=ACT_SILU, slice_width=2 * d_inner + 2 * 128 + heads, slice_at=d_inner))
    for K in (15, 31):
        for _ in range(8):
            out.append(Shape("conformer", rng.choice((4, 8, 16, 32)), rng.choice((144, 176, 256, 512)),
                             rng.choice((100, 250, 500, 1000, 1999, 4000)), K,
                             rng.choice((F32, BF16, F16)), NCL, padding=SAME, bias=True,
                             act=rng.choice((ACT_NONE, ACT_SILU))))
    for _ in range(10):
        out.append(Shape("convnext_k7", rng.choice((1, 2, 4, 8)), rng.choice((64, 96, 192, 384, 768)),
                         rng.choice((16384, 32768, 65536, 40001)), 7, rng.choice((F32, BF16, F16)),
                         rng.choice((NCL, NCL, NLC)), padding=SAME, bias=True,
                         act=rng.choice((ACT_NONE, ACT_RELU))))
    for _ in range(10):
        out.append(Shape("large_k", rng.choice((2, 4, 8)), rng.choice((256, 512, 1024)),
                         rng.choice((4096, 8192)), rng.randint(33, 64), rng.choice((F32, F32, BF16)),
                         rng.choice((NCL, NLC)), padding=SAME, bias=rng.random() < 0.5))
    return out


def random_shape(rng):
    odd = rng.random() < 0.25
    C = rng.choice((64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120, 8192))
    if odd:
        C += rng.choice((-1, 1, 3)) * rng.randint(1, 31)
    L = int(math.exp(rng.uniform(math.log(64), math.log(65536))))
    if not odd:
        L = max(64, L // 64 * 64)
    u = rng.random()
    K = rng.randint(2, 8) if u < 0.6 else rng.randint(9, 31) if u < 0.85 else rng.randint(32, 64)
    stride = 1 if rng.random() < 0.7 else rng.randint(2, 4)
    dilation = 1 if rng.random() < 0.7 else rng.randint(2, 8)
    padding = rng.choice((EXPLICIT, EXPLICIT, SAME, CAUSAL))
    if padding == SAME:
        stride = 1
    span = dilation * (K - 1)
    pad = (rng.randint(0, span), rng.randint(0, span)) if padding == EXPLICIT else (0, 0)
    mode = ZEROS if rng.random() < 0.6 else rng.choice((REFLECT, REPLICATE, CIRCULAR))
    return Shape("random", rng.choice((1, 1, 2, 4, 8, 16, 32, 64)), C, L, K,
                 rng.choice((F32, F16, BF16)), rng.choice((NCL, NLC)), stride, dilation, padding,
                 pad, mode, rng.random() < 0.5, rng.choice((ACT_NONE, ACT_RELU, ACT_SILU)))


def shrink(s, max_bytes):
    while s.bytes() > max_bytes and s.B > 1:
        s.B //= 2
    while s.bytes() > max_bytes and s.L > 4 * s.K * s.dilation + 64:
        s.L //= 2
    return s


def all_shapes(lib, seed, count, max_bytes):
    rng = random.Random(seed)
    out = named_shapes() + [shrink(s, max_bytes) for s in workload_shapes(rng)]
    while len(out) < count:
        s = shrink(random_shape(rng), max_bytes)
        if valid(lib, s):
            out.append(s)
    return [s for s in out if valid(lib, s)]


class Tensors:
    """x (a view in the shape's layout), weight, bias and y of one shape, on a device."""

    def __init__(self, s, device, B=None, C=None, sets=1):
        B, C = B or s.B, C or s.C
        dt = TORCH_DTYPE[s.dtype]
        L_out = s.output_length()
        if s.slice_width:  # channels [at, at + C) of (B, L, width)
            width = s.slice_width - s.C + C
            self.xs = [torch.randn(B, s.L, width, device=device, dtype=dt)[:, :, s.slice_at:s.slice_at + C]
                       for _ in range(sets)]
        elif s.layout == NLC:
            self.xs = [torch.randn(B, s.L, C, device=device, dtype=dt) for _ in range(sets)]
        else:
            self.xs = [torch.randn(B, C, s.L, device=device, dtype=dt) for _ in range(sets)]
        self.w = (torch.randn(C, s.K, device=device) / math.sqrt(s.K)).to(dt)
        self.b = torch.randn(C, device=device, dtype=dt) if s.bias else None
        self.y = torch.empty((B, L_out, C) if s.layout == NLC else (B, C, L_out), device=device, dtype=dt)

    def x_strides(self, s, i=0):
        """x's (batch, channel, position) element strides."""
        x = self.xs[i]
        return (x.stride(0), x.stride(2), x.stride(1)) if s.layout == NLC else tuple(x.stride())

    def y_strides(self, s):
        y = self.y
        return (y.stride(0), y.stride(2), y.stride(1)) if s.layout == NLC else tuple(y.stride())

    def ncl(self, x, s):
        return x.transpose(1, 2) if s.layout == NLC else x


def bitwise(a, b):
    bits = torch.int32 if a.element_size() == 4 else torch.int16
    return bool(torch.equal(a.contiguous().view(bits), b.contiguous().view(bits)))


def check(s, lib, gpu, cpu, check_bytes):
    """dwconv on the GPU bit for bit against the cpu backend: the shape, or a replica."""
    small = s.bytes() <= check_bytes
    B, C = (None, None) if small else (1, min(s.C, 64))
    desc, _ = s.desc(lib, B, C)
    t = Tensors(s, "cuda", B, C)
    gpu.plan(desc, t.x_strides(s), t.y_strides(s)).forward(t.xs[0], t.w, t.b, t.y)
    torch.cuda.synchronize()
    xh = t.xs[0].cpu()  # keeps the slice's strides
    wh, bh = t.w.cpu(), t.b.cpu() if t.b is not None else None
    yh = torch.empty_like(t.y, device="cpu")
    xstr = (xh.stride(0), xh.stride(2), xh.stride(1)) if s.layout == NLC else tuple(xh.stride())
    cpu.plan(desc, xstr, t.y_strides(s)).forward(xh, wh, bh, yh)
    return ("bitwise" if small else "bitwise (replica)") if bitwise(t.y.cpu(), yh) else "DIFFERS"


def run_shape(s, lib, gpu, cpu, args, l2_bytes):
    torch.manual_seed(zlib.crc32(s.label().encode()))
    sets = max(1, min(8, math.ceil(3 * l2_bytes / s.bytes())))
    t = Tensors(s, "cuda", sets=sets)
    desc, L_out = s.desc(lib)
    plans = [gpu.plan(desc, t.x_strides(s, i), t.y_strides(s)) for i in range(sets)]
    src = torch.empty(s.bytes() // 2, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    src.random_(0, 256)
    left, right = s.pads()
    r = {"group": s.group, "shape": s.label(), "dtype": DTYPE_NAME[s.dtype],
         "layout": "NLC" if s.layout == NLC else "NCL", "K": s.K, "bytes": s.bytes(),
         "input_sets": sets}
    r["copy_ms"] = median_ms(lambda _: dst.copy_(src), [None], args.reps)
    r["dwconv_ms"] = median_ms(lambda i: plans[i].forward(t.xs[i], t.w, t.b, t.y), list(range(sets)),
                               args.reps)
    r["fraction"] = r["copy_ms"] / r["dwconv_ms"]
    r["tflops"] = 2 * s.B * s.C * L_out * s.K / r["dwconv_ms"] / 1e9
    if not args.no_torch:
        r["torch_ms"] = median_ms(lambda i: torch_conv(t.ncl(t.xs[i], s), t.w, t.b, s.stride, s.dilation,
                                                       left, right, s.mode, s.act, L_out),
                                  list(range(sets)), args.torch_reps)
    if causal_conv1d_fn and s.causal_conv1d_applies():
        act = "silu" if s.act == ACT_SILU else None
        try:
            r["causal_conv1d_ms"] = median_ms(
                lambda i: causal_conv1d_fn(t.ncl(t.xs[i], s), t.w, t.b, activation=act),
                list(range(sets)), args.reps)
        except (RuntimeError, ValueError) as e:  # its own limits (strides, sizes)
            r["causal_conv1d_error"] = str(e).splitlines()[0][:120]
    if not args.no_check:
        r["check"] = check(s, lib, gpu, cpu, args.check_mb << 20)
    return r


def quantile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))] if v else float("nan")


def distribution(results, pick):
    f = [r["fraction"] for r in results if pick(r)]
    return {"count": len(f), "min": min(f, default=float("nan")), "p10": quantile(f, 0.1),
            "median": statistics.median(f) if f else float("nan")}


def markdown(results, dists, device, peak, command):
    lines = [f"Device: {device}; FP32 peak {peak:.1f} TFLOP/s. Command: `{command}`", "",
             "| # | group | shape | dtype | layout | MB | copy ms | dwconv ms | fraction | PyTorch ms | "
             "vs PyTorch | causal-conv1d ms | vs causal-conv1d | TFLOP/s | check |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(results):
        torch_ms = r.get("torch_ms")
        cc = r.get("causal_conv1d_ms")
        lines.append(
            f"| {i} | {r['group']} | {r['shape']} | {r['dtype']} | {r['layout']} | {r['bytes'] / 2**20:.1f} | "
            f"{r['copy_ms']:.4f} | {r['dwconv_ms']:.4f} | {r['fraction']:.3f} | "
            + (f"{torch_ms:.4f} | {torch_ms / r['dwconv_ms']:.1f}x | " if torch_ms else "— | — | ")
            + (f"{cc:.4f} | {cc / r['dwconv_ms']:.2f}x | " if cc else
               f"{r.get('causal_conv1d_error', '—')} | — | ")
            + f"{r['tflops']:.1f} | {r.get('check', '—')} |")
    lines += ["", "| shapes | count | min | p10 | median | target (issue 11) |", "|---|---|---|---|---|---|"]
    targets = {"K <= 8": "min >= 0.85, p10 >= 0.90, median >= 0.93"}
    for name, d in dists.items():
        lines.append(f"| {name} | {d['count']} | {d['min']:.3f} | {d['p10']:.3f} | {d['median']:.3f} | "
                     f"{targets.get(name, '—')} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=".", help="the dwconv build tree")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--count", type=int, default=220, help="shapes in all (at least the named ones)")
    ap.add_argument("--max-mb", type=int, default=256, help="x plus y of a random shape, at most")
    ap.add_argument("--check-mb", type=int, default=48, help="checked whole up to this, else a replica")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--torch-reps", type=int, default=5)
    ap.add_argument("--group", action="append", help="run only these groups")
    ap.add_argument("--kernel", default="auto",
                    help="DWCONV_GPU_KERNEL for dwconv's context (with DWCONV_GPU_KERNEL_STRICT=1 "
                    "in the environment, shapes the family does not take are listed as refused)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args()

    lib = load_library(args.build)
    gpu, cpu = Dwconv(lib, CUDA, args.kernel), Dwconv(lib, CPU)
    stream = torch.cuda.Stream()  # one stream for everything timed (not the legacy one)
    torch.cuda.set_stream(stream)
    gpu.set_stream(stream.cuda_stream)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    peak, _ = peak_fp32_tflops()
    device = (f"{props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, "
              f"causal-conv1d {'yes' if causal_conv1d_fn else 'not importable'}, "
              f"{time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(device, flush=True)
    shapes = all_shapes(lib, args.seed, args.count, args.max_mb << 20)
    if args.group:
        shapes = [s for s in shapes if s.group in args.group]
    results, refused, t0 = [], [], time.time()
    for i, s in enumerate(shapes):
        try:
            r = run_shape(s, lib, gpu, cpu, args, l2)
        except RuntimeError as e:  # a family forced with DWCONV_GPU_KERNEL_STRICT=1
            refused.append({"shape": s.label(), "dtype": DTYPE_NAME[s.dtype], "error": str(e)[:160]})
            print(f"{i:3d} {s.group:13s} {s.label():58s} refused: {str(e)[:80]}", flush=True)
            continue
        results.append(r)
        print(f"{i:3d} {r['group']:13s} {r['shape']:58s} {r['dtype']:4s} {r['layout']} "
              f"fraction {r['fraction']:.3f} dwconv {r['dwconv_ms']:.4f} copy {r['copy_ms']:.4f} "
              f"torch {r.get('torch_ms', 0):.4f} cc {r.get('causal_conv1d_ms', 0):.4f} "
              f"{r.get('check', '')}", flush=True)
    dists = {"all": distribution(results, lambda r: True),
             "K <= 8": distribution(results, lambda r: r["K"] <= 8),
             "K 9-31": distribution(results, lambda r: 9 <= r["K"] <= 31),
             "K >= 32": distribution(results, lambda r: r["K"] >= 32)}
    command = "python3 " + " ".join(sys.argv)
    table = markdown(results, dists, device, peak, command)
    print(table)
    print(f"{len(results)} shapes in {time.time() - t0:.0f} s")
    if args.markdown:
        open(args.markdown, "w").write(table)
    if args.json:
        json.dump({"device": device, "peak_fp32_tflops": peak, "seed": args.seed,
                   "distribution": dists, "results": results, "refused": refused}, open(args.json, "w"), indent=1)
    bad = [r["shape"] for r in results if r.get("check") == "DIFFERS"]
    if bad:
        print("WRONG RESULTS:", "; ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
