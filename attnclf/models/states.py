"""What Mohankumar et al. ("Towards Transparent and Explainable Attention Models", ACL 2020; code:
github.com/akashkm99/Interpretable-Attention) do to an RNN's hidden states so that attention over them
explains: the states of a plain RNN point nearly the same way (high conicity), so that any weighting of
them gives about the same pooled vector.

- `orthogonal_steps`: the Orthogonal RNN. At each step the cell's new state has its component along the
  mean of the earlier (orthogonalised) states removed before it goes on to the next step, as in their
  OrthoLSTM: h_t <- h_t - (h_t . m_t) / (m_t . m_t + 1e-6) m_t, m_t = (h_1 + ... + h_{t-1}) / t.
- `conicity`: the mean, over a review's real tokens, of |cos(h_t, the mean of its states)|; their Diversity
  RNN adds its mean over the batch, times a weight (0.5 in their runs), to the loss.
"""

from __future__ import annotations

import torch
from torch import nn

# their OrthoLSTM's epsilon, in the projection's denominator
EPS = 1e-6


def orthogonal_steps(rnn: nn.GRU | nn.LSTM, x: torch.Tensor) -> torch.Tensor:
    """x (B, T, D) -> the Orthogonal RNN's states (B, T, H), step by step with `rnn`'s own parameters (one
    layer, one direction) from a zero state. Padding must follow the real tokens: a state depends only on
    the steps before it, so a row's real positions are exact and the rest unspecified (as nn.GRU's)."""
    w_ih, w_hh, b_ih, b_hh = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
    B, T, _ = x.shape
    H = rnn.hidden_size
    # every step's input projection at once (B, T, gates * H): only the recurrent part is stepped
    xs = torch.addmm(b_ih, x.reshape(B * T, -1), w_ih.t()).view(B, T, -1)
    h = x.new_zeros(B, H)
    c = x.new_zeros(B, H) if isinstance(rnn, nn.LSTM) else None
    # the sum of the states so far
    total = x.new_zeros(B, H)
    out = []
    for t in range(T):
        hs = torch.addmm(b_hh, h, w_hh.t())  # (B, gates * H)
        # GRU: reset, update, new (PyTorch's gate order)
        if c is None:
            r, z, n = xs[:, t, :H], xs[:, t, H : 2 * H], xs[:, t, 2 * H :]
            r = torch.sigmoid(r + hs[:, :H])
            z = torch.sigmoid(z + hs[:, H : 2 * H])
            n = torch.tanh(n + r * hs[:, 2 * H :])
            h = (1 - z) * n + z * h
        # LSTM: input, forget, cell, output
        else:
            i, f, g, o = (xs[:, t] + hs).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        # (B, H); zero at the first step: nothing to remove
        mean = total / (t + 1)
        h = h - (h * mean).sum(-1, keepdim=True) / ((mean * mean).sum(-1, keepdim=True) + EPS) * mean
        total = total + h
        out.append(h)
    return torch.stack(out, dim=1)  # (B, T, H)


def conicity(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """states (B, T, D), mask (B, T) True on real tokens -> (B,): the mean over each review's real tokens of
    |cos(h_t, the mean of its real states)|. Near 1: the states point one way; near 0: spread out."""
    m = mask.unsqueeze(-1).to(states.dtype)  # (B, T, 1)
    n = m.sum(1).clamp_min(1)  # (B, 1)
    mean = (states * m).sum(1, keepdim=True) / n.unsqueeze(1)  # (B, 1, D)
    cos = torch.nn.functional.cosine_similarity(states, mean, dim=-1, eps=EPS).abs()  # (B, T)
    return (cos * m.squeeze(-1)).sum(1) / n.squeeze(-1)
