"""Wrong devices, dtypes, shapes and layouts give clear exceptions naming the argument;
errors from the library carry dwconv_last_error() and its status; nothing is written."""
import pytest
import torch

import dwconv


def tensors(c=4, length=20, k=3, dtype=torch.float32, device="cpu"):
    return (torch.randn(2, c, length, dtype=dtype, device=device),
            torch.randn(c, 1, k, dtype=dtype, device=device))


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32])
def test_unsupported_dtype(dtype):
    x, w = tensors()
    with pytest.raises(TypeError, match=f"x is {dtype}.*float32, float16 and bfloat16"):
        dwconv.conv1d(x.to(dtype), w)


def test_weight_dtype_rules():
    x, w = tensors(dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="weight is float16, x is bfloat16"):
        dwconv.conv1d(x, w.half())
    with pytest.raises(TypeError, match="bias is bfloat16, weight is float32"):
        dwconv.conv1d(x, w.float(), torch.zeros(4, dtype=torch.bfloat16))


@pytest.mark.parametrize("x_shape,w_shape,match", [
    ((2, 4, 5, 6), (4, 1, 3), r"x must be 3-D"),
    ((2, 4, 20), (4, 2, 3), r"weight must be \(C, 1, K\) or \(C, K\)"),
    ((2, 4, 20), (5, 1, 3), r"weight has 5 channels, x has 4"),
])
def test_bad_shapes(x_shape, w_shape, match):
    with pytest.raises(ValueError, match=match):
        dwconv.conv1d(torch.randn(x_shape), torch.randn(w_shape))


def test_bad_bias_and_out():
    x, w = tensors()
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        dwconv.conv1d(x, w, torch.zeros(3))
    with pytest.raises(ValueError, match=r"out has shape \(2, 4, 20\), the output is \(2, 4, 18\)"):
        dwconv.conv1d(x, w, out=torch.empty(2, 4, 20))
    with pytest.raises(TypeError, match="out is float16"):
        dwconv.conv1d(x, w, out=torch.empty(2, 4, 18, dtype=torch.half))


def test_non_contiguous_inputs():
    x, w = tensors(c=3, k=3)
    with pytest.raises(ValueError, match="weight must be contiguous"):
        dwconv.conv1d(x, w[:, :, :].squeeze(1).t().contiguous().t())
    with pytest.raises(ValueError, match="bias must be contiguous"):
        dwconv.conv1d(x, w, torch.zeros(6)[::2])
    expanded = torch.randn(1, 3, 1).expand(2, 3, 20)
    with pytest.raises(ValueError, match="x has stride 0 in dimension 2.*expanded"):
        dwconv.conv1d(expanded, w)
    with pytest.raises(ValueError, match="conv_state must be contiguous"):
        dwconv.causal_conv1d_update(torch.randn(2, 3), torch.zeros(2, 6, 3)[:, ::2],
                                    torch.randn(3, 4))


def test_wrong_device_type():
    x, w = tensors()
    with pytest.raises(ValueError, match="tensors on meta are not supported"):
        dwconv.conv1d(x.to("meta"), w.to("meta"))


def test_mixed_devices(cuda):
    x, w = tensors()
    with pytest.raises(ValueError, match="weight is on cpu, x is on cuda:0"):
        dwconv.conv1d(x.cuda(), w)
    with pytest.raises(ValueError, match="bias is on cpu, x is on cuda:0"):
        dwconv.conv1d(x.cuda(), w.cuda(), torch.zeros(4))


def test_options():
    x, w = tensors()
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        dwconv.conv1d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode 'mirror'"):
        dwconv.conv1d(x, w, padding_mode="mirror")
    with pytest.raises(ValueError, match="activation 'gelu'"):
        dwconv.conv1d(x, w, activation="gelu")
    with pytest.raises(ValueError, match="stride must be >= 1"):
        dwconv.conv1d(x, w, stride=0)
    with pytest.raises(ValueError, match="activation 'relu'"):
        dwconv.causal_conv1d_fn(x, w.squeeze(1), activation="relu")


