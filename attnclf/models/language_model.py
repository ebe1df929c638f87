"""The forward and backward GRU language models that pretrain the classifier's encoder (`pretrain.py`).

The forward LM reads each review left to right and predicts the next token; the backward LM reads it
reversed within its length (padding stays at the end, as in ExactBiGRU) and predicts the previous one.
So each is one direction of the classifier's bidirectional encoder: `model.init_from=<checkpoint>`
puts the forward GRU into `encoder.fwd.0`, the backward one into `encoder.bwd.0`, and the shared
embedding into `embed` (matched word by word, so any seed's vocabulary can use it).

The output layer is an adaptive softmax (Grave et al. 2017): frequent words get the full hidden size,
rare ones a projection of it, so a 30k vocabulary costs a fraction of a full softmax
(scripts/bench_lm.py measures both).
"""

from __future__ import annotations

import logging

import torch
from torch import nn

from attnclf.data.text import PAD_ID
from attnclf.models.encoder import reverse_within_length

log = logging.getLogger(__name__)


KIND = "bigru_lm"  # in the checkpoint's hyperparameters: what init_from accepts


def adaptive_cutoffs(cutoffs, vocab_size: int) -> list[int]:
    """The cutoffs below the vocabulary size (a small vocabulary keeps one cluster boundary at least)."""
    kept = sorted({int(c) for c in cutoffs if 0 < int(c) < vocab_size - 1})
    return kept or [max(1, vocab_size // 2)]


class BiGRULanguageModel(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        embed_dim: int = 128,
        hidden_dim: int = 128,
        dropout: float = 0.2,
        cutoffs: tuple[int, ...] = (2000, 10000),
        div_value: float = 4.0,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_ID)
        self.fwd = nn.GRU(embed_dim, hidden_dim, batch_first=True)
        self.bwd = nn.GRU(embed_dim, hidden_dim, batch_first=True)
        self.drop = nn.Dropout(dropout)
        cut = adaptive_cutoffs(cutoffs, vocab_size)
        if list(cut) != sorted(set(cutoffs)):  # (a vocabulary smaller than data.vocab_size: small data)
            log.warning("lm.cutoffs %s: the vocabulary has %d words; the adaptive softmax uses %s", list(cutoffs),
                        vocab_size, cut)  # fmt: skip
        self.head_fwd = nn.AdaptiveLogSoftmaxWithLoss(hidden_dim, vocab_size, cut, div_value=div_value)
        self.head_bwd = nn.AdaptiveLogSoftmaxWithLoss(hidden_dim, vocab_size, cut, div_value=div_value)

    def states(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """ids (B, T) -> forward states (B, T, H), backward states (B, T, H) in reversed order, reversed ids.

        Forward state t has read tokens 0..t; backward state t (of the reversed review) has read the
        review's last t + 1 tokens, from the end.
        """
        rev = reverse_within_length(ids.unsqueeze(-1), lengths).squeeze(-1)  # (B, T)
        h_f = self.fwd(self.drop(self.embed(ids)))[0]  # (B, T, H)
        h_b = self.bwd(self.drop(self.embed(rev)))[0]  # (B, T, H)
        return h_f, h_b, rev

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean negative log-likelihood per predicted token of the forward and of the backward LM."""
        h_f, h_b, rev = self.states(ids, lengths)
        T = ids.size(1)
        # position t predicts token t + 1 (of the review, or of the reversed review)
        mask = torch.arange(T - 1, device=ids.device) < (lengths.to(ids.device) - 1).unsqueeze(1)  # (B, T-1)
        if not mask.any():  # (a batch of one-token reviews predicts nothing)
            zero = h_f.sum() * 0
            return zero, zero
        loss_f = self.head_fwd(self.drop(h_f[:, :-1][mask]), ids[:, 1:][mask]).loss
        loss_b = self.head_bwd(self.drop(h_b[:, :-1][mask]), rev[:, 1:][mask]).loss
        return loss_f, loss_b
