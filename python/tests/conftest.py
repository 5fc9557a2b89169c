"""Shared fixtures: the devices to run on (cpu, and cuda when torch sees a GPU), seeded
generators, and inputs whose float32 sums are exact (small integers times powers of
two), so that a float64 model gives the exact answer and any difference is a bug."""
import os
import random
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_report_header(config):
    import dwconv
    return (f"dwconv {dwconv.library_version()} from {dwconv.library_path()}; torch "
            f"{torch.__version__}; devices {DEVICES}")


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    return "cuda"


def exact(shape, gen, scale=1.0, lo=-4, hi=4, dtype=torch.float32, device="cpu"):
    """Integers in [lo, hi] times scale (a power of two): exact in every dtype, and so
    are their float32 products and sums of moderate length."""
    t = torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(torch.float64)
    return (t * scale).to(dtype=dtype, device=device)


def seeded(seed):
    gen = torch.Generator().manual_seed(seed)
    return gen, random.Random(seed)
