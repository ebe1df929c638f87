"""The texts the language models learn from (`pretrain.py`)."""

from __future__ import annotations

import numpy as np

from attnclf.data.datamodule import IMDBDataModule, Reviews
from attnclf.errors import AttnclfError


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
