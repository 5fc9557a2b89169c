"""NumPy arrays (with and without torch installed) and DLPack producers through the
same functions, answered in kind, with no copies of the inputs."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

np = pytest.importorskip("numpy")  # check_python.sh requires it; a bare pytest may not

import dwconv
from conftest import exact, seeded


def test_numpy_conv1d_matches_torch():
    gen, _ = seeded(1)
    x = exact((2, 6, 50), gen).numpy()
    w = exact((6, 1, 3), gen, 0.25).numpy()
    b = exact((6,), gen).numpy()
    y = dwconv.conv1d(x, w, b, padding="same", activation="relu")
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    want = dwconv.conv1d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                         padding="same", activation="relu")
    assert np.array_equal(y, want.numpy())


def test_numpy_layouts_out_and_float16():
    gen, _ = seeded(2)
    nlc = exact((2, 40, 8), gen).numpy().astype(np.float16)  # (B, L, C)
    x = nlc.transpose(0, 2, 1)
    w = exact((8, 4), gen, 0.25).numpy()
    y = dwconv.conv1d(x, w, padding=(3, 0))
    assert y.dtype == np.float16 and y.strides == (40 * 8 * 2, 2, 8 * 2)  # channel-last out
    out = np.full((2, 8, 40), np.nan, np.float16)
    assert dwconv.conv1d(x, w, padding="causal", out=out) is out
    assert np.array_equal(out, y)
    ref = dwconv.reference_conv1d(np.ascontiguousarray(x), w, padding="causal")
    assert np.array_equal(ref, y)
    with pytest.raises(TypeError, match="pass NumPy arrays for all of them"):
        dwconv.conv1d(x, torch.from_numpy(w))


def test_numpy_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    gen, _ = seeded(3)
    x = exact((1, 4, 30), gen).numpy().astype(ml_dtypes.bfloat16)
    w = exact((4, 1, 3), gen, 0.25).numpy()
    y = dwconv.conv1d(x, w, padding=1)
    assert y.dtype == ml_dtypes.bfloat16
    t = dwconv.conv1d(torch.from_numpy(x.view(np.int16)).view(torch.bfloat16),
                      torch.from_numpy(w), padding=1)
    assert np.array_equal(y.view(np.int16), t.view(torch.int16).numpy())


def test_numpy_causal_functions():
    gen, _ = seeded(4)
    x = exact((2, 5, 12), gen).numpy()
    w = exact((5, 4), gen, 0.25).numpy()
    out, final = dwconv.causal_conv1d_fn(x, w, return_final_states=True, activation="silu")
    assert isinstance(out, np.ndarray) and isinstance(final, np.ndarray)
    state = final.copy()
    step = dwconv.causal_conv1d_update(x[:, :, -1], state, w, activation="silu")
    assert isinstance(step, np.ndarray) and step.shape == (2, 5)
    # updated in place through the view: shifted by one, the new token last
    assert np.array_equal(state, np.concatenate([final[:, :, 1:], x[:, :, -1:]], axis=2))


class Producer:
    """A DLPack producer that is not a torch tensor (as a CuPy or JAX array is), with
    the array API's namespace (NumPy's) to hand results back."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __array_namespace__(self, api_version=None):
        return np


def test_dlpack_producer():
    gen, _ = seeded(5)
    x = exact((2, 3, 16), gen).numpy()
    w = exact((3, 1, 3), gen, 0.25).numpy()
    y = dwconv.conv1d(Producer(x), Producer(w), padding=1)
    assert isinstance(y, np.ndarray) and np.array_equal(y, dwconv.conv1d(x, w, padding=1))
    t = dwconv.from_dlpack(Producer(x))
    assert isinstance(t, torch.Tensor) and t.data_ptr() == x.__array_interface__["data"][0]


def test_numpy_without_torch(tmp_path):
    """conv1d takes NumPy arrays in a Python where torch cannot be imported."""
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # import torch now fails
        import numpy as np, dwconv
        x = np.arange(2 * 3 * 10, dtype=np.float32).reshape(2, 3, 10) % 5
        w = np.full((3, 1, 3), 0.5, np.float32)
        y = dwconv.conv1d(x, w, padding=1)
        want = dwconv.reference_conv1d(x, w, padding=1)
        assert np.array_equal(y, want), (y, want)
        try:
            dwconv.causal_conv1d_fn(x, w[:, 0])
        except ImportError as e:
            print("ok:", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=os.environ.copy(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok: dwconv: this function needs torch" in r.stdout
