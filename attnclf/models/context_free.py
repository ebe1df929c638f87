"""Wiegreffe & Pinter's diagnostic model (2019, "Attention is not not Explanation"; code: github.com/sarahwie/
attention): no context at all. Each token alone goes through an affine layer and tanh (an MLP over the
embedding), the tokens are pooled by weights, and a linear layer classifies the pooled vector. Whether given
weights help such a model (against uniform ones) says whether they carry what matters in the review.

The weights come from outside (`forward(..., weights)`: uniform, or another model's attention, held fixed), or
from an attention of its own (`learned=True`: v^T tanh(W h + b) over each token alone, as their baseline).
"""

from __future__ import annotations

import torch
from torch import nn

from attnclf.models.attention import masked_softmax
from attnclf.models.classifier import real_tokens
from attnclf.models.names import PAD_ID


class ContextFreeClassifier(nn.Module):
    def __init__(self, vocab_size: int, num_classes: int, embed_dim: int, hidden_dim: int, learned: bool = False):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_ID)
        # each token alone: no context
        self.token = nn.Linear(embed_dim, hidden_dim)
        self.score = (
            nn.Sequential(nn.Linear(hidden_dim, hidden_dim // 2), nn.Tanh(), nn.Linear(hidden_dim // 2, 1, bias=False))
            if learned
            else None
        )
        self.fc = nn.Linear(hidden_dim, num_classes)

    def forward(
        self, ids: torch.Tensor, lengths: torch.Tensor, weights: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids (B, T), lengths (B,), weights (B, T) or None (its own attention, or uniform without one) ->
        logits (B, C), the weights pooled with (B, T)."""
        h = torch.tanh(self.token(self.embed(ids)))  # (B, T, H)
        mask = real_tokens(h, lengths)  # (B, T)
        if weights is None and self.score is not None:
            weights = masked_softmax(self.score(h).transpose(1, 2), mask).squeeze(1)  # (B, T)
        elif weights is None:
            # uniform over the real tokens
            weights = mask.float() / mask.sum(-1, keepdim=True)
        context = torch.bmm(weights.unsqueeze(1).to(h.dtype), h).squeeze(1)  # (B, H)
        return self.fc(context), weights
