"""Multi-head scaled dot-product attention (Vaswani et al. 2017) as a pooling: H heads, each over projections
of size d/H, their contexts concatenated and projected back to the values' size."""

from __future__ import annotations

import math

import torch
from torch import nn

from attnclf.errors import AttnclfError
from attnclf.models.attention import Attention, AttentionShape, masked_weights


class MultiHeadAttention(Attention):
    """For each head h: softmax(Q_h K_h^T / sqrt(d/H)) V_h, with Q_h, K_h, V_h the h-th d/H slices of W_q q,
    W_k k and W_v v; the heads' contexts concatenated (d) and projected by W_o to the values' size.

    d = model.attention_dim (default: the keys' size). The weights shown and measured are the mean of the
    heads' rows (`rows`: each head's, (B, H, Tq, Tk)); given weights (`pool`) stand for every head's.
    """

    name = "multihead"

    def __init__(self, shape: AttentionShape, heads: int = 4):
        super().__init__(shape)
        d = shape.key_dim if shape.dim is None else shape.dim
        if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1 or d % heads:
            raise AttnclfError(
                f"attention.heads={heads!r} must be a whole number >= 1 that divides the attention's size {d} "
                "(model.attention_dim, or the encoder's output 2 x model.hidden_dim)"
            )
        self.heads, self.head_dim = heads, d // heads
        self.q_proj = nn.Linear(shape.query_dim, d)
        self.k_proj = nn.Linear(shape.key_dim, d)
        self.v_proj = nn.Linear(shape.key_dim, d)
        self.o_proj = nn.Linear(d, shape.key_dim)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, H, T, d/H)."""
        return x.view(x.size(0), x.size(1), self.heads, self.head_dim).transpose(1, 2)

    def forward(self, query, keys, values, mask=None):
        B, Tq, Tk = query.size(0), query.size(1), keys.size(1)
        q = self.split(self.q_proj(query))  # (B, H, Tq, d/H)
        if Tq < Tk:
            # fewer queries than keys (pooling: one): bring each head's query into key space and pool the values
            # before projecting them, rather than project every key and value (as dot attention does)
            scores, pool = self.pooled_scores(q, keys), self.pooled_values
        else:
            scores = q @ self.split(self.k_proj(keys)).transpose(-1, -2)  # (B, H, Tq, Tk)
            pool = self.projected_values
        scores = scores / math.sqrt(self.head_dim)
        # every head's rows normalised under the review's mask: (B, H*Tq, Tk)
        rows = masked_weights(scores.reshape(B, -1, Tk), mask, self.normalizer).view(B, self.heads, Tq, Tk)
        self.rows = rows.detach()
        context = pool(rows, values).transpose(1, 2).reshape(B, Tq, -1)  # (B, Tq, d)
        # (B, Tq, Dv), (B, Tq, Tk): each head's rows are 0 on padding, so their mean is too
        return self.o_proj(context), rows.mean(1)

    def pooled_scores(self, q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """q_h . (W_k,h k + b_k,h) = (q_h W_k,h) . k + q_h . b_k,h: (B, H, Tq, d/H), (B, Tk, Dk) -> (B, H, Tq, Tk)."""
        w = self.k_proj.weight.view(self.heads, self.head_dim, -1)  # (H, d/H, Dk)
        qk = torch.einsum("bhqe,hek->bhqk", q, w)  # (B, H, Tq, Dk)
        shift = (q * self.k_proj.bias.view(self.heads, 1, self.head_dim)).sum(-1, keepdim=True)  # (B, H, Tq, 1)
        B, H, Tq, Dk = qk.shape
        # one (B, H*Tq, Dk) x (B, Dk, Tk) product: no copy of the keys for each head
        return torch.bmm(qk.reshape(B, H * Tq, Dk), keys.transpose(1, 2)).view(B, H, Tq, -1) + shift

    def pooled_values(self, rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """sum_t w_t (W_v,h v_t + b_v,h) = W_v,h (sum_t w_t v_t) + (sum_t w_t) b_v,h: (B, H, Tq, d/H)."""
        B, H, Tq, Tk = rows.shape
        pooled = torch.bmm(rows.reshape(B, H * Tq, Tk), values).view(B, H, Tq, -1)  # (B, H, Tq, Dv)
        w = self.v_proj.weight.view(self.heads, self.head_dim, -1)  # (H, d/H, Dv)
        bias = self.v_proj.bias.view(self.heads, 1, self.head_dim)
        return torch.einsum("bhqv,hev->bhqe", pooled, w) + rows.sum(-1, keepdim=True) * bias

    def projected_values(self, rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return rows @ self.split(self.v_proj(values))  # (B, H, Tq, d/H)

    def pool(self, weights, values):
        # the same weights for every head: the heads' contexts are then slices of w @ W_v v
        return self.o_proj(torch.bmm(weights.to(values.dtype), self.v_proj(values)))  # (B, Tq, Dv)
