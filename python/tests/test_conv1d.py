"""dwconv.conv1d and dwconv.nn.DepthwiseConv1d against F.conv1d in float64 on random
descriptors (every option, every layout), and bit for bit against dwconv's own C
oracle (dwconv_reference_forward)."""
import collections

import pytest
import torch
import torch.nn.functional as F

import dwconv
import models
from conftest import exact, seeded

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAYOUTS = ["ncl", "nlc", "slice", "strided"]
CASES = 48


def make_x(shape, layout, gen, dtype, device, values=None):
    """A (B, C, L) tensor in the given memory layout: ncl contiguous; nlc a (B, L, C)
    tensor transposed; slice channels cut from a wider (B, L, C + 3) tensor; strided
    every other position of a longer NCL tensor. values: the float64 contents."""
    b, c, length = shape
    if values is None:
        values = exact(shape, gen, dtype=torch.float64)
    values = values.to(dtype=dtype, device=device)
    if layout == "ncl":
        return values.contiguous()
    if layout == "nlc":
        return values.transpose(1, 2).contiguous().transpose(1, 2)
    if layout == "slice":
        wide = torch.zeros(b, length, c + 3, dtype=dtype, device=device)
        wide[:, :, 1:c + 1] = values.transpose(1, 2)
        return wide[:, :, 1:c + 1].transpose(1, 2)
    long = torch.zeros(b, c, 2 * length, dtype=dtype, device=device)
    long[:, :, ::2] = values
    return long[:, :, ::2]


def random_case(rng, gen):
    """One random descriptor; the same rng draws every option in turn."""
    k = rng.choice([1, 2, 3, 4, 5, 7, 31])
    dilation = rng.choice([1, 1, 2, 3])
    stride = rng.choice([1, 1, 2, 3])
    mode = rng.choice(["zeros", "zeros", "reflect", "replicate", "circular"])
    padding = rng.choice(["int", "pair", "same", "valid", "causal"])
    if padding == "same":
        stride = 1
    span = dilation * (k - 1)
    length = span + rng.randint(1, 60)  # at least one output whatever the padding
    limit = length - 1 if mode == "reflect" else length  # PyTorch's padding limits
    pad = {"int": rng.randint(0, min(limit, span + 2)),
           "pair": (rng.randint(0, min(limit, span + 2)), rng.randint(0, min(limit, 3))),
           "same": "same", "valid": "valid", "causal": "causal"}[padding]
    if mode == "reflect" and padding in ("same", "causal") and span > length - 1:
        mode = "zeros"
    if mode == "circular" and padding in ("same", "causal") and span > length:
        mode = "zeros"
    dtype = rng.choice(DTYPES)
    return dict(b=rng.randint(1, 3), c=rng.randint(1, 12), length=length, k=k, stride=stride,
                dilation=dilation, padding=pad, padding_kind=padding, padding_mode=mode,
                activation=rng.choice([None, "relu", "silu"]), dtype=dtype,
                weight_dtype=rng.choice([torch.float32, dtype]), bias=rng.random() < 0.7,
                layout=rng.choice(LAYOUTS), weight_2d=rng.random() < 0.3,
                use_out=rng.random() < 0.2)


