"""Luong, Pham & Manning's (2015) "general" attention: the bilinear score q^T W k."""

from __future__ import annotations

import math

import torch
from torch import nn

from attnclf.models.attention import Attention, AttentionShape


class GeneralAttention(Attention):
    """score(q, k) = q^T W k, W a (Dq, Dk) matrix without bias; softmax (or the sparse normalisers) over the
    tokens, the values pooled as they are.

    Luong et al. do not scale the score; `scale=True` divides it by sqrt(Dk), as dot attention does. With a
    learned query, q^T W is one learned vector: the score is then Jain & Wallace's dot form, w . k.
    """

    name = "general"

    def __init__(self, shape: AttentionShape, scale: bool = False):
        super().__init__(shape)
        # W, stored as a Linear from keys to queries: W k is self.w(k)
        self.w = nn.Linear(shape.key_dim, shape.query_dim, bias=False)
        self.scale = 1.0 / math.sqrt(shape.key_dim) if scale else 1.0

    def scores(self, query, keys):
        # q^T W (B, Tq, Dk) first: one query against many keys costs B*Tq*Dq*Dk, not B*Tk*Dk*Dq
        qw = query @ self.w.weight
        return torch.bmm(qw, keys.transpose(1, 2)) * self.scale  # (B, Tq, Tk)
