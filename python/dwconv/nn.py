"""dwconv.nn.DepthwiseConv1d: nn.Conv1d(C, C, K, groups=C, ...) through dwconv."""
import math

import torch
from torch import nn

from .ops import conv1d


class DepthwiseConv1d(nn.Module):
    """A drop-in for ``nn.Conv1d(C, C, K, groups=C, ...)``: the same arguments, the
    same parameters (weight (C, 1, K), bias (C,)), the same initialisation and
    state_dict, plus ``padding="causal"`` and a fused ``activation`` (None, "relu",
    "silu"). ``DepthwiseConv1d(C, kernel_size=K)`` is the short form."""

    def __init__(self, in_channels, out_channels=None, kernel_size=None, stride=1, padding=0,
                 dilation=1, groups=None, bias=True, padding_mode="zeros", device=None,
                 dtype=None, activation=None):
        super().__init__()
        out_channels = in_channels if out_channels is None else out_channels
        groups = in_channels if groups is None else groups
        if not (in_channels == out_channels == groups):
            raise ValueError("dwconv.nn.DepthwiseConv1d is depthwise: in_channels, "
                             f"out_channels and groups must be equal (got {in_channels}, "
                             f"{out_channels}, {groups})")
        if kernel_size is None:
            raise TypeError("dwconv.nn.DepthwiseConv1d: kernel_size is required")
        as_tuple = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,)
        self.in_channels = self.out_channels = self.groups = in_channels
        self.kernel_size = as_tuple(kernel_size)
        self.stride, self.dilation = as_tuple(stride), as_tuple(dilation)
        self.padding = padding if isinstance(padding, str) else as_tuple(padding)
        self.padding_mode, self.activation = padding_mode, activation
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(in_channels, 1, self.kernel_size[0], **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(in_channels, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # nn.Conv1d's: kaiming_uniform(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.weight.shape[1] * self.weight.shape[2])
            nn.init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_conv1d(cls, conv, activation=None):
        """The dwconv module equal to a depthwise nn.Conv1d, sharing its parameters."""
        module = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                     conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                     conv.padding_mode, device=conv.weight.device, dtype=conv.weight.dtype,
                     activation=activation)
        module.weight, module.bias = conv.weight, conv.bias
        return module

    def forward(self, x):
        return conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.padding_mode, self.activation)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, padding={self.padding}, groups={self.groups}")
        if self.dilation != (1,):
            s += f", dilation={self.dilation}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        if self.activation is not None:
            s += f", activation={self.activation!r}"
        return s
