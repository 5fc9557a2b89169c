"""The model and data of test_distributed.py, shared with ddp_worker.py: exact-sum
values (small integers times powers of two), so that every gradient is exact and the
two-process run must equal the single-process one bit for bit."""
import torch

import dwconv

CHANNELS, LENGTH, BATCH = 8, 96, 4


def _exact(shape, gen, scale):
    return torch.randint(-4, 5, shape, generator=gen).float() * scale


def model():
    gen = torch.Generator().manual_seed(0)
    m = torch.nn.Sequential(
        dwconv.nn.DepthwiseConv1d(CHANNELS, CHANNELS, 3, groups=CHANNELS, padding=1,
                                  activation="relu"),
        dwconv.nn.DepthwiseConv1d(CHANNELS, CHANNELS, 5, groups=CHANNELS, padding="same",
                                  padding_mode="reflect"),
        dwconv.nn.DepthwiseConv1d(CHANNELS, CHANNELS, 4, groups=CHANNELS, padding="causal",
                                  dilation=2, bias=False))
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(_exact(p.shape, gen, 0.25))
    return m


def batch():
    gen = torch.Generator().manual_seed(1)
    return _exact((BATCH, CHANNELS, LENGTH), gen, 1.0), _exact((BATCH, CHANNELS, LENGTH), gen, 1.0)


def loss(y, target):
    return (y * target).sum() / 1024  # a power of two: exact
