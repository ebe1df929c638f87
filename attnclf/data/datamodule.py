"""The DataModule: any text-classification dataset, tokenised once and cached, batched by length.

Loading and labels: loading.py; which rows train, validate and test: splits.py; tokenising and the
cache: encoding.py; the rows as a Dataset and their batches: dataset.py; batch samplers: sampling.py;
the texts word vectors learn from: corpus.py; virtual adversarial training's unlabeled batches:
unlabeled.py. The vocabulary comes from the training rows only (never validation or test).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytorch_lightning as L
import torch
from lightning_fabric.utilities.rank_zero import rank_zero_only
from torch.utils.data import DataLoader

from attnclf.data.corpus import Corpus
from attnclf.data.dataset import TextDataset, collate
from attnclf.data.encoding import Encoded, encode_split
from attnclf.data.loading import label_ids
from attnclf.data.sampling import BucketBatchSampler
from attnclf.data.splits import carving, open_data, split_rows, training_subset
from attnclf.data.text import Vocab
from attnclf.data.unlabeled import UnlabeledBatches
from attnclf.errors import AttnclfError
from attnclf.settings.data import DataConfig
from attnclf.settings.run import DEFAULT_SEED

log = logging.getLogger(__name__)

# data.batch_size=auto: 64 texts a batch where an epoch of them is at least AUTO_STEPS optimizer steps, halved
# (down to 16) while it would be fewer. Small data learns more from more, smaller steps: CR's 3,054 training rows
# (48 steps of 64 an epoch) gained 3.5-4 points of 10-fold CV accuracy with batches of 16 (with
# word2vec.epochs=auto); more epochs of 64 instead (min_steps=1000) gained 1 at 2-7x the time. At 8,000-9,000
# rows (MR, Subj, SST-5: 127-135 steps of 64) batches of 32 gained 0.2-0.5 points (beyond the folds' spread only
# for Subj with dot) and cost a third of the useful tokens/s: they keep 64, as IMDb does (docs/results.md)
AUTO_BATCH_SIZES = (64, 32, 16)
AUTO_STEPS = 125


def auto_batch_size(rows: int) -> int:
    """The batch size data.batch_size=auto chooses for `rows` training texts."""
    return next((b for b in AUTO_BATCH_SIZES if -(-rows // b) >= AUTO_STEPS), AUTO_BATCH_SIZES[-1])


class TextDataModule(L.LightningDataModule):
    """Any text-classification dataset as its DataConfig says (checked where it was built), seeded by `seed`;
    `vocab_path`: where the vocabulary is saved, with how the run read and carved its data."""

    def __init__(self, config: DataConfig | None = None, seed: int = DEFAULT_SEED, vocab_path: str | None = None):
        super().__init__()
        self.config = config = config if config is not None else DataConfig()
        self.seed, self.vocab_path = seed, vocab_path
        self._train_batch_size: int | None = None if config.batch_size == "auto" else config.batch_size
        # validation and test read at least what training reads
        self.eval_max_length = (
            None if config.eval_max_length is None else max(config.eval_max_length, config.max_length)
        )
        if config.eval_max_length is not None and config.eval_max_length < config.max_length:
            log.info(
                "data.eval_max_length=%d is below data.max_length=%d: validation and test read %d tokens, as "
                "training does",
                config.eval_max_length,
                config.max_length,
                config.max_length,
            )
        # from the data, in setup
        self.num_classes: int | None = None
        # where each of train / val / test came from (metrics.json)
        self.splits: dict[str, str] = {}
        # the training texts' length percentiles (metrics.json)
        self.length_stats: dict[str, float] = {}
        self.vocab: Vocab | None = None
        self._train_sampler: BucketBatchSampler | None = None
        # (epoch, batches done) from a checkpoint
        self._resume_at: tuple[int, int] | None = None

    def word_vector_texts(self, unlabeled_split: str | None = "unsupervised", max_texts: int | None = None):
        """The texts word vectors and language models may learn from, and a key for them (Corpus)."""
        return self.corpus.word_vector_texts(unlabeled_split, max_texts)

    def setup(self, stage: str | None = None) -> None:
        """Read the data, carve what it lacks (test, validation), build the vocabulary of the training rows
        (saved with how this run reads a review) and the three datasets; log what came from where."""
        if self.vocab is not None:
            return
        c = self.config
        opened = open_data(c)
        train = self.encoded_split(opened, c.train_split)
        # what is carved from the training split, and how: saved with the vocabulary and in the run's record
        self.carved = carving(c, self.seed, opened, len(train.labels))
        train_rows, val_rows, test_rows = self.carve_rows(train, opened.names)
        self.vocab = self.vocabulary(train, train_rows, opened)
        self.num_classes = len(opened.names)
        train_ids = train.remap(self.vocab)
        self.train_set = TextDataset(
            train_ids, train.offsets, train.labels, train_rows, max_length=c.max_length, truncation=c.truncation
        )
        # what word vectors may learn from: the rows read for training and validation (never test)
        vector_rows = train_rows if val_rows is None else np.union1d(train_rows, val_rows)
        self.corpus = Corpus(opened, train, vector_rows, c, self.seed)
        self.val_set = self.eval_set(opened, opened.val_split, train, train_ids, val_rows)
        self.test_set = self.eval_set(opened, opened.test_split, train, train_ids, test_rows)
        self.length_stats = self.lengths_said(train.lengths[train_rows])
        self.splits = self.splits_said(opened.val_split, opened.test_split)
        log.info(
            "train %d, val %d, test %d reviews; %d classes; vocabulary %d",
            len(self.train_set),
            len(self.val_set),
            len(self.test_set),
            self.num_classes,
            len(self.vocab),
        )

    def encoded_split(self, opened, split: str) -> Encoded:
        """A split of the opened data tokenised (cached) and its labels as class ids."""
        enc = encode_split(opened.ds[split], opened.text_column, opened.label_column, self.config.cache_dir)
        enc.labels = label_ids(enc.labels, opened.remap)
        return enc

    def carve_rows(self, train: Encoded, names: list[str]) -> tuple:
        """(training, validation, test) rows of the training split by self.carved (None where the data has
        its own split), the training rows cut to data.train_size; data of one class is refused."""
        c = self.config
        _, train_rows, val_rows, test_rows = split_rows(self.carved, train.labels)
        if c.folds is not None:
            log.info(
                "testing on fold %d of %d (%d rows, stratified by label, seed %d); validation carved from the "
                "other folds",
                c.fold,
                c.folds,
                len(test_rows),
                self.seed,
            )
        elif test_rows is not None:
            log.warning(
                "no %r split in %r: testing on %d training rows carved at random", c.test_split, c.path, len(test_rows)
            )
        train_rows = training_subset(train_rows, c.train_size, self.seed)
        classes = np.unique(train.labels[train_rows])
        # before any training: it would fit one answer, and the metrics fail on it
        if len(classes) < 2:
            raise AttnclfError(
                f"{c.path!r}: the {len(train_rows)} training rows all have label {names[int(classes[0])]!r}; "
                "a classifier needs rows of at least 2 classes"
            )
        return train_rows, val_rows, test_rows

    def vocabulary(self, train: Encoded, train_rows: np.ndarray, opened) -> Vocab:
        """The vocabulary of the training rows, with how this run reads a review (training; validation and
        test) so that eval and predict read it as validation and test did; saved in the run folder."""
        c = self.config
        vocab = Vocab.from_counts(train.table, train.token_counts(train_rows), c.vocab_size, c.min_freq)
        if len(vocab) <= 2:
            raise AttnclfError(
                f"the vocabulary has no word: no token occurs data.min_freq={c.min_freq} times in the "
                f"{len(train_rows)} training rows; lower data.min_freq"
            )
        vocab.meta.update(
            max_length=c.max_length,
            eval_max_length=self.eval_max_length,
            truncation=c.truncation,
            labels=opened.names,
            carved=self.carved,
        )
        if opened.remap is not None:
            vocab.meta["label_values"] = opened.remap.tolist()
        if self.vocab_path and self.trainer_is_rank_zero():
            Path(self.vocab_path).parent.mkdir(parents=True, exist_ok=True)
            vocab.save(self.vocab_path)
        return vocab

    def eval_set(self, opened, split: str | None, train: Encoded, train_ids, carved_rows) -> TextDataset:
        """Validation or test: the dataset's own split whole, or the rows carved from train. They read
        longer reviews than training: a longer max_length costs training time (the GRU steps through every
        token), a longer read at evaluation costs little and gains accuracy (docs/decisions.md)."""
        args = dict(max_length=self.eval_max_length, truncation=self.config.truncation)
        if split is None:
            return TextDataset(train_ids, train.offsets, train.labels, carved_rows, **args)
        enc = self.encoded_split(opened, split)
        return TextDataset(enc.remap(self.vocab), enc.offsets, enc.labels, np.arange(len(enc.labels)), **args)

    def lengths_said(self, lengths: np.ndarray) -> dict:
        """Tokens per training text: percentiles and the share max_length keeps whole (logged)."""
        p50, p90, p99 = (int(v) for v in np.percentile(lengths, [50, 90, 99]))
        stats = {"p50": p50, "p90": p90, "p99": p99, "kept_whole": float((lengths <= self.config.max_length).mean())}
        log.info(
            "training texts: median %d tokens, 90th percentile %d, 99th %d; max_length %d keeps %.1f%% whole "
            "(batches are padded to their longest text only, so a max_length above the texts costs nothing)",
            p50,
            p90,
            p99,
            self.config.max_length,
            100 * stats["kept_whole"],
        )
        return stats

    def splits_said(self, val_split: str | None, test_split: str | None) -> dict:
        """Where train, validation and test came from (metrics.json's `splits`)."""
        c, seed = self.config, self.seed
        if c.folds is not None:
            carved_test = f"fold {c.fold} of {c.folds} of {c.train_split} (stratified by label, seed {seed})"
        else:
            carved_test = f"carved from {c.train_split} (data.test_size={c.test_size}, seed {seed})"
        return {
            "train": c.train_split,
            "val": val_split or f"carved from {c.train_split} (data.val_size={c.val_size}, seed {seed})",
            "test": test_split or carved_test,
        }

    def setup_unlabeled(self, split: str, batch_size: int) -> int:
        """Read the unlabeled split `split` (never test or train) with this run's vocabulary, for
        unlabeled_batch(); returns its number of reviews."""
        self.unlabeled = UnlabeledBatches(self.corpus, split, self.vocab, batch_size, self._world)
        return len(self.unlabeled.dataset)

    def unlabeled_batch(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The `index`-th training batch's batch of unlabeled reviews (UnlabeledBatches.batch)."""
        return self.unlabeled.batch(index)

    def trainer_is_rank_zero(self) -> bool:
        # rank_zero_only.rank is read from the launcher's environment, so this holds before the Trainer exists
        return rank_zero_only.rank == 0

    def _world(self) -> tuple[int, int]:
        t = self.trainer
        return (t.world_size, t.global_rank) if t is not None else (1, 0)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        # (ids, lengths, labels) -> ids and labels on `device`, the lengths left on the host (the packed GRU
        # sorts by them and Throughput counts tokens with them, without waiting for the GPU) and their
        # device copy appended: (ids, host lengths, labels, lengths)
        ids, lengths, y = super().transfer_batch_to_device(tuple(batch[:3]), device, dataloader_idx)
        return ids, batch[1], y, lengths

    def _on_gpu(self) -> bool:
        t = self.trainer
        return t is not None and t.strategy.root_device.type == "cuda"

    def _loader(self, dataset: TextDataset, batch_size: int, shuffle: bool) -> DataLoader:
        replicas, rank = self._world()
        # every rank needs a batch of its own; a review counted twice is wrong
        if len(dataset) < replicas:
            raise AttnclfError(
                f"{'training' if shuffle else 'an evaluation split'} has {len(dataset)} review(s), fewer than the "
                f"{replicas} ranks (trainer.devices x trainer.num_nodes); use fewer devices or more data"
            )
        sampler = BucketBatchSampler(
            dataset.lengths, batch_size, shuffle, self.seed, self.config.bucket_pool, num_replicas=replicas, rank=rank
        )
        return DataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=collate,
            num_workers=self.config.num_workers,
            persistent_workers=self.config.num_workers > 0,
            # page-locked batches: the copies to the GPU do not wait for it
            pin_memory=self._on_gpu(),
            # its own generator: starting an epoch must not draw from the global RNG that dropout uses,
            # or a resumed run's dropout masks would drift from the uninterrupted run's
            generator=torch.Generator().manual_seed(self.seed),
        )

    def train_batch_size(self) -> int:
        """The training batch: data.batch_size, or the one `auto` chooses for the training rows (said in the
        log once, with why)."""
        if self._train_batch_size is None:
            rows = len(self.train_set)
            self._train_batch_size = size = auto_batch_size(rows)
            why = f"{rows} training rows make {-(-rows // size)} batches an epoch"
            if size < AUTO_BATCH_SIZES[0]:
                why += f"; {size * 2} would make {-(-rows // (size * 2))}, fewer than {AUTO_STEPS}"
            log.info("data.batch_size=auto: %d (%s)", size, why)
        return self._train_batch_size

    def train_dataloader(self) -> DataLoader:
        loader = self._loader(self.train_set, self.train_batch_size(), shuffle=True)
        self._train_sampler = loader.batch_sampler
        self._apply_resume()
        return loader

    # Where training stood, saved in every checkpoint by Lightning (a datamodule's state_dict), so that a
    # run resumed mid-epoch continues with the same batches in the same order instead of restarting the epoch.
    def state_dict(self) -> dict:
        t = self.trainer
        if t is None:
            return {}
        return {"epoch": t.current_epoch, "batches_done": t.fit_loop.epoch_loop.batch_progress.current.processed}

    def load_state_dict(self, state: dict) -> None:
        if state:
            self._resume_at = (state["epoch"], state["batches_done"])
            self._apply_resume()

    def _apply_resume(self) -> None:
        sampler, at = self._train_sampler, self._resume_at
        if sampler is not None and at is not None and 0 < at[1] < len(sampler):
            # an end-of-epoch checkpoint skips nothing: the next epoch starts afresh
            sampler.resume_at = at

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_set, self.config.eval_batch_size, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, self.config.eval_batch_size, shuffle=False)
