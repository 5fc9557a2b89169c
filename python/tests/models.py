"""Float64 models of the semantics, written apart from dwconv: F.conv1d after
F.pad for the padding modes, and causal-conv1d's documented behaviour position by
position. They run on the cpu in float64."""
import torch
import torch.nn.functional as F


def act64(z, activation):
    if activation in (None, "none"):
        return z
    if activation == "relu":
        return torch.relu(z)
    if activation in ("silu", "swish"):
        return z * torch.sigmoid(z)
    raise ValueError(activation)


def conv1d(x, weight, bias, stride, pad_left, pad_right, dilation, padding_mode, activation):
    """PyTorch's depthwise conv1d in float64, padding by nn.Conv1d's rule."""
    x = x.double().cpu()
    w = weight.double().cpu().reshape(weight.shape[0], 1, -1)
    b = None if bias is None else bias.double().cpu()
    if padding_mode == "zeros":
        xp = F.pad(x, (pad_left, pad_right))
    else:
        xp = F.pad(x, (pad_left, pad_right), mode=padding_mode)
    y = F.conv1d(xp, w, b, stride=stride, dilation=dilation, groups=x.shape[1])
    return act64(y, activation)


def causal_fn(x, weight, bias=None, seq_idx=None, initial_states=None, activation=None):
    """causal_conv1d_fn: out[b, c, t] = act(bias[c] + sum_k w[c, k] * h[b, c, t + k -
    (W - 1)]) where h is initial_states (zeros when None) followed by x; with seq_idx, a
    tap that reaches a position of another sequence (or before the row) reads 0.
    Returns (out, final_states) with final_states the last W - 1 entries of h."""
    x = x.double().cpu()
    w = weight.double().cpu().reshape(weight.shape[0], -1)
    bsz, dim, length = x.shape
    width = w.shape[1]
    init = torch.zeros(bsz, dim, width - 1, dtype=torch.float64) if initial_states is None \
        else initial_states.double().cpu()
    h = torch.cat([init, x], dim=2)
    out = torch.zeros(bsz, dim, length, dtype=torch.float64)
    for t in range(length):
        acc = torch.zeros(bsz, dim, dtype=torch.float64)
        for k in range(width):
            src = t + k - (width - 1)
            tap = h[:, :, src + width - 1]
            if seq_idx is not None:
                if src < 0:
                    continue
                same = (seq_idx[:, src] == seq_idx[:, t]).double().cpu()[:, None]
                tap = tap * same
            acc = acc + w[:, k] * tap
        out[:, :, t] = acc
    if bias is not None:
        out = out + bias.double().cpu()[None, :, None]
    return act64(out, activation), h[:, :, h.shape[2] - (width - 1):]


def causal_update(x, conv_state, weight, bias=None, activation=None, cache_seqlens=None,
                  conv_state_indices=None):
    """causal_conv1d_update's documented behaviour: the state is a shift register
    (newest last), or with cache_seqlens a circular buffer written at cache_seqlens
    % state_len; conv_state_indices picks pool slots, a negative one skips the row.
    Returns (out (B, C, T) float64 with NaN on skipped rows, the new state pool)."""
    x = x.double().cpu()
    if x.dim() == 2:
        x = x[:, :, None]
    state = conv_state.double().cpu().clone()
    w = weight.double().cpu().reshape(weight.shape[0], -1)
    bsz, dim, seqlen = x.shape
    width, state_len = w.shape[1], state.shape[2]
    out = torch.full((bsz, dim, seqlen), float("nan"), dtype=torch.float64)
    for b in range(bsz):
        slot = b if conv_state_indices is None else int(conv_state_indices[b])
        if slot < 0:
            continue
        s = state[slot]
        if cache_seqlens is None:
            hist = torch.cat([s, x[b]], dim=1)  # (dim, state_len + seqlen)
            state[slot] = hist[:, hist.shape[1] - state_len:]
            window = hist[:, hist.shape[1] - seqlen - (width - 1):]
        else:
            n = int(cache_seqlens[b])
            prev = [s[:, (n - (width - 1) + j) % state_len].clone() for j in range(width - 1)]
            for t in range(seqlen):
                s[:, (n + t) % state_len] = x[b, :, t]
            window = torch.cat([torch.stack(prev, 1) if prev else x[b, :, :0], x[b]], dim=1)
        for t in range(seqlen):
            acc = (window[:, t:t + width] * w).sum(1)
            if bias is not None:
                acc = acc + bias.double().cpu()
            out[b, :, t] = acc
    return act64(out, activation), state