def test_library_errors_carry_its_message():
    x, w = tensors(length=5, k=3)
    with pytest.raises(dwconv.DwconvValueError) as info:
        dwconv.conv1d(x, w, padding=5, padding_mode="reflect")
    assert info.value.status_name == "DWCONV_ERROR_PADDING_TOO_LARGE"
    assert "dwconv_" in info.value.message and "reflect" in info.value.message
    with pytest.raises(dwconv.DwconvValueError, match="EMPTY_OUTPUT"):
        dwconv.conv1d(x, torch.randn(4, 1, 9))
    out = torch.full((2, 4, 20), 5.0)
    with pytest.raises(dwconv.DwconvValueError, match="ALIASING"):
        dwconv.conv1d(out, w, padding=1, out=out)


def test_nothing_written_on_error():
    x, w = tensors()
    out = torch.full((2, 4, 18), 5.0)
    with pytest.raises(TypeError):
        dwconv.conv1d(x, w, torch.zeros(4, dtype=torch.half), out=out)
    assert (out == 5).all()


def test_conv1d_backward_checks_its_arguments():
    """conv1d_backward (public, for hand-written backwards) checks the weight and bias
    as the forward does, also after a good call with the same x and dy was cached."""
    x, w = tensors(c=4, k=3)
    dy, b = torch.randn(2, 4, 20), torch.randn(4)
    for _ in range(2):
        dx, dw, db = dwconv.conv1d_backward(dy, x, w, b, padding=1)
        assert dx.shape == x.shape and dw.shape == w.shape and db.shape == b.shape
    with pytest.raises(ValueError, match="weight must be contiguous"):
        dwconv.conv1d_backward(dy, x, torch.randn(3, 4).t().unsqueeze(1), b, padding=1)
    with pytest.raises(ValueError, match="weight has 5 channels, x has 4"):
        dwconv.conv1d_backward(dy, x, torch.randn(5, 1, 3), padding=1)
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        dwconv.conv1d_backward(dy, x, w, torch.randn(3), padding=1)
    with pytest.raises(ValueError, match="bias must be contiguous"):
        dwconv.conv1d_backward(dy, x, w, torch.randn(8)[::2], padding=1)
    with pytest.raises(TypeError, match="bias is float16"):
        dwconv.conv1d_backward(dy, x, w, b.half(), padding=1)


def test_autograd_limits():
    x, w = tensors()
    with pytest.raises(RuntimeError, match="out= does not support automatic differentiation"):
        dwconv.conv1d(x.requires_grad_(), w, out=torch.empty(2, 4, 18))
    seq_idx = torch.zeros(2, 20, dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="seq_idx has no backward"):
        dwconv.causal_conv1d_fn(x, w.squeeze(1), seq_idx=seq_idx)


def test_causal_argument_errors():
    x, w = torch.randn(2, 4, 20), torch.randn(4, 3)
    with pytest.raises(ValueError, match="seq_idx or states"):
        dwconv.causal_conv1d_fn(x, w, seq_idx=torch.zeros(2, 20, dtype=torch.int32),
                                return_final_states=True)
    with pytest.raises(ValueError, match=r"initial_states must have shape \(2, 4, 2\)"):
        dwconv.causal_conv1d_fn(x, w, initial_states=torch.zeros(2, 4, 3))
    with pytest.raises(TypeError, match="seq_idx must be int32"):
        with torch.no_grad():
            dwconv.causal_conv1d_fn(x, w, seq_idx=torch.zeros(2, 20, dtype=torch.int64))
    state = torch.zeros(2, 4, 2)
    with pytest.raises(TypeError, match="cache_seqlens must be int32"):
        dwconv.causal_conv1d_update(x[:, :, 0], state, w,
                                    cache_seqlens=torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match="state_len 1, shorter than width - 1 = 2"):
        dwconv.causal_conv1d_update(x[:, :, 0], torch.zeros(2, 4, 1), w)
    with pytest.raises(ValueError, match="conv_state holds 1 states for a batch of 2"):
        dwconv.causal_conv1d_update(x[:, :, 0], torch.zeros(1, 4, 2), w)
    with pytest.raises(dwconv.DwconvValueError, match="pool"):
        dwconv.causal_conv1d_update(x[:, :, 0], state, w,
                                    conv_state_indices=torch.tensor([0, 5], dtype=torch.int32))
