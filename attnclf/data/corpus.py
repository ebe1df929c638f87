"""The texts word vectors and language models may learn from: the training split's rows a run reads (its
training rows and the validation rows carved from them; never a test split, carved or not), and the
unlabeled split where the data has one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from attnclf.data.encoding import Encoded, encode_split
from attnclf.data.splits import Opened
from attnclf.settings.data import DataConfig


@dataclass
class Corpus:
    # the dataset as the run reads it
    opened: Opened
    # its training split, tokenised
    train: Encoded
    # the training split's rows read for training and validation (never test)
    rows: np.ndarray
    config: DataConfig
    seed: int

    def word_vector_texts(self, unlabeled_split: str | None = "unsupervised", max_texts: int | None = None):
        """([(tokenised split, its rows to read)], a key for them): the training rows and the unlabeled
        split `unlabeled_split` where the data has one. `max_texts`: at most that many of them, a seeded
        random subset (training rows first)."""
        ds, text_col, label_col = self.opened.ds, self.opened.text_column, self.opened.label_column
        c = self.config
        rows = self.rows
        if max_texts is not None and len(rows) > max_texts:
            rows = self.some(rows, max_texts)
        texts = [(self.train, rows)]
        key = [ds[c.train_split]._fingerprint, hashlib.sha1(rows.tobytes()).hexdigest()[:12], text_col]
        left = None if max_texts is None else max_texts - len(rows)
        usable = unlabeled_split and unlabeled_split in ds and unlabeled_split not in (c.test_split, c.train_split)
        if usable and left != 0:
            unlabeled = encode_split(ds[unlabeled_split], text_col, label_col, c.cache_dir)
            texts.append((unlabeled, np.arange(len(unlabeled.labels))))
            key.append(ds[unlabeled_split]._fingerprint)
            if left is not None and len(unlabeled.labels) > left:
                texts[-1] = (unlabeled, self.some(texts[-1][1], left))
                key.append(hashlib.sha1(texts[-1][1].tobytes()).hexdigest()[:12])
        return texts, key

    def some(self, rows: np.ndarray, n: int) -> np.ndarray:
        """n of `rows`, a random subset fixed by the seed, in order."""
        return np.sort(np.random.default_rng([self.seed, 3]).permutation(rows)[:n])
