#!/usr/bin/env python3
"""dwconv against causal-conv1d (Dao-AILab/causal-conv1d) in one run on one GPU, at the
shapes of issues 11-13, through dwconv's causal-conv1d drop-ins (python/dwconv/causal.py)
so that both sides pay the same Python per call:
  fwd     B4 C5120 L4096 K4 with bias, f32/bf16, NCL/NLC, silu on and off, with a
          device copy of x's bytes (read + write) as the ceiling;
  bwd     the same shape with silu: dx, dweight and dbias through torch.autograd.grad
          (retain_graph: the backward alone), copy of x + dy + dx;
  decode  B64 C5120 K4, 1 token (shift register) and 4 tokens into a pool of 256
          (circular, cache_seqlens), silu: device time per call from a CUDA graph of
          100 calls (no launch gaps).
Each figure is the median of CUDA-event timings. Needs causal_conv1d importable (build
it from its source on the GPU machine; bench/RESULTS-gpu.md says how) and dwconv's
package (PYTHONPATH=python, DWCONV_LIBRARY):
    python3 bench/gpu/causal_conv1d_peer.py OUT.json [fwd] [bwd] [decode]"""
import json, sys, statistics, torch
import dwconv
import causal_conv1d as cc

torch.manual_seed(0)
dev = "cuda"
DT = {"f32": torch.float32, "bf16": torch.bfloat16}
rows = []

def ev_time(fn, reps=30, inner=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner): fn()
        b.record(); b.synchronize(); ts.append(a.elapsed_time(b) / inner)
    return statistics.median(ts)

def graph_time(fn, calls=100, reps=20):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls): fn()
    return ev_time(g.replay, reps=reps, inner=1) / calls

def copy_ms(nbytes):  # a device copy moving nbytes (read + write counted)
    a = torch.empty(nbytes // 2, dtype=torch.uint8, device=dev); b = torch.empty_like(a)
    return ev_time(lambda: b.copy_(a))

def x_of(B, C, L, dt, nlc):
    if nlc: return torch.randn(B, L, C, device=dev, dtype=dt).transpose(1, 2)
    return torch.randn(B, C, L, device=dev, dtype=dt)

def fwd():
    B, C, L, K = 4, 5120, 4096, 4
    for dn in ("f32", "bf16"):
        for nlc in (False, True):
            for act in (None, "silu"):
                dt = DT[dn]; x = x_of(B, C, L, dt, nlc)
                w = torch.randn(C, K, device=dev, dtype=dt); bias = torch.randn(C, device=dev, dtype=dt)
                yd = dwconv.causal_conv1d_fn(x, w, bias, activation=act)
                yc = cc.causal_conv1d_fn(x, w, bias, activation=act)
                err = (yd.float() - yc.float()).abs().max().item()
                td = ev_time(lambda: dwconv.causal_conv1d_fn(x, w, bias, activation=act))
                tc = ev_time(lambda: cc.causal_conv1d_fn(x, w, bias, activation=act))
                tcopy = copy_ms(2 * x.numel() * x.element_size())
                rows.append(dict(op="fwd", dtype=dn, layout="nlc" if nlc else "ncl", act=act or "none",
                                 dwconv_ms=td, cc1d_ms=tc, copy_ms=tcopy, frac=tcopy / td, maxdiff=err))
                print(rows[-1], flush=True)

def bwd():
    B, C, L, K = 4, 5120, 4096, 4
    for dn in ("f32", "bf16"):
        for nlc in (False, True):
            dt = DT[dn]
            x = x_of(B, C, L, dt, nlc).requires_grad_()
            w = torch.randn(C, K, device=dev, dtype=dt, requires_grad=True)
            bias = torch.randn(C, device=dev, dtype=dt, requires_grad=True)
            g = x_of(B, C, L, dt, nlc)
            res = {}
            for name, fn in (("dwconv", dwconv.causal_conv1d_fn), ("cc1d", cc.causal_conv1d_fn)):
                y = fn(x, w, bias, activation="silu")
                res[name] = torch.autograd.grad(y, (x, w, bias), g, retain_graph=True)
                res[name + "_ms"] = ev_time(lambda: torch.autograd.grad(y, (x, w, bias), g, retain_graph=True), reps=20, inner=5)
            diff = [((a.float() - b.float()).abs().max() / (b.float().abs().max() + 1e-30)).item()
                    for a, b in zip(res["dwconv"], res["cc1d"])]
            tcopy = copy_ms(3 * x.numel() * x.element_size())
            rows.append(dict(op="bwd", dtype=dn, layout="nlc" if nlc else "ncl", act="silu",
                             dwconv_ms=res["dwconv_ms"], cc1d_ms=res["cc1d_ms"], copy_ms=tcopy,
                             frac=tcopy / res["dwconv_ms"], reldiff_dx_dw_db=diff))
            print(rows[-1], flush=True)

def decode():
    C, K = 5120, 4
    for dn in ("bf16", "f32"):
        dt = DT[dn]
        for B, T, pool, circ in ((64, 1, None, False), (64, 4, 256, True)):
            x = torch.randn(B, C, T, device=dev, dtype=dt)
            w = torch.randn(C, K, device=dev, dtype=dt); bias = torch.randn(C, device=dev, dtype=dt)
            n = pool or B
            S = K - 1 + (T - 1 if circ else 0)
            st1 = torch.randn(n, C, S if not circ else 8, device=dev, dtype=dt); st2 = st1.clone()
            idx = torch.randperm(n, device=dev)[:B].to(torch.int32) if pool else None
            seqlens = torch.randint(0, 100, (B,), device=dev, dtype=torch.int32) if circ else None
            fd = lambda: dwconv.causal_conv1d_update(x, st1, w, bias, "silu", seqlens, idx)
            fc = lambda: cc.causal_conv1d_update(x, st2, w, bias, "silu", seqlens, idx)
            yd, yc = fd(), fc()
            err = (yd.float() - yc.float()).abs().max().item()
            rows.append(dict(op="decode", dtype=dn, B=B, tokens=T, pool=pool, circular=circ,
                             dwconv_us=1000 * graph_time(fd), cc1d_us=1000 * graph_time(fc), maxdiff=err))
            print(rows[-1], flush=True)

for part in sys.argv[2:] or ["fwd", "bwd", "decode"]:
    try: globals()[part]()
    except Exception as e: print(part, "FAILED", repr(e), flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
