"""Virtual adversarial training's batches of unlabeled reviews, one beside each training batch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from attnclf.data.corpus import Corpus
from attnclf.data.dataset import TextDataset, collate
from attnclf.data.encoding import encode_split
from attnclf.data.loading import VALIDATION_SPLITS
from attnclf.data.sampling import BucketBatchSampler
from attnclf.data.text import Vocab
from attnclf.errors import AttnclfError


class UnlabeledBatches:
    """The unlabeled split `split` (never test or train) of the corpus's data, read with the run's
    vocabulary as training reads, in batches of `batch_size`; `world()`: (ranks, this rank)."""

    def __init__(self, corpus: Corpus, split: str, vocab: Vocab, batch_size: int, world: Callable[[], tuple]):
        c, ds = corpus.config, corpus.opened.ds
        if split in (c.test_split, c.train_split) or split not in ds:
            allowed = [s for s in ds if s not in (c.test_split, c.train_split, *VALIDATION_SPLITS)]
            raise AttnclfError(
                f"regularizer.unlabeled_split={split!r}: not an unlabeled split of {c.path!r}; "
                f"allowed: {', '.join(allowed) or 'none (this data has no unlabeled split)'}"
            )
        enc = encode_split(ds[split], corpus.opened.text_column, corpus.opened.label_column, c.cache_dir)
        rows = np.arange(len(enc.labels))
        self.dataset = TextDataset(
            enc.remap(vocab), enc.offsets, np.zeros_like(rows), rows, max_length=c.max_length, truncation=c.truncation
        )
        self.batch_size, self.seed, self.bucket_pool, self.world = batch_size, corpus.seed, c.bucket_pool, world
        self.sampler: BucketBatchSampler | None = None
        # the sampler's epoch's batches
        self.batches: list = []

    def batch(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The `index`-th training batch's batch of unlabeled reviews, as collate() gives it: batched by
        length and shuffled like the training batches, one pass after another, and fixed by (seed, index,
        rank), so that a resumed run draws the same ones."""
        if self.sampler is None:
            replicas, rank = self.world()
            self.sampler = BucketBatchSampler(
                self.dataset.lengths,
                self.batch_size,
                True,
                self.seed,
                self.bucket_pool,
                num_replicas=replicas,
                rank=rank,
            )
        epoch, k = divmod(index, len(self.sampler))
        if self.sampler.epoch != epoch or not self.batches:
            self.sampler.set_epoch(epoch)
            self.batches = list(self.sampler)
        return collate([self.dataset[i] for i in self.batches[k]])
