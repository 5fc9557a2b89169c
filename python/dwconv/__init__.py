"""dwconv: depthwise 1D convolution (nn.Conv1d with groups == channels) for PyTorch,
NumPy and DLPack producers, over the C library libdwconv through ctypes.

    import dwconv
    y = dwconv.conv1d(x, weight, bias, padding="same", activation="silu")
    layer = dwconv.nn.DepthwiseConv1d(C, C, K, groups=C, padding=K // 2)
    out = dwconv.causal_conv1d_fn(x, weight, bias, activation="silu")

No compiled extension: any torch >= 2.4 (or none, for NumPy) works with any
libdwconv of API 0.2 or later. See docs/python.md.
"""
from ._lib import (DwconvError, DwconvUnsupportedError, DwconvValueError,
                   LibraryNotFoundError, library_path)

__version__ = "0.2.0"
__all__ = ["conv1d", "causal_conv1d_fn", "causal_conv1d_update", "from_dlpack",
           "reference_conv1d", "library_version", "library_path", "DwconvError",
           "DwconvValueError", "DwconvUnsupportedError", "LibraryNotFoundError"]

try:
    import torch as _torch_module  # noqa: F401 (the torch functions need it)
except ImportError:  # NumPy only: conv1d and reference_conv1d still work
    _torch_module = None

if _torch_module is not None:
    from . import nn
    from .causal import causal_conv1d_fn, causal_conv1d_update
    from .ops import conv1d, conv1d_backward
else:
    from ._interop import conv1d as _conv1d_numpy

    def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, padding_mode="zeros",
               activation=None, out=None):
        """dwconv.conv1d on NumPy arrays (torch is not installed); see docs/python.md."""
        return _conv1d_numpy(x, weight, bias, stride, padding, dilation, padding_mode,
                             activation, out)

    def _needs_torch(*args, **kwargs):
        raise ImportError("dwconv: this function needs torch (pip install torch)")

    causal_conv1d_fn = causal_conv1d_update = conv1d_backward = _needs_torch

from ._interop import from_dlpack
from ._reference import reference_conv1d


def library_version():
    """The loaded libdwconv's version string, e.g. "0.2.0"."""
    from . import _lib
    return _lib.load().dwconv_version_string().decode()
