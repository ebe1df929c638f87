"""The texts the language models learn from (`attnclf pretrain`)."""

from __future__ import annotations

import numpy as np

from attnclf.data.datamodule import TextDataModule
from attnclf.data.dataset import TextDataset
from attnclf.errors import AttnclfError
from attnclf.settings.data import DataConfig
from attnclf.settings.lm import LMConfig
from attnclf.settings.run import DEFAULT_SEED


class LMDataModule(TextDataModule):
    """The texts a language model may learn from (TextDataModule.word_vector_texts: the training split,
    less a test split carved from it, and the unlabeled split `lm.unlabeled_split`; never test),
    `lm.val_texts` of them held out (seeded) for validation. Batches, bucketing and mid-epoch resume as for
    the classifier."""

    def __init__(self, config: DataConfig, lm: LMConfig, seed: int = DEFAULT_SEED, vocab_path: str | None = None):
        super().__init__(config, seed, vocab_path)
        self.lm = lm

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        super().setup(stage)
        texts, _ = self.word_vector_texts(self.lm.unlabeled_split)
        pieces, lengths = [], []
        for enc, rows in texts:
            ids = enc.remap(self.vocab)
            pieces += [ids[enc.offsets[r] : enc.offsets[r + 1]] for r in rows]
            lengths.append(enc.lengths[rows])
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths))])
        n = len(offsets) - 1
        if self.lm.val_texts >= n:
            raise AttnclfError(f"lm.val_texts={self.lm.val_texts} leaves nothing to train on: the data has {n} texts")
        order = np.random.default_rng([self.seed, 3]).permutation(n)
        val_rows, train_rows = np.sort(order[: self.lm.val_texts]), np.sort(order[self.lm.val_texts :])
        flat, zeros = np.concatenate(pieces), np.zeros(n, dtype=np.int64)
        args = dict(max_length=self.config.max_length, truncation=self.config.truncation)
        self.train_set = TextDataset(flat, offsets, zeros, train_rows, **args)
        self.val_set = TextDataset(flat, offsets, zeros, val_rows, **args)
        self.test_set = None
        self.splits = {"train": f"{len(train_rows)} texts", "val": f"{len(val_rows)} texts held out"}
