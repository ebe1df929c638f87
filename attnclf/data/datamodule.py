"""The DataModule: any text-classification dataset, tokenised once and cached, batched by length.

Loading and labels: attnclf/data/loading.py; tokenising and the cache: attnclf/data/encoding.py;
batch samplers: attnclf/data/sampling.py. The vocabulary comes from the training rows only
(never validation or test).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np
import pytorch_lightning as L
import torch
from lightning_fabric.utilities.rank_zero import rank_zero_only
from torch.utils.data import DataLoader, Dataset

from attnclf.data.encoding import Encoded, encode_split, encode_texts  # noqa: F401  (re-exported)
from attnclf.data.loading import (  # noqa: F401  (re-exported)
    VALIDATION_SPLITS,
    check_hub_reachable,
    label_ids,
    load_splits,
    prepare_labels,
    resolve_columns,
)
from attnclf.data.sampling import BucketBatchSampler, EpochShuffle  # noqa: F401  (re-exported)
from attnclf.data.text import PAD_ID, UNK_ID, Vocab
from attnclf.errors import AttnclfError
from attnclf.utils.checks import one_of, positive_int, positive_int_or_auto

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


TRUNCATIONS = ("head", "tail", "head_tail")


def carve(rows: np.ndarray, size: float, rng: np.random.Generator, key: str, purpose: str):
    """(rest, carved): `size` (a fraction or a count) of `rows` taken at random, both sorted."""
    n = len(rows)
    k = int(round(size * n)) if size < 1 else int(size)
    if not 0 < k < n:
        raise AttnclfError(f"{key}={size} leaves {k} of {n} rows for {purpose}; need 1..{n - 1}")
    perm = rng.permutation(rows)
    return np.sort(perm[k:]), np.sort(perm[:k])


def fold_rows(labels: np.ndarray, folds: int, fold: int, seed: int) -> np.ndarray:
    """The rows of fold `fold` of `folds` stratified, seeded folds over rows of class ids `labels`: each
    class's rows shuffled and dealt round the folds in turn (the next class going on where the last one
    stopped), so every fold holds about 1/folds of each class and of the rows. The folds are disjoint and
    together cover every row."""
    rng = np.random.default_rng([seed, 4])
    assign = np.empty(len(labels), dtype=np.int64)
    dealt = 0
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        assign[rows] = (dealt + np.arange(len(rows))) % folds
        dealt += len(rows)
    return np.flatnonzero(assign == fold)


def carve_splits(
    n: int,
    seed: int,
    test_size: float | None,
    val_size: float | None,
    folds: int | None = None,
    fold: int | None = None,
    labels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(rows, train rows, validation rows, test rows) of a training split of n rows, seeded: a test split
    carved first where test_size is given, or fold `fold` of `folds` stratified folds (by `labels`) where
    folds are given (rows: all but it); then a validation split from the rest where val_size is given
    (None: not carved), never from the test rows. The same for the same arguments: eval.py rebuilds them."""
    rows, test_rows, val_rows = np.arange(n), None, None
    if folds is not None:  # k-fold cross-validation: this run tests on one fold
        test_rows = fold_rows(labels, folds, fold, seed)
        rows = np.setdiff1d(rows, test_rows)
    elif test_size is not None:  # (never touching a validation split)
        rows, test_rows = carve(rows, test_size, np.random.default_rng([seed, 2]), "data.test_size", "testing")
    train_rows = rows
    if val_size is not None:
        train_rows, val_rows = carve(rows, val_size, np.random.default_rng(seed), "data.val_size", "validation")
    return rows, train_rows, val_rows, test_rows


def check_folds(folds, fold) -> None:
    """data.folds (k-fold cross-validation: null, or 2 or more) and data.fold (0..folds-1), in one line."""
    if folds is None:
        if fold is not None:
            raise AttnclfError(f"data.fold={fold!r} needs data.folds (how many folds), e.g. data.folds=10")
        return
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise AttnclfError(f"data.folds={folds!r} must be a whole number >= 2 (or null: no cross-validation)")
    if isinstance(fold, bool) or not isinstance(fold, int) or not 0 <= fold < folds:
        raise AttnclfError(
            f"data.fold={fold!r} must be one of 0..{folds - 1} with data.folds={folds} "
            f"(all of them: python train.py -m data.folds={folds} 'data.fold=range({folds})')"
        )


