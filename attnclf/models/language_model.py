"""The forward and backward GRU language models that pretrain the classifier's encoder (`attnclf pretrain`).

The forward LM reads each review left to right and predicts the next token; the backward LM reads it
reversed within its length (padding stays at the end, as in BiRNN) and predicts the previous one.
So each is one direction of the classifier's bidirectional encoder: `model.init_from=<checkpoint>`
puts the forward GRU into `encoder.fwd.0`, the backward one into `encoder.bwd.0`, and the shared
embedding into `embed` (matched word by word, so any seed's vocabulary can use it).

The output layer (`lm.softmax`) is an adaptive softmax (Grave et al. 2017: frequent words get the full
hidden size, rare ones a projection of it, so a 30k vocabulary costs a fraction of a full softmax) or a
sampled one (Jean et al. 2015: in training, each token's word against a few hundred words drawn for the
batch; in evaluation the full softmax, so val/ppl is exact). scripts/bench_lm.py measures all three.
"""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F
from torch import nn

from attnclf.models.encoder import reverse_within_length
from attnclf.models.names import PAD_ID

log = logging.getLogger(__name__)


# in the checkpoint's hyperparameters: what init_from accepts
KIND = "bigru_lm"


def adaptive_cutoffs(cutoffs, vocab_size: int) -> list[int]:
    """The cutoffs below the vocabulary size (a small vocabulary keeps one cluster boundary at least)."""
    kept = sorted({int(c) for c in cutoffs if 0 < int(c) < vocab_size - 1})
    return kept or [max(1, vocab_size // 2)]


class AdaptiveSoftmax(nn.AdaptiveLogSoftmaxWithLoss):
    def forward(self, h: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of `target` (N,) given states h (N, H)."""
        return super().forward(h, target).loss


class SampledSoftmax(nn.Module):
    """A full softmax's weights, trained on a sample of them.

    In training, each state scores its target word against `samples` words drawn once for the batch,
    log-uniformly over frequency ranks (the vocabulary is sorted by frequency: word k, from 1, is drawn
    with probability log(1 + 1/k) / log(V); padding, id 0, never); each score is corrected by its word's
    log-probability of being drawn, so the sampled loss estimates the full softmax's (Jean et al. 2015).
    A drawn word that is the target itself is left out. In evaluation (and where the sample would be as
    large as the vocabulary) the loss is the full softmax's, in chunks of states (a 30k-word row per
    state would not fit for a whole batch).
    Its cost: scripts/bench_lm.py (512 samples: a fraction of the adaptive softmax).
    """

    # states per full-softmax chunk in evaluation: 2048 x 30k floats = 245 MB
    CHUNK = 2048

    def __init__(self, hidden_dim: int, vocab_size: int, samples: int):
        super().__init__()
        # (V, H) weight, (V,) bias
        self.out = nn.Linear(hidden_dim, vocab_size)
        self.samples = samples
        k = torch.arange(vocab_size, dtype=torch.float64).clamp(min=1)
        log_q = torch.log(torch.log1p(1 / k) / math.log(vocab_size))
        log_q[PAD_ID] = -math.inf
        self.register_buffer("log_q", log_q.float(), persistent=False)

    def draw(self, device) -> torch.Tensor:
        """`samples` word ids: floor(V ** u) for u uniform in [0, 1) is word k with the probability above."""
        u = torch.rand(self.samples, device=device, dtype=torch.float64)
        V = self.out.out_features
        return torch.exp(u * math.log(V)).long().clamp_(1, V - 1)

    def forward(self, h: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of `target` (N,) given states h (N, H): sampled in training."""
        W, b = self.out.weight, self.out.bias
        # a sample as large as the words
        if not self.training or self.samples >= self.out.out_features - 1:
            nll = [
                torch.logsumexp(F.linear(hc, W, b), -1) - (hc * W[tc]).sum(-1) - b[tc]
                for hc, tc in zip(h.split(self.CHUNK), target.split(self.CHUNK), strict=True)
            ]
            return torch.cat(nll).mean()
        drawn = self.draw(h.device)  # (K,)
        true = (h * W[target]).sum(-1) + b[target] - self.log_q[target]  # (N,)
        other = F.linear(h, W[drawn], b[drawn]) - self.log_q[drawn]  # (N, K)
        other = other.masked_fill(drawn.unsqueeze(0) == target.unsqueeze(1), -math.inf)
        # (N, 1 + K): the target is column 0
        logits = torch.cat([true.unsqueeze(1), other], 1)
        return F.cross_entropy(logits, torch.zeros_like(target))


def output_layer(softmax: str, hidden_dim: int, vocab_size: int, cutoffs, div_value: float, samples: int) -> nn.Module:
    if softmax == "sampled":
        return SampledSoftmax(hidden_dim, vocab_size, samples)
    cut = adaptive_cutoffs(cutoffs, vocab_size)
    # a vocabulary smaller than data.vocab_size: small data
    if list(cut) != sorted(set(cutoffs)):
        log.warning(
            "lm.cutoffs %s: the vocabulary has %d words; the adaptive softmax uses %s", list(cutoffs), vocab_size, cut
        )
    return AdaptiveSoftmax(hidden_dim, vocab_size, cut, div_value=div_value)


class BiGRULanguageModel(nn.Module):
    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, lm):
        """Two one-layer GRU language models on one embedding. `lm`: the output layer's and dropout's settings
        (attnclf pretrain's `lm.*`: dropout, softmax, cutoffs, div_value, samples)."""
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_ID)
        self.fwd = nn.GRU(embed_dim, hidden_dim, batch_first=True)
        self.bwd = nn.GRU(embed_dim, hidden_dim, batch_first=True)
        self.drop = nn.Dropout(lm.dropout)
        cutoffs = tuple(lm.cutoffs)
        self.head_fwd = output_layer(lm.softmax, hidden_dim, vocab_size, cutoffs, lm.div_value, lm.samples)
        self.head_bwd = output_layer(lm.softmax, hidden_dim, vocab_size, cutoffs, lm.div_value, lm.samples)

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
        # a batch of one-token reviews predicts nothing
        if not mask.any():
            zero = h_f.sum() * 0
            return zero, zero
        loss_f = self.head_fwd(self.drop(h_f[:, :-1][mask]), ids[:, 1:][mask])
        loss_b = self.head_bwd(self.drop(h_b[:, :-1][mask]), rev[:, 1:][mask])
        return loss_f, loss_b
