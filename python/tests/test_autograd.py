"""Autograd through dwconv's backward: gradients against torch's autograd of F.conv1d
in float64 (exact on exact-sum inputs without an activation or with relu; within a
bound derived from the sums' lengths with silu), gradcheck on exact inputs, and the
gradients' dtypes (the parameter's)."""
import pytest
import torch

import dwconv
import models
from conftest import exact, seeded
from test_conv1d import make_x

OPTIONS = [
    dict(k=3, stride=1, padding=1, dilation=1, mode="zeros"),
    dict(k=4, stride=2, padding=(3, 1), dilation=1, mode="zeros"),
    dict(k=5, stride=1, padding="same", dilation=2, mode="reflect"),
    dict(k=3, stride=3, padding=2, dilation=1, mode="replicate"),
    dict(k=2, stride=1, padding="causal", dilation=3, mode="circular"),
    dict(k=31, stride=1, padding=15, dilation=1, mode="zeros"),
]


def pads(o):
    span = o["dilation"] * (o["k"] - 1)
    p = o["padding"]
    if p == "same":
        return span // 2, span - span // 2
    if p == "causal":
        return span, 0
    return (p, p) if isinstance(p, int) else p


def grads_of(fn, tensors, dy):
    for t in tensors:
        t.grad = None
    fn().backward(dy)
    return [t.grad for t in tensors]


@pytest.mark.parametrize("o", OPTIONS, ids=lambda o: f"k{o['k']}s{o['stride']}{o['mode']}")
@pytest.mark.parametrize("activation", [None, "relu", "silu"])
@pytest.mark.parametrize("layout", ["ncl", "nlc", "slice"])
def test_gradients_against_float64(device, o, activation, layout):
    gen, _ = seeded(hash((o["k"], o["stride"], str(activation), layout)) % 1000)
    b, c, length = 2, 6, 140  # rows longer than one 64-output chunk of dweight
    x = make_x((b, c, length), layout, gen, torch.float32, device).requires_grad_()
    w = exact((c, 1, o["k"]), gen, 0.25, device=device).requires_grad_()
    bias = exact((c,), gen, 0.5, device=device).requires_grad_()
    args = dict(stride=o["stride"], padding=o["padding"], dilation=o["dilation"],
                padding_mode=o["mode"], activation=activation)
    y = dwconv.conv1d(x, w, bias, **args)
    dy = exact(y.shape, gen, device=device)
    got = grads_of(lambda: dwconv.conv1d(x, w, bias, **args), (x, w, bias), dy)

    x64, w64, b64 = (t.detach().double().cpu().requires_grad_() for t in (x, w, bias))
    left, right = pads(o)
    f64 = lambda: models.conv1d(x64, w64, b64, o["stride"], left, right, o["dilation"],
                                o["mode"], activation)
    want = grads_of(f64, (x64, w64, b64), dy.double().cpu())
    for name, g, ref in zip(("dx", "dweight", "dbias"), got, want):
        assert g.dtype == torch.float32 and g.shape == ref.shape, name
        g = g.double().cpu()
        if activation == "silu":
            # every gradient is a sum of at most n products of g (within a few f32
            # roundings of the exact silu') and an input: bound by n roundings of the
            # sum of magnitudes, n = the longest accumulation (the batch's outputs)
            n = b * y.shape[2] + 16
            xa, wa, ba = (t.detach().abs().requires_grad_() for t in (x64, w64, b64))
            mag = grads_of(lambda: models.conv1d(xa, wa, ba, o["stride"], left, right,
                                                 o["dilation"], o["mode"], None),
                           (xa, wa, ba), dy.double().cpu().abs() * 1.1)
            tol = n * 2.0 ** -23 * mag[("dx", "dweight", "dbias").index(name)] + 1e-30
            assert ((g - ref).abs() <= tol).all(), name
        else:
            assert torch.equal(g, ref), name


@pytest.mark.parametrize("o", OPTIONS[:5], ids=lambda o: f"k{o['k']}{o['mode']}")
def test_gradcheck_exact(o):
    """gradcheck in float32 with no tolerance: the function is linear and the inputs,
    the step (1/16) and every sum are exact, so finite differences are exact too."""
    gen, _ = seeded(o["k"])
    x = exact((2, 3, 20), gen, 0.5).requires_grad_()
    w = exact((3, 1, o["k"]), gen, 0.25).requires_grad_()
    bias = exact((3,), gen, 0.5).requires_grad_()
    fn = lambda x, w, b: dwconv.conv1d(x, w, b, stride=o["stride"], padding=o["padding"],
                                       dilation=o["dilation"], padding_mode=o["mode"])
    with pytest.warns(UserWarning):  # gradcheck's warning about non-double inputs
        assert torch.autograd.gradcheck(fn, (x, w, bias), eps=1 / 16, atol=0, rtol=0,
                                        nondet_tol=0)


@pytest.mark.parametrize("dtype,weight_dtype", [(torch.bfloat16, torch.bfloat16),
                                                (torch.bfloat16, torch.float32),
                                                (torch.float16, torch.float16)])
def test_gradient_dtypes_are_the_parameters(device, dtype, weight_dtype):
    gen, _ = seeded(11)
    x = exact((2, 4, 33), gen, dtype=dtype, device=device).requires_grad_()
    w = exact((4, 1, 3), gen, 0.25, dtype=weight_dtype, device=device).requires_grad_()
    bias = exact((4,), gen, dtype=weight_dtype, device=device).requires_grad_()
    y = dwconv.conv1d(x, w, bias, padding=1)
    y.backward(exact(y.shape, gen, dtype=dtype, device=device))
    assert x.grad.dtype == dtype
    assert w.grad.dtype == weight_dtype and bias.grad.dtype == weight_dtype


def test_only_the_needed_gradients(device):
    gen, _ = seeded(12)
    x = exact((1, 4, 20), gen, device=device)
    w = exact((4, 3), gen, 0.25, device=device).requires_grad_()
    y = dwconv.conv1d(x, w, padding=1)
    y.sum().backward()  # an expanded (stride 0) gradient
    assert x.grad is None and w.grad.shape == (4, 3)
    want = models.conv1d(x, w.detach(), None, 1, 1, 1, 1, "zeros", None)
    w64 = w.detach().double().cpu().requires_grad_()
    models.conv1d(x, w64, None, 1, 1, 1, 1, "zeros", None).sum().backward()
    assert want.shape == y.shape and torch.equal(w.grad.double().cpu(), w64.grad)


def test_module_trains(device):
    torch.manual_seed(0)
    m = dwconv.nn.DepthwiseConv1d(8, 8, 3, groups=8, padding=1, activation="silu").to(device)
    ref = torch.nn.Conv1d(8, 8, 3, groups=8, padding=1).to(device)
    ref.load_state_dict(m.state_dict())
    x = torch.randn(4, 8, 64, device=device)
    m(x).square().sum().backward()
    torch.nn.functional.silu(ref(x)).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-4)
