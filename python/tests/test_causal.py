"""causal_conv1d_fn and causal_conv1d_update against a float64 model of causal-conv1d's
documented semantics (models.causal_fn, models.causal_update): layouts, states, seq_idx,
the decode state as shift register or circular buffer, pools; gradients including
initial_states'; and chunked prefill + decode equal to one pass."""
import pytest
import torch

import dwconv
import models
from conftest import exact, seeded

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def channel_last(t):
    return t.transpose(1, 2).contiguous().transpose(1, 2)


def check(got, want, dtype, activation):
    got = got.double().cpu()
    if activation is None:
        assert torch.equal(got, want.to(dtype).double())
    else:  # silu: dwconv's exp, then the dtype's rounding
        ulp = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10,
               torch.bfloat16: 2.0 ** -7}[dtype]
        assert ((got - want).abs() <= 4 * ulp * want.abs() + 2.0 ** -20).all()


@pytest.mark.parametrize("seed", range(12))
def test_fn_against_model(device, seed):
    gen, rng = seeded(seed)
    dtype = DTYPES[seed % 3]
    b, dim, length, width = rng.randint(1, 3), rng.randint(1, 10), rng.randint(1, 40), \
        rng.choice([1, 2, 3, 4, 5, 9])
    activation = rng.choice([None, "silu", "swish"])
    x = exact((b, dim, length), gen, dtype=dtype, device=device)
    if seed % 2:
        x = channel_last(x)
    w = exact((dim, width), gen, 0.25, dtype=rng.choice([torch.float32, dtype]), device=device)
    bias = exact((dim,), gen, 0.5, dtype=w.dtype, device=device) if rng.random() < 0.7 else None
    init = exact((b, dim, width - 1), gen, dtype=dtype, device=device) if seed % 4 >= 2 else None
    if init is not None and seed % 3 == 0:
        init = channel_last(init)  # causal-conv1d's own states are channel-last
    want, want_final = models.causal_fn(x, w, bias, initial_states=init, activation=activation)

    out = dwconv.causal_conv1d_fn(x, w, bias, initial_states=init, activation=activation)
    check(out, want, dtype, activation)
    assert out.stride() == x.stride() or length == 1 or dim == 1

    out, final = dwconv.causal_conv1d_fn(x, w, bias, initial_states=init,
                                         return_final_states=True, activation=activation)
    check(out, want, dtype, activation)
    assert final.shape == (b, dim, width - 1) and torch.equal(final.double().cpu(), want_final)

    given = channel_last(torch.full((b, dim, width - 1), 7.0, dtype=dtype, device=device))
    out, final = dwconv.causal_conv1d_fn(x, w, bias, initial_states=init,
                                         return_final_states=True, final_states_out=given,
                                         activation=activation)
    assert final is given and torch.equal(given.double().cpu(), want_final)


@pytest.mark.parametrize("layout", ["ncl", "nlc"])
def test_fn_with_seq_idx(device, layout):
    gen, _ = seeded(7)
    b, dim, length, width = 2, 5, 30, 4
    x = exact((b, dim, length), gen, device=device)
    if layout == "nlc":
        x = channel_last(x)
    w = exact((dim, width), gen, 0.25, device=device)
    bias = exact((dim,), gen, device=device)
    seq_idx = torch.tensor([[0] * 7 + [1] * 2 + [2] * 21, [0] * 30], dtype=torch.int32,
                           device=device)
    want, _ = models.causal_fn(x, w, bias, seq_idx=seq_idx.cpu(), activation="silu")
    with torch.no_grad():
        out = dwconv.causal_conv1d_fn(x, w, bias, seq_idx=seq_idx, activation="silu")
    check(out, want, torch.float32, "silu")


def test_fn_plain_reads_slices_in_place(device):
    """Without states the call is a causal conv1d over any strides: a channel slice
    (Mamba-2's xBC) is read where it is."""
    gen, _ = seeded(8)
    wide = exact((2, 40, 24), gen, device=device)  # (batch, seqlen, channels)
    x = wide[:, :, 4:20].transpose(1, 2)
    w = exact((16, 4), gen, 0.25, device=device)
    want, _ = models.causal_fn(x, w, None, activation="silu")
    check(dwconv.causal_conv1d_fn(x, w, activation="silu"), want, torch.float32, "silu")


