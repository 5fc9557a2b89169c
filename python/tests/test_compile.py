"""The torch operators under torch.compile (fullgraph: no graph breaks) and
torch.library.opcheck (schema, fake implementation, autograd registration)."""
import pytest
import torch

import dwconv
from conftest import exact, seeded


class Block(torch.nn.Module):
    """A small Mamba-style mixer: in_proj, a causal depthwise conv with silu (dwconv),
    a gate, out_proj."""

    def __init__(self, d=16, k=4):
        super().__init__()
        self.in_proj = torch.nn.Linear(d, 2 * d)
        self.conv = dwconv.nn.DepthwiseConv1d(d, d, k, groups=d, padding="causal",
                                              activation="silu")
        self.out_proj = torch.nn.Linear(d, d)

    def forward(self, u):  # u: (B, L, D)
        x, z = self.in_proj(u).chunk(2, dim=-1)
        x = self.conv(x.transpose(1, 2)).transpose(1, 2)  # channel slices, read in place
        return self.out_proj(x * torch.nn.functional.silu(z))


def test_compile_fullgraph_forward_and_backward(device):
    torch.manual_seed(0)
    model = Block().to(device)
    u = torch.randn(2, 33, 16, device=device)
    want = model(u)
    want.square().sum().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True)
    got = compiled(u)
    got.square().sum().backward()
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    for p, g in zip(model.parameters(), eager_grads):
        assert torch.allclose(p.grad, g, rtol=1e-4, atol=1e-5)


def test_compile_causal_functions(device):
    gen, _ = seeded(3)
    x = exact((2, 8, 20), gen, device=device)
    w = exact((8, 4), gen, 0.25, device=device)
    state = exact((2, 8, 3), gen, device=device)

    def step(x, w, state):
        y, final = dwconv.causal_conv1d_fn(x, w, initial_states=state,
                                           return_final_states=True, activation="silu")
        return y, dwconv.causal_conv1d_update(x[:, :, -1], final, w, activation="silu"), final

    want = step(x, w, state)
    got = torch.compile(step, fullgraph=True, backend="aot_eager")(x, w, state)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def test_opcheck():
    gen, _ = seeded(4)
    x = exact((2, 6, 30), gen).transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()
    w = exact((6, 1, 5), gen, 0.25).requires_grad_()
    b = exact((6,), gen).requires_grad_()
    torch.library.opcheck(torch.ops.dwconv.conv1d.default, (x, w, b, 2, 3, 1, 1, 1, 2))
    torch.library.opcheck(torch.ops.dwconv.conv1d.default, (x, w, None, 1, 4, 4, 2, 0, 0))
    w2 = exact((6, 4), gen, 0.25).requires_grad_()
    init = exact((2, 6, 3), gen).requires_grad_()
    torch.library.opcheck(torch.ops.dwconv.causal_conv1d_states.default,
                          (x.detach().contiguous().requires_grad_(), w2, b, init, True, 2))
    state = exact((3, 6, 5), gen)
    torch.library.opcheck(torch.ops.dwconv.causal_conv1d_update.default,
                          (exact((2, 6, 1), gen), state, w2.detach(), None, 0,
                           torch.tensor([3, 9], dtype=torch.int32),
                           torch.tensor([2, 0], dtype=torch.int32)))
