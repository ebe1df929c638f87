"""Pretraining the encoder: a forward and a backward GRU language model on the training and unlabeled texts.

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

import numpy as np
import torch
from torch import nn
from torchmetrics import MeanMetric

from attnclf.data.datamodule import IMDBDataModule, Reviews
from attnclf.data.text import PAD_ID
from attnclf.errors import AttnclfError
from attnclf.models.encoder import reverse_within_length
from attnclf.training.module import TrainingModule, unpack

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


class LanguageModelModule(TrainingModule):
    def __init__(
        self,
        vocab_size: int,
        embed_dim: int = 128,
        hidden_dim: int = 128,
        dropout: float = 0.2,
        cutoffs: tuple[int, ...] = (2000, 10000),
        div_value: float = 4.0,
        lr: float = 2e-3,
        weight_decay: float = 0.0,
        schedule: str = "cosine",
        warmup_ratio: float = 0.02,
        kind: str = KIND,
    ):
        super().__init__()
        self.save_hyperparameters(logger=False)
        self.model = BiGRULanguageModel(vocab_size, embed_dim, hidden_dim, dropout, tuple(cutoffs), div_value)
        self.val_nll = MeanMetric()  # this validation's mean NLL per predicted token, for val/ppl

    def _losses(self, batch) -> tuple[torch.Tensor, torch.Tensor, int]:
        ids, lengths, _, host = unpack(batch)
        loss_f, loss_b = self.model(ids, lengths)
        return loss_f, loss_b, int((host - 1).clamp(min=0).sum())

    def training_step(self, batch, batch_idx):
        loss_f, loss_b, n = self._losses(batch)
        loss = (loss_f + loss_b) / 2
        self._check_finite(loss)
        self.log("train/loss", loss, prog_bar=True, batch_size=max(n, 1))
        self.log("train/ppl", torch.exp(loss.detach()), batch_size=max(n, 1))
        return loss

    def validation_step(self, batch, batch_idx):
        loss_f, loss_b, n = self._losses(batch)
        loss = (loss_f + loss_b) / 2
        self.val_nll.update(loss, max(n, 1))  # (weighted by predicted tokens, summed over ranks)
        kw = dict(batch_size=max(n, 1), sync_dist=True)
        self.log("val/loss", loss, prog_bar=True, **kw)
        self.log("val/loss_forward", loss_f, **kw)
        self.log("val/loss_backward", loss_b, **kw)

    def on_validation_epoch_end(self) -> None:
        self.log("val/ppl", torch.exp(self.val_nll.compute()))
        self.val_nll.reset()


class LMDataModule(IMDBDataModule):
    """The texts a language model may learn from (IMDBDataModule.word_vector_texts: the training split,
    less a test split carved from it, and the unlabeled split; never test), `val_texts` of them held
    out (seeded) for validation. Batches, bucketing and mid-epoch resume as for the classifier."""

    def __init__(self, *args, unlabeled_split: str | None = "unsupervised", val_texts: int = 1000, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(val_texts, bool) or not isinstance(val_texts, int) or val_texts < 1:
            raise AttnclfError(f"lm.val_texts={val_texts!r} must be a positive integer")
        self.unlabeled_split, self.val_texts = unlabeled_split, val_texts

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        super().setup(stage)
        texts, _ = self.word_vector_texts(self.unlabeled_split)
        pieces, lengths = [], []
        for enc, rows in texts:
            ids = enc.remap(self.vocab)
            pieces += [ids[enc.offsets[r] : enc.offsets[r + 1]] for r in rows]
            lengths.append(enc.lengths[rows])
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths))])
        n = len(offsets) - 1
        if self.val_texts >= n:
            raise AttnclfError(f"lm.val_texts={self.val_texts} leaves nothing to train on: the data has {n} texts")
        order = np.random.default_rng([self.seed, 3]).permutation(n)
        val_rows, train_rows = np.sort(order[: self.val_texts]), np.sort(order[self.val_texts :])
        flat, zeros = np.concatenate(pieces), np.zeros(n, dtype=np.int64)
        args = dict(max_length=self.max_length, truncation=self.truncation)
        self.train_set = Reviews(flat, offsets, zeros, train_rows, **args)
        self.val_set = Reviews(flat, offsets, zeros, val_rows, **args)
        self.test_set = None
        self.splits = {"train": f"{len(train_rows)} texts", "val": f"{len(val_rows)} texts held out"}