def resolved_pads(case):
    span = case["dilation"] * (case["k"] - 1)
    p = case["padding"]
    return {"same": (span // 2, span - span // 2), "valid": (0, 0), "causal": (span, 0)}.get(
        p, (p, p) if isinstance(p, int) else p) if isinstance(p, (str, int)) else p


def run_case(case, device, gen, values=None):
    b, c, length, k = case["b"], case["c"], case["length"], case["k"]
    x = make_x((b, c, length), case["layout"], gen, case["dtype"], device, values)
    wshape = (c, k) if case["weight_2d"] else (c, 1, k)
    w = exact(wshape, gen, 0.25, dtype=case["weight_dtype"], device=device)
    bias = exact((c,), gen, 0.5, dtype=case["weight_dtype"], device=device) \
        if case["bias"] else None
    args = dict(stride=case["stride"], padding=case["padding"], dilation=case["dilation"],
                padding_mode=case["padding_mode"], activation=case["activation"])
    if case["use_out"]:
        left, right = resolved_pads(case)
        n = (length + left + right - case["dilation"] * (k - 1) - 1) // case["stride"] + 1
        out = torch.full((b, c, n), float("nan"), dtype=case["dtype"], device=device)
        y = dwconv.conv1d(x, w, bias, out=out, **args)
        assert y is out
    else:
        y = dwconv.conv1d(x, w, bias, **args)
    return x, w, bias, y


def ulp(dtype):
    return {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}[dtype]


def test_random_descriptors_against_float64(device):
    """Exact-sum inputs: without an activation (or with relu) the float64 answer is
    exact and dwconv must equal it once rounded to the dtype; silu (dwconv's own exp)
    may differ by the rounding of a few f32 operations, then of the dtype."""
    gen, rng = seeded(1234)
    seen = collections.defaultdict(set)
    for _ in range(CASES):
        case = random_case(rng, gen)
        for key in ("k", "stride", "dilation", "padding_kind", "padding_mode", "activation",
                    "dtype", "layout", "bias", "weight_2d", "use_out"):
            seen[key].add(case[key])
        x, w, bias, y = run_case(case, device, gen)
        left, right = resolved_pads(case)
        want = models.conv1d(x, w, bias, case["stride"], left, right, case["dilation"],
                             case["padding_mode"], case["activation"])
        assert y.shape == want.shape, case
        assert y.dtype == case["dtype"]
        got = y.double().cpu()
        if case["activation"] == "silu":
            tol = 4 * ulp(case["dtype"]) * want.abs() + 2.0 ** -20
            assert ((got - want).abs() <= tol).all(), case
        else:
            assert torch.equal(got, want.to(case["dtype"]).double()), case
    # every option was drawn at least once
    assert seen["padding_kind"] == {"int", "pair", "same", "valid", "causal"}
    assert seen["padding_mode"] == {"zeros", "reflect", "replicate", "circular"}
    assert seen["activation"] == {None, "relu", "silu"}
    assert seen["dtype"] == set(DTYPES) and seen["layout"] == set(LAYOUTS)
    assert {1, 2, 3} <= seen["stride"] and {1, 2, 3} <= seen["dilation"]
    assert seen["bias"] == seen["weight_2d"] == seen["use_out"] == {True, False}


def test_random_descriptors_bitwise_against_oracle(device):
    """Random normal data (rounding everywhere): every path equals the C reference."""
    gen, rng = seeded(99)
    for _ in range(CASES):
        case = random_case(rng, gen)
        values = torch.randn((case["b"], case["c"], case["length"]), generator=gen,
                             dtype=torch.float64)
        x, w, bias, y = run_case(case, device, gen, values)
        w = torch.randn(w.shape, generator=gen).to(w.dtype)
        bias = None if bias is None else torch.randn(bias.shape, generator=gen).to(bias.dtype)
        args = dict(stride=case["stride"], padding=case["padding"],
                    dilation=case["dilation"], padding_mode=case["padding_mode"],
                    activation=case["activation"])
        y = dwconv.conv1d(x, w.to(device), None if bias is None else bias.to(device), **args)
        xc = x.cpu()
        if case["layout"] in ("slice", "strided"):
            xc = xc.contiguous()  # the oracle reads contiguous NCL or NLC
        want = dwconv.reference_conv1d(xc, w, bias, **args)
        assert y.dtype == want.dtype and y.shape == want.shape
        bits = torch.int32 if y.dtype == torch.float32 else torch.int16
        assert torch.equal(y.cpu().contiguous().view(bits), want.contiguous().view(bits)), case


def test_channel_last_in_gives_channel_last_out(device):
    gen, _ = seeded(5)
    x = exact((2, 16, 40), gen, device=device).transpose(1, 2).contiguous().transpose(1, 2)
    w = exact((16, 1, 3), gen, 0.25, device=device)
    y = dwconv.conv1d(x, w, padding=1)
    assert y.stride() == (40 * 16, 1, 16)
    assert torch.equal(y.contiguous(), dwconv.conv1d(x.contiguous(), w, padding=1))


def test_unbatched_input(device):
    gen, _ = seeded(6)
    x = exact((8, 30), gen, device=device)
    w = exact((8, 1, 5), gen, 0.25, device=device)
    y = dwconv.conv1d(x, w, padding="same")
    assert y.shape == (8, 30)
    assert torch.equal(y.double().cpu(), F.conv1d(x.double().cpu(), w.double().cpu(),
                                                  padding="same", groups=8))


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, padding=1), dict(kernel_size=4, padding="same", padding_mode="reflect"),
    dict(kernel_size=5, stride=2, dilation=2, padding=3, bias=False),
    dict(kernel_size=3, padding=2, padding_mode="circular"),
    dict(kernel_size=7, padding="valid", padding_mode="replicate")])
