"""Lin et al.'s (2017, "A Structured Self-attentive Sentence Embedding") r hops of attention over the
tokens, kept apart by a penalty in the loss."""

from __future__ import annotations

import math

import torch
from torch import nn

from attnclf.errors import AttnclfError
from attnclf.models.attention import Attention, AttentionShape, masked_weights

# d_a, the tanh layer's width, where model.attention_dim does not set it (theirs)
UNITS = 350


class StructuredAttention(Attention):
    """A = softmax(W_2 tanh(W_1 H^T)) (r, T): r rows of weights over the tokens H, asking no query (both query
    forms give the same); the r contexts A H concatenated (r x Dv), as Lin et al. feed them to their classifier,
    so that each hop can carry a different part of the review.

    W_1 (d_a, Dk) and W_2 (r, d_a) without bias, d_a = model.attention_dim (default 350). The penalty
    ||A A^T - I||_F^2 keeps the hops apart; as the authors' code computes it (github.com/hantek/
    SelfAttentiveSentEmbed), divided by r^2 (the mean over the matrix's entries) and averaged over the batch,
    times `penalty` (their coefficient: 1.0). The weights shown and measured are the hops' mean; given
    weights (`pool`) stand for every hop's.
    """

    name = "structured"

    def __init__(self, shape: AttentionShape, hops: int = 30, penalty: float = 1.0):
        super().__init__(shape)
        if not isinstance(hops, int) or isinstance(hops, bool) or hops < 1:
            raise AttnclfError(f"attention.hops={hops!r} must be a whole number >= 1")
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not 0 <= penalty < math.inf:
            raise AttnclfError(f"attention.penalty={penalty!r} must be a number >= 0")
        units = UNITS if shape.dim is None else shape.dim
        self.hops, self.coefficient = hops, float(penalty)
        self.w1 = nn.Linear(shape.key_dim, units, bias=False)
        self.w2 = nn.Linear(units, hops, bias=False)
        self.out_dim = hops * shape.key_dim
        self.last_penalty: torch.Tensor | None = None

    def forward(self, query, keys, values, mask=None):
        B, Tq = query.size(0), query.size(1)
        scores = self.w2(torch.tanh(self.w1(keys))).transpose(1, 2)  # (B, r, Tk)
        a = masked_weights(scores, mask, self.normalizer)  # (B, r, Tk)
        self.rows = a.detach().unsqueeze(2).expand(-1, -1, Tq, -1)  # (B, r, Tq, Tk)
        # the penalty is the training loss's only: not computed to evaluate or explain
        self.last_penalty = None
        if self.training and self.coefficient:
            eye = torch.eye(self.hops, device=a.device, dtype=a.dtype)
            self.last_penalty = (a @ a.transpose(1, 2) - eye).square().mean()
        context = (a @ values).reshape(B, 1, -1).expand(-1, Tq, -1)  # (B, Tq, r*Dv)
        # (B, Tq, r*Dv), (B, Tq, Tk): each hop's row is 0 on padding, so their mean is too
        return context, a.mean(1, keepdim=True).expand(-1, Tq, -1)

    def pool(self, weights, values):
        return torch.bmm(weights.to(values.dtype), values).repeat(1, 1, self.hops)  # (B, Tq, r*Dv)

    def penalty(self):
        return None if self.last_penalty is None else self.coefficient * self.last_penalty