def split_train_val(n: int, val_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint train/validation row indices, the same for the same (n, val_size, seed)."""
    return carve_splits(n, seed, None, val_size)[1:3]


# ---------------------------------------------------------------- batches


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
    head = max_length // 2  # head_tail: the opening and the verdict at the end
    return np.concatenate([ids[:head], ids[len(ids) - (max_length - head) :]])


class Reviews(Dataset):
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


# ---------------------------------------------------------------- datamodule


class IMDBDataModule(L.LightningDataModule):
    def __init__(
        self,
        path: str = "stanfordnlp/imdb",
        max_length: int = 400,
        eval_max_length: int | None = 1000,
        batch_size: int | str = "auto",
        eval_batch_size: int = 256,
        vocab_size: int = 30000,
        min_freq: int = 2,
        val_size: float = 0.1,
        truncation: str = "head_tail",
        train_size: float | None = None,
        bucket_pool: int = 50,
        num_workers: int = 0,
        cache_dir: str | None = None,
        seed: int = 42,
        vocab_path: str | None = None,
        train_split: str = "train",
        test_split: str = "test",
        text_column: str = "text",
        label_column: str = "label",
        name: str | None = None,
        train_file: str | None = None,
        validation_file: str | None = None,
        test_file: str | None = None,
        test_size: float = 0.1,
        folds: int | None = None,
        fold: int | None = None,
    ):
        super().__init__()
        positive_int_or_auto("data.batch_size", batch_size)
        sizes = dict(max_length=max_length, eval_batch_size=eval_batch_size, vocab_size=vocab_size, min_freq=min_freq)
        for key, value in sizes.items():
            positive_int(f"data.{key}", value)
        positive_int("data.eval_max_length", eval_max_length, "whole")
        if vocab_size < 3:
            raise AttnclfError(f"data.vocab_size={vocab_size!r} must be at least 3 (<pad>, <unk> and a word)")
        one_of("data.truncation", truncation, TRUNCATIONS)
        check_folds(folds, fold)
        if text_column == label_column:
            raise AttnclfError(
                f"data.label_column={label_column!r} is data.text_column too; the labels need a column of their own"
            )
        for key, size in (("val_size", val_size), ("test_size", test_size)):
            if (
                isinstance(size, bool)
                or not isinstance(size, (int, float))
                or not (0 < size < 1 or (size >= 1 and float(size).is_integer()))
            ):
                raise AttnclfError(f"data.{key}={size!r} must be a fraction in (0, 1) or a row count >= 1")
        self.path, self.max_length, self.batch_size = path, max_length, batch_size  # (auto: see train_batch_size)
        self._train_batch_size: int | None = None if batch_size == "auto" else batch_size
        # validation and test read at least what training reads
        self.eval_max_length = None if eval_max_length is None else max(eval_max_length, max_length)
        self.eval_batch_size, self.vocab_size, self.min_freq = eval_batch_size, vocab_size, min_freq
        self.val_size, self.truncation, self.bucket_pool = val_size, truncation, bucket_pool
        self.train_size = train_size
        self.num_workers, self.cache_dir, self.seed, self.vocab_path = num_workers, cache_dir, seed, vocab_path
        self.train_split, self.test_split = train_split, test_split
        self.text_column, self.label_column = text_column, label_column
        self.config_name, self.test_size = name, test_size  # (LightningDataModule has a `name` of its own)
        self.files = dict(train_file=train_file, validation_file=validation_file, test_file=test_file)
        self.folds, self.fold = folds, fold
        self.num_classes: int | None = None  # from the data, in setup
        self.splits: dict[str, str] = {}  # where each of train / val / test came from (metrics.json)
        self.length_stats: dict[str, float] = {}  # the training texts' length percentiles (metrics.json)
        self.vocab: Vocab | None = None
        self._train_sampler: BucketBatchSampler | None = None
        self._resume_at: tuple[int, int] | None = None  # (epoch, batches done) from a checkpoint

    def word_vector_texts(self, unlabeled_split: str | None = "unsupervised", max_texts: int | None = None):
        """The texts word vectors may learn from, and a key for them: the rows of the training split this run
        reads (its training rows, data.train_size's subset, and the validation rows carved from them; never
        a test split, carved or not) and the unlabeled split where the data has one. `max_texts`: at most
        that many of them, a seeded random subset (training rows first)."""
        ds, text_col, label_col, train = self._corpus
        rows = self._vector_rows
        if max_texts is not None and len(rows) > max_texts:
            rows = self._some(rows, max_texts)
        texts = [(train, rows)]
        key = [ds[self.train_split]._fingerprint, hashlib.sha1(rows.tobytes()).hexdigest()[:12], text_col]
        left = None if max_texts is None else max_texts - len(rows)
        usable = (
            unlabeled_split and unlabeled_split in ds and unlabeled_split not in (self.test_split, self.train_split)
        )
        if usable and left != 0:
            unlabeled = encode_split(ds[unlabeled_split], text_col, label_col, self.cache_dir)
            texts.append((unlabeled, np.arange(len(unlabeled.labels))))
            key.append(ds[unlabeled_split]._fingerprint)
            if left is not None and len(unlabeled.labels) > left:
                texts[-1] = (unlabeled, self._some(texts[-1][1], left))
                key.append(hashlib.sha1(texts[-1][1].tobytes()).hexdigest()[:12])
        return texts, key

    def _some(self, rows: np.ndarray, n: int) -> np.ndarray:
        """n of `rows`, a random subset fixed by the seed, in order."""
        return np.sort(np.random.default_rng([self.seed, 3]).permutation(rows)[:n])

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        ds = load_splits(self.path, self.config_name, **self.files)
        text_col, label_col = resolve_columns(ds, self.text_column, self.label_column, self.path)
        ds, names, remap = prepare_labels(ds, label_col, self.path)
        if self.train_split not in ds:
            raise AttnclfError(f"dataset {self.path!r} has no split {self.train_split!r}; splits found: {list(ds)}")
        val_split = next((v for v in VALIDATION_SPLITS if v in ds and v != self.train_split), None)
        test_split = self.test_split if self.test_split in ds else None
        if self.folds is not None and test_split is not None:
            raise AttnclfError(
                f"data.folds={self.folds}: {self.path!r} has a {test_split!r} split of its own; k-fold "
                "cross-validation is for data without one (drop data.folds, or give the training file alone)"
            )

        def encoded(split: str) -> Encoded:
            enc = encode_split(ds[split], text_col, label_col, self.cache_dir)
            enc.labels = label_ids(enc.labels, remap)
            return enc

        train = encoded(self.train_split)
        self._corpus = (ds, text_col, label_col, train)  # for word_vector_texts()
        carved = {  # what is carved from the training split, and how: saved with the vocabulary for eval.py
            "from": self.train_split,
            "rows": len(train.labels),
            "seed": self.seed,
            "test_split": self.test_split,
            "test_size": self.test_size if test_split is None and self.folds is None else None,
            "val_size": self.val_size if val_split is None else None,  # (from what a carved test split left)
            "folds": self.folds,
            "fold": self.fold,
        }
        rows, train_rows, val_rows, test_rows = carve_splits(
            carved["rows"], self.seed, carved["test_size"], carved["val_size"], self.folds, self.fold, train.labels
        )
        if self.folds is not None:
            log.info("testing on fold %d of %d (%d rows, stratified by label, seed %d); validation carved from the "
                     "other folds", self.fold, self.folds, len(test_rows), self.seed)  # fmt: skip
        elif test_rows is not None:
            log.warning("no %r split in %r: testing on %d training rows carved at random", self.test_split,
                        self.path, len(test_rows))  # fmt: skip
        if self.train_size is not None:  # a fixed random subset of the training rows (quick runs, scaling)
            n = int(round(self.train_size * len(train_rows))) if self.train_size <= 1 else int(self.train_size)
            if not 0 < n <= len(train_rows):
                raise AttnclfError(f"data.train_size={self.train_size} gives {n} rows; need 1..{len(train_rows)}")
            train_rows = np.sort(np.random.default_rng([self.seed, 1]).permutation(train_rows)[:n])
        classes = np.unique(train.labels[train_rows])
        if len(classes) < 2:  # (before any training: it would fit one answer, and the metrics fail on it)
            raise AttnclfError(
                f"{self.path!r}: the {len(train_rows)} training rows all have label {names[int(classes[0])]!r}; "
                "a classifier needs rows of at least 2 classes"
            )
        self.vocab = Vocab.from_counts(train.table, train.token_counts(train_rows), self.vocab_size, self.min_freq)
        if len(self.vocab) <= 2:
            raise AttnclfError(
                f"the vocabulary has no word: no token occurs data.min_freq={self.min_freq} times in the "
                f"{len(train_rows)} training rows; lower data.min_freq"
            )
        self.num_classes = len(names)
        # how this run reads a review (training; validation and test), saved with the vocabulary so that
        # eval and predict read it as validation and test did
        self.vocab.meta.update(max_length=self.max_length, eval_max_length=self.eval_max_length,
                               truncation=self.truncation, labels=names, carved=carved)  # fmt: skip
        if remap is not None:
            self.vocab.meta["label_values"] = remap.tolist()
        if self.vocab_path and self.trainer_is_rank_zero():
            Path(self.vocab_path).parent.mkdir(parents=True, exist_ok=True)
            self.vocab.save(self.vocab_path)
        args = dict(max_length=self.max_length, truncation=self.truncation)
        train_ids = train.remap(self.vocab)
        self.train_set = Reviews(train_ids, train.offsets, train.labels, train_rows, **args)

        # validation and test read longer reviews than training: a longer max_length costs training time
        # (the GRU steps through every token), a longer read at evaluation costs little and gains accuracy
        # (docs/experiment-log.md, "Using IMDb's 50,000 unlabeled reviews")
        eval_args = dict(max_length=self.eval_max_length, truncation=self.truncation)

        def own_or_carved(split: str | None, carved_rows) -> Reviews:
            """The dataset's own split whole, or the rows carved from train."""
            if split is None:
                return Reviews(train_ids, train.offsets, train.labels, carved_rows, **eval_args)
            enc = encoded(split)
            return Reviews(enc.remap(self.vocab), enc.offsets, enc.labels, np.arange(len(enc.labels)), **eval_args)

        # what word vectors may learn from: the rows read for training and validation (never test)
        self._vector_rows = train_rows if val_rows is None else np.union1d(train_rows, val_rows)
        self.val_set = own_or_carved(val_split, val_rows)
        self.test_set = own_or_carved(test_split, test_rows)
        lengths = train.lengths[train_rows]
        p50, p90, p99 = (int(v) for v in np.percentile(lengths, [50, 90, 99]))
        self.length_stats = {
            "p50": p50,
            "p90": p90,
            "p99": p99,
            "kept_whole": float((lengths <= self.max_length).mean()),
        }
        log.info(
            "training texts: median %d tokens, 90th percentile %d, 99th %d; max_length %d keeps %.1f%% whole "
            "(batches are padded to their longest text only, so a max_length above the texts costs nothing)",
            p50, p90, p99, self.max_length, 100 * self.length_stats["kept_whole"],
        )  # fmt: skip
        self.splits = {
            "train": self.train_split,
            "val": val_split or f"carved from {self.train_split} (data.val_size={self.val_size}, seed {self.seed})",
            "test": test_split
            or (
                f"fold {self.fold} of {self.folds} of {self.train_split} (stratified by label, seed {self.seed})"
                if self.folds is not None
                else f"carved from {self.train_split} (data.test_size={self.test_size}, seed {self.seed})"
            ),
        }
        log.info(
            "train %d, val %d, test %d reviews; %d classes; vocabulary %d",
            len(self.train_set),
            len(self.val_set),
            len(self.test_set),
            self.num_classes,
            len(self.vocab),
        )

    def setup_unlabeled(self, split: str, batch_size: int) -> int:
        """Read the unlabeled split `split` (never test or train) with this run's vocabulary, for
        unlabeled_batch(); returns its number of reviews."""
        ds, text_col, label_col, _ = self._corpus
        if split in (self.test_split, self.train_split) or split not in ds:
            allowed = [s for s in ds if s not in (self.test_split, self.train_split, *VALIDATION_SPLITS)]
            raise AttnclfError(
                f"regularizer.unlabeled_split={split!r}: not an unlabeled split of {self.path!r}; "
                f"allowed: {', '.join(allowed) or 'none (this data has no unlabeled split)'}"
            )
        enc = encode_split(ds[split], text_col, label_col, self.cache_dir)
        rows = np.arange(len(enc.labels))
        self.unlabeled_set = Reviews(enc.remap(self.vocab), enc.offsets, np.zeros_like(rows), rows,
                                     max_length=self.max_length, truncation=self.truncation)  # fmt: skip
        self._unlabeled = (batch_size, None, [])  # (batch size, sampler, its epoch's batches)
        return len(rows)

    def unlabeled_batch(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The `index`-th training batch's batch of unlabeled reviews (setup_unlabeled), as collate() gives
        it: batched by length and shuffled like the training batches, one pass after another, and fixed by
        (seed, index, rank), so that a resumed run draws the same ones."""
        batch_size, sampler, batches = self._unlabeled
        if sampler is None:
            replicas, rank = self._world()
            sampler = BucketBatchSampler(self.unlabeled_set.lengths, batch_size, True, self.seed, self.bucket_pool,
                                         num_replicas=replicas, rank=rank)  # fmt: skip
        epoch, k = divmod(index, len(sampler))
        if sampler.epoch != epoch or not batches:
            sampler.set_epoch(epoch)
            batches = list(sampler)
        self._unlabeled = (batch_size, sampler, batches)
        return collate([self.unlabeled_set[i] for i in batches[k]])

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

    def _loader(self, dataset: Reviews, batch_size: int, shuffle: bool) -> DataLoader:
        replicas, rank = self._world()
        if len(dataset) < replicas:  # (every rank needs a batch of its own; a review counted twice is wrong)
            raise AttnclfError(
                f"{'training' if shuffle else 'an evaluation split'} has {len(dataset)} review(s), fewer than the "
                f"{replicas} ranks (trainer.devices x trainer.num_nodes); use fewer devices or more data"
            )
        sampler = BucketBatchSampler(
            dataset.lengths, batch_size, shuffle, self.seed, self.bucket_pool, num_replicas=replicas, rank=rank
        )
        return DataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=collate,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=self._on_gpu(),  # page-locked batches: the copies to the GPU do not wait for it
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
            sampler.resume_at = at  # (an end-of-epoch checkpoint skips nothing: the next epoch starts afresh)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_set, self.eval_batch_size, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, self.eval_batch_size, shuffle=False)