def test_module_is_a_drop_in_for_conv1d(device, kwargs):
    torch.manual_seed(0)
    c = 12
    ref = torch.nn.Conv1d(c, c, groups=c, **kwargs).to(device)
    mine = dwconv.nn.DepthwiseConv1d(c, c, groups=c, **kwargs).to(device)
    assert mine.state_dict().keys() == ref.state_dict().keys()
    assert {k: v.shape for k, v in mine.state_dict().items()} == \
        {k: v.shape for k, v in ref.state_dict().items()}
    mine.load_state_dict(ref.state_dict())
    x = torch.randn(3, c, 50, device=device)
    want = ref.double()(x.double())
    assert torch.allclose(mine(x).double(), want, rtol=1e-5, atol=1e-5)
    converted = dwconv.nn.DepthwiseConv1d.from_conv1d(ref.float())
    assert torch.allclose(converted(x).double(), want, rtol=1e-5, atol=1e-5)
    assert converted.weight is ref.weight


def test_module_initialisation_matches_conv1d():
    torch.manual_seed(3)
    ref = torch.nn.Conv1d(6, 6, 5, groups=6)
    torch.manual_seed(3)
    mine = dwconv.nn.DepthwiseConv1d(6, 6, 5, groups=6)
    assert torch.equal(mine.weight, ref.weight) and torch.equal(mine.bias, ref.bias)
    assert "kernel_size=(5,)" in repr(mine)


def test_no_allocation_besides_the_output(cuda):
    """A warm call allocates exactly its output on the GPU (no staging, no copies)."""
    x = torch.randn(2, 64, 1000, device=cuda).transpose(1, 2).contiguous().transpose(1, 2)
    w = torch.randn(64, 1, 3, device=cuda)
    dwconv.conv1d(x, w, padding=1)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    y = dwconv.conv1d(x, w, padding=1)
    after = torch.cuda.memory_stats()["allocation.all.allocated"]
    assert after - before == 1
    assert torch.equal(y.cpu(), dwconv.reference_conv1d(x.cpu(), w.cpu(), padding=1))


def test_ordered_on_the_current_stream(cuda):
    """Work queued on a side stream is finished before dwconv reads its result, and
    dwconv's output is ready for the next kernel on that stream (no synchronisation)."""
    side = torch.cuda.Stream()
    w = torch.randn(32, 1, 3, device=cuda)
    with torch.cuda.stream(side):
        for _ in range(3):
            x = torch.randn(4, 32, 1 << 16, device=cuda)
            x = x * 2 + 1  # kernels queued on the side stream only
            y = dwconv.conv1d(x, w, padding=1) + 0
            want = torch.nn.functional.conv1d(x, w, padding=1, groups=32)
    side.synchronize()
    assert torch.allclose(y, want, rtol=1e-5, atol=1e-4)


def test_cuda_graph_capture_and_replay(cuda):
    x = torch.randn(2, 16, 256, device=cuda)
    w = torch.randn(16, 1, 5, device=cuda)
    b = torch.randn(16, device=cuda)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        dwconv.conv1d(x, w, b, padding=2, activation="silu")  # warm-up: the plan
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = dwconv.conv1d(x, w, b, padding=2, activation="silu")
    for _ in range(2):
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        want = dwconv.reference_conv1d(x.cpu(), w.cpu(), b.cpu(), padding=2, activation="silu")
        assert torch.equal(y.cpu(), want)