@pytest.mark.parametrize("with_states", [False, True])
@pytest.mark.parametrize("activation", [None, "silu"])
def test_fn_gradients(device, with_states, activation):
    gen, _ = seeded(21)
    b, dim, length, width = 2, 6, 150, 4
    x = channel_last(exact((b, dim, length), gen, device=device)).requires_grad_()
    w = exact((dim, width), gen, 0.25, device=device).requires_grad_()
    bias = exact((dim,), gen, 0.5, device=device).requires_grad_()
    init = exact((b, dim, width - 1), gen, device=device).requires_grad_() \
        if with_states else None
    leaves = [t for t in (x, w, bias, init) if t is not None]
    out = dwconv.causal_conv1d_fn(x, w, bias, initial_states=init,
                                  return_final_states=with_states, activation=activation)
    dy = exact((b, dim, length), gen, device=device)
    loss = (out[0] if with_states else out) * dy
    dfinal = exact((b, dim, width - 1), gen, device=device) if with_states else None
    if with_states:
        loss = loss.sum() + (out[1] * dfinal).sum()
    loss.sum().backward()

    leaves64 = [t.detach().double().cpu().requires_grad_() for t in leaves]
    x64, w64, b64 = leaves64[:3]
    i64 = leaves64[3] if with_states else None
    o64, f64 = models.causal_fn(x64, w64, b64, initial_states=i64, activation=activation)
    loss64 = (o64 * dy.double().cpu()).sum()
    if with_states:
        loss64 = loss64 + (f64 * dfinal.double().cpu()).sum()
    loss64.backward()
    if activation is not None:
        # silu: each gradient is a sum of at most n products of g (a few f32 roundings
        # from the exact silu') and an input: n roundings of the sum of magnitudes
        n = b * length + 16
        mags = [t.detach().abs().requires_grad_() for t in leaves64]
        mo, mf = models.causal_fn(mags[0], mags[1], mags[2],
                                  initial_states=mags[3] if with_states else None)
        mloss = (mo * dy.double().cpu().abs() * 1.1).sum()
        if with_states:
            mloss = mloss + (mf * dfinal.double().cpu().abs()).sum()
        mloss.backward()
    for i, (t, ref) in enumerate(zip(leaves, leaves64)):
        assert t.grad.shape == ref.grad.shape
        if activation is None:
            assert torch.equal(t.grad.double().cpu(), ref.grad)
        else:
            tol = n * 2.0 ** -23 * mags[i].grad
            assert ((t.grad.double().cpu() - ref.grad).abs() <= tol).all()


@pytest.mark.parametrize("seed", range(10))
def test_update_against_model(device, seed):
    gen, rng = seeded(100 + seed)
    dtype = DTYPES[seed % 3]
    b, dim, width = rng.randint(1, 4), rng.randint(1, 9), rng.choice([2, 3, 4, 5])
    seqlen = rng.choice([None, 1, 3])
    state_len = width - 1 + rng.choice([0, 0, 2, 5])
    circular, pooled = seed % 2 == 1, seed % 3 == 2
    pool = b + 3 if pooled else b
    state = exact((pool, dim, state_len), gen, dtype=dtype, device=device)
    x = exact((b, dim) if seqlen is None else (b, dim, seqlen), gen, dtype=dtype, device=device)
    if seqlen and seed % 4 == 3:
        x = channel_last(x)
    w = exact((dim, width), gen, 0.25, dtype=rng.choice([torch.float32, dtype]), device=device)
    bias = exact((dim,), gen, 0.5, dtype=w.dtype, device=device) if seed % 5 else None
    seqlens = torch.randint(0, 50, (b,), generator=gen, dtype=torch.int32).to(device) \
        if circular else None
    indices = None
    if pooled:
        slots = torch.randperm(pool, generator=gen)[:b].to(torch.int32)
        slots[0] = -1  # a padding entry: skipped
        indices = slots.to(device)
    activation = rng.choice([None, "silu"])
    want, want_state = models.causal_update(x, state, w, bias, activation, seqlens, indices)
    out = dwconv.causal_conv1d_update(x, state, w, bias, activation, seqlens, indices)
    assert out.shape == x.shape
    got = out if out.dim() == 3 else out[:, :, None]
    rows = [r for r in range(b) if indices is None or int(indices[r]) >= 0]
    check(got[rows], want[rows], dtype, activation)
    assert torch.equal(state.double().cpu(), want_state)


@pytest.mark.parametrize("layout", ["ncl", "nlc"])
def test_chunked_prefill_then_decode_equals_one_pass(device, layout):
    gen, _ = seeded(31)
    b, dim, length, width = 2, 8, 40, 4
    x = exact((b, dim, length), gen, device=device)
    if layout == "nlc":
        x = channel_last(x)
    w = exact((dim, width), gen, 0.25, device=device)
    bias = exact((dim,), gen, device=device)
    whole = dwconv.causal_conv1d_fn(x, w, bias, activation="silu")
    first, state = dwconv.causal_conv1d_fn(x[:, :, :17], w, bias, return_final_states=True,
                                           activation="silu")
    second, state = dwconv.causal_conv1d_fn(x[:, :, 17:30], w, bias, initial_states=state,
                                            return_final_states=True, activation="silu")
    state = state.contiguous()
    steps = [dwconv.causal_conv1d_update(x[:, :, t], state, w, bias, "silu")
             for t in range(30, length)]
    pieces = torch.cat([first, second, torch.stack(steps, dim=2)], dim=2)
    assert torch.equal(pieces, whole)
