"""A split's rows as a torch Dataset of token ids, truncated as the run reads them, and their padded batches."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from attnclf.data.text import UNK_ID
from attnclf.models.names import PAD_ID


def truncate(ids: np.ndarray, max_length: int | None, mode: str) -> np.ndarray:
    """At most max_length ids (None: all of them; at least 1: an empty review becomes one UNK)."""
    if len(ids) == 0:
        return np.array([UNK_ID], dtype=np.int32)
    if max_length is None or len(ids) <= max_length:
        return ids
    if mode == "head":
        return ids[:max_length]
    if mode == "tail":
        return ids[-max_length:]
    # head_tail: the opening and the verdict at the end
    head = max_length // 2
    return np.concatenate([ids[:head], ids[len(ids) - (max_length - head) :]])


class TextDataset(Dataset):
    """Rows of an encoded split, truncated to `max_length` tokens (None: whole; at least 1: an empty review
    is one UNK)."""

    def __init__(
        self,
        ids: np.ndarray,
        offsets: np.ndarray,
        labels: np.ndarray,
        rows: np.ndarray,
        max_length: int | None,
        truncation: str,
    ):
        self.ids, self.offsets, self.labels, self.rows = ids, offsets, labels, rows
        self.max_length, self.truncation = max_length, truncation
        self.lengths = np.clip(offsets[rows + 1] - offsets[rows], 1, max_length)

    def __len__(self) -> int:
        return len(self.rows)

    def sample(self, n: int, seed: int) -> TextDataset:
        """`n` of these rows drawn without replacement (seeded), in their order here."""
        keep = np.sort(np.random.default_rng(seed).choice(len(self.rows), n, replace=False))
        return TextDataset(self.ids, self.offsets, self.labels, self.rows[keep], self.max_length, self.truncation)

    def tokens(self, i: int) -> np.ndarray:
        r = self.rows[i]
        return truncate(self.ids[self.offsets[r] : self.offsets[r + 1]], self.max_length, self.truncation)

    def __getitem__(self, i: int):
        return self.tokens(i), int(self.labels[self.rows[i]])


def collate(items) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad to the longest review in the batch: (ids (B, T), lengths (B,), labels (B,))."""
    lengths = np.fromiter((len(x) for x, _ in items), dtype=np.int64, count=len(items))
    ids = np.full((len(items), int(lengths.max())), PAD_ID, dtype=np.int64)
    for row, (x, _) in enumerate(items):
        ids[row, : len(x)] = x
    labels = torch.tensor([y for _, y in items], dtype=torch.long)
    return torch.from_numpy(ids), torch.from_numpy(lengths), labels