def test_plan_cache_tells_calls_apart():
    """conv1d's eager plan cache keys on the call's own arguments: after a good call is
    cached, a call differing in one argument (options, weight layout, devices, out) gets
    its own plan, or its error."""
    gen, _ = seeded(7)
    x = exact((2, 6, 40), gen)
    w = exact((6, 1, 3), gen, 0.25)
    b = exact((6,), gen, 0.5)

    def want(padding, bias=None, stride=1, dilation=1):
        if not isinstance(padding, int):  # a symmetric (left, right) pair
            padding = padding[0]
        return F.conv1d(x.double(), w.double(), None if bias is None else bias.double(),
                        stride, padding, dilation, groups=6)

    for _ in range(2):  # the second round hits the cache (but for the list: unhashable)
        for kw in (dict(padding=1), dict(padding=2), dict(padding=[1, 1]), dict(padding=(2, 2)),
                   dict(padding=1, stride=2), dict(padding=1, dilation=2), dict(padding=0),
                   dict(padding=1, bias=b)):
            assert torch.equal(dwconv.conv1d(x, w, **kw).double(), want(**kw)), kw
    with pytest.raises(ValueError, match="weight must be contiguous"):
        dwconv.conv1d(x, w.squeeze(1).t().contiguous().t(), padding=1)
    with pytest.raises(ValueError, match="bias must be contiguous"):
        dwconv.conv1d(x, w, torch.zeros(12)[::2], padding=1)
    with pytest.raises(TypeError, match="stride must be an int"):
        dwconv.conv1d(x, w, padding=1, stride=1.5)
    with pytest.raises(ValueError, match="activation"):
        dwconv.conv1d(x, w, padding=1, activation="gelu")
    out = torch.empty(2, 40, 6).transpose(1, 2)  # out= with other strides than x's
    assert dwconv.conv1d(x, w, padding=1, out=out) is out
    assert torch.equal(out.double(), want(padding=1))
    with pytest.raises(ValueError, match="out has shape"):
        dwconv.conv1d(x, w, padding=1, out=torch.empty(2, 6, 41))


def test_output_is_a_plain_tensor():
    """Whatever the output's allocation (like x's, or strided), a plain tensor, as from
    a tensor subclass that keeps its type through torch functions."""
    class Sub(torch.Tensor):
        pass

    x = torch.randn(2, 4, 20).as_subclass(Sub)
    w = torch.randn(4, 1, 3)
    for padding in (1, 0):  # an output of x's shape and strides, and one shorter
        assert type(dwconv.conv1d(x, w, padding=padding)) is torch.Tensor
    assert type(dwconv.conv1d(x.as_subclass(torch.Tensor), w, padding=1)) is torch.Tensor


def test_stream_set_only_when_it_changes(monkeypatch):
    """The GPU path's stream handling, emulated on the cpu context: each call runs on the
    front end's current stream, and dwconv_context_set_stream is called only when that
    stream differs from the one last set (under the context's lock)."""
    from dwconv import _core, _lib
    from dwconv import _torch as T
    ctx = T.device(torch.device("cpu")).ctx
    calls, current = [], [0]

    def set_stream(handle, stream):
        assert ctx.lock.locked()
        calls.append(stream)
        return 0

    monkeypatch.setattr(_lib._lib, "dwconv_context_set_stream", set_stream)
    monkeypatch.setattr(ctx, "current_stream", lambda: current[0])
    try:
        x, w = torch.randn(1, 4, 32), torch.randn(4, 1, 3)
        for stream in (0, 0, 7, 7, 7, 9, 0, 0):
            current[0] = stream
            dwconv.conv1d(x, w, padding=1)              # the eager path (inlined)
            dwconv.conv1d(x, w, padding=1, stride=2)    # a strided output
            dwconv.conv1d_backward(torch.randn(1, 4, 32), x, w, padding=1)  # follow_stream
            assert ctx.stream == stream
        assert calls == [7, 9, 0]
    finally:
        ctx.stream = 0  # the real context was never moved off its NULL stream
