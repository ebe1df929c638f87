"""IMDb through Hugging Face `datasets`: tokenise once, cache, bucket by length.

Cache: each split is tokenised once into a flat array of ids over the split's own
token table (every distinct token, in order of first appearance), keyed by the
split's `datasets` fingerprint and the tokenizer version. A run's vocabulary is
then counted from its training rows with `np.bincount` and mapped onto the
cached ids with a lookup table, so a second start never re-tokenises and the
vocabulary still comes from the training rows only (never validation or test).
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as L
import torch
from lightning_fabric.utilities.rank_zero import rank_zero_only
from torch.utils.data import DataLoader, Dataset, Sampler

from attnclf.errors import AttnclfError
from attnclf.text import PAD_ID, TOKENIZER_VERSION, UNK_ID, Vocab, tokenize

log = logging.getLogger(__name__)

TRUNCATIONS = ("head", "tail", "head_tail")


# ---------------------------------------------------------------- loading


def load_splits(path: str, text_column: str = "text", label_column: str = "label"):
    """`datasets.load_dataset(path)` with one-line errors for the usual mistakes."""
    import datasets

    local = Path(path).expanduser()
    looks_local = path.startswith((".", "/", "~")) or os.sep in path.strip("/").split("/", 1)[-1]
    if looks_local and not local.exists():
        raise AttnclfError(f"data.path {path!r} does not exist (give a local dataset folder or a Hub id)")
    if not local.exists():
        check_hub_reachable(path)
    try:
        ds = datasets.load_dataset(str(local) if local.exists() else path)
    except (ConnectionError, OSError) as e:
        if local.exists():
            raise AttnclfError(f"could not load dataset folder {path!r}: {e}") from e
        raise AttnclfError(
            f"could not load {path!r} from the Hugging Face Hub ({type(e).__name__}); "
            "if offline, set data.path to a local copy, e.g. data.path=/data/imdb"
        ) from e
    except Exception as e:  # datasets raises many kinds (DatasetNotFoundError, ValueError, ...)
        raise AttnclfError(f"could not load dataset {path!r}: {type(e).__name__}: {e}") from e
    for name, split in ds.items():
        missing = [c for c in (text_column, label_column) if c not in split.column_names]
        if missing:
            raise AttnclfError(
                f"split {name!r} of {path!r} lacks column(s) {missing}; columns found: {split.column_names}"
            )
    return ds


def check_hub_reachable(path: str, timeout: float = 3.0) -> None:
    """Fail at once, not after `datasets`' ~30 s of retries, when the Hub cannot be reached.

    With HF_HUB_OFFLINE=1 `datasets` itself answers at once (from its cache, if the data is there).
    """
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return
    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
    except OSError as e:
        raise AttnclfError(
            f"could not load {path!r}: the Hugging Face Hub ({url.hostname}) cannot be reached ({e}); "
            "if offline, set data.path to a local copy, e.g. data.path=/data/imdb "
            "(or HF_HUB_OFFLINE=1 to use a copy in the Hub cache)"
        ) from e


def label_names(split, label_column: str, num_classes: int) -> list[str]:
    """The dataset's class names (IMDb: neg, pos), or the numbers as strings."""
    names = getattr(split.features.get(label_column), "names", None)
    return list(names) if names and len(names) == num_classes else [str(i) for i in range(num_classes)]


@dataclass
class Encoded:
    """A tokenised split: row i is ids[offsets[i]:offsets[i+1]], in ids of `table`."""

    ids: np.ndarray  # (N_tokens,) int32
    offsets: np.ndarray  # (N_rows + 1,) int64
    labels: np.ndarray  # (N_rows,) int64
    table: list[str]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def token_counts(self, rows: np.ndarray) -> np.ndarray:
        """How often each table entry occurs in the given rows."""
        keep = np.zeros(len(self.labels), dtype=bool)
        keep[rows] = True
        return np.bincount(self.ids[np.repeat(keep, self.lengths)], minlength=len(self.table))

    def remap(self, vocab: Vocab) -> np.ndarray:
        """The ids as ids of `vocab` (unknown words -> UNK_ID)."""
        get = vocab.stoi.get
        lut = np.fromiter((get(t, UNK_ID) for t in self.table), dtype=np.int32, count=len(self.table))
        return lut[self.ids]


def _encode_chunk(texts: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(ids over the chunk's own table, offsets, the table in order of first appearance)."""
    table: dict[str, int] = {}
    ids: list[int] = []
    offsets = [0]
    setdefault = table.setdefault
    for text in texts:
        ids.extend(setdefault(t, len(table)) for t in tokenize(text or ""))
        offsets.append(len(ids))
    return np.asarray(ids, dtype=np.int32), np.asarray(offsets, dtype=np.int64), list(table)


_texts = None  # the sequence a forked worker reads its slices from (set in each worker, inherited by fork)


def _inherit(texts) -> None:
    global _texts
    _texts = texts


def _encode_slice(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    return _encode_chunk(_texts[bounds[0] : bounds[1]])


def encode_texts(texts, labels, workers: int | None = None) -> Encoded:
    """Tokenise in `workers` processes (default: one per CPU, at most 8; 1 = in this one).

    `texts` is a sequence whose slices are lists of str: a list, or a `datasets`
    column, which each worker then reads from the (memory-mapped) Arrow table
    itself instead of receiving it through a pipe. Slices are tokenised in
    parallel, several per worker so that a slower core takes fewer, and their
    tables merged in order, so the table (order of first appearance) and the ids
    are exactly those of a single pass. Processes are forked (Linux), so the
    workers inherit `texts` instead of unpickling it; elsewhere the work stays
    in this process.
    """
    n = workers or min(os.cpu_count() or 1, 8)  # (more processes than that gain little on 25,000 reviews)
    fork = "fork" in multiprocessing.get_all_start_methods()
    if n <= 1 or not fork or len(texts) < 1000:
        chunks = [_encode_chunk(texts[:])]  # a slice: a datasets column converts in bulk, not row by row
    else:
        bounds = np.linspace(0, len(texts), 8 * n + 1).astype(int).tolist()
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_inherit, initargs=(texts,)) as pool:
            chunks = list(pool.map(_encode_slice, zip(bounds[:-1], bounds[1:], strict=True)))
    table: dict[str, int] = {}
    all_ids, all_offsets, start = [], [np.zeros(1, dtype=np.int64)], 0
    for ids, offsets, chunk_table in chunks:
        lut = np.fromiter((table.setdefault(t, len(table)) for t in chunk_table), np.int32, len(chunk_table))
        all_ids.append(lut[ids])
        all_offsets.append(offsets[1:] + start)
        start += len(ids)
    return Encoded(
        ids=np.concatenate(all_ids),  # int32, as the lookup tables
        offsets=np.concatenate(all_offsets),
        labels=np.asarray(labels[:], dtype=np.int64),
        table=list(table),
    )


def encode_split(split, text_column: str, label_column: str, cache_dir: str | None) -> Encoded:
    """Tokenise a `datasets.Dataset`, or load it from the cache when done before."""
    key = hashlib.sha1(f"{split._fingerprint}|{text_column}|{label_column}|{TOKENIZER_VERSION}".encode()).hexdigest()
    cache = Path(cache_dir) / f"{key[:20]}.npz" if cache_dir else None
    if cache is not None and cache.is_file():
        with np.load(cache, allow_pickle=False) as z:
            return Encoded(z["ids"], z["offsets"], z["labels"], z["table"].tolist())
    enc = encode_texts(split[text_column], split[label_column])
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".tmp{os.getpid()}.npz")  # write then rename: never a torn cache file
        np.savez(tmp, ids=enc.ids, offsets=enc.offsets, labels=enc.labels, table=np.array(enc.table, dtype=str))
        os.replace(tmp, cache)
    return enc


def split_train_val(n: int, val_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint train/validation row indices, the same for the same (n, val_size, seed)."""
    n_val = int(round(val_size * n)) if val_size < 1 else int(val_size)
    if not 0 < n_val < n:
        raise AttnclfError(f"data.val_size={val_size} leaves {n_val} of {n} rows for validation; need 1..{n - 1}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


# ---------------------------------------------------------------- batches


def truncate(ids: np.ndarray, max_length: int, mode: str) -> np.ndarray:
    """At most max_length ids (at least 1: an empty review becomes one UNK)."""
    if len(ids) == 0:
        return np.array([UNK_ID], dtype=np.int32)
    if len(ids) <= max_length:
        return ids
    if mode == "head":
        return ids[:max_length]
    if mode == "tail":
        return ids[-max_length:]
    head = max_length // 2  # head_tail: the opening and the verdict at the end
    return np.concatenate([ids[:head], ids[len(ids) - (max_length - head) :]])


class Reviews(Dataset):
    """Rows of an encoded split, truncated to `max_length` tokens (at least 1: an empty review is one UNK)."""

    def __init__(
        self,
        ids: np.ndarray,
        offsets: np.ndarray,
        labels: np.ndarray,
        rows: np.ndarray,
        max_length: int,
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


class EpochShuffle(Sampler[int]):
    """All rows, in a random order fixed by (seed, epoch); in sorted order when not shuffling."""

    def __init__(self, n: int, shuffle: bool, seed: int = 0):
        self.n, self.shuffle, self.seed = n, shuffle, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:  # Lightning calls this at every epoch start
        self.epoch = epoch

    def rng(self, stream: int = 0) -> np.random.Generator:
        return np.random.default_rng([self.seed, self.epoch, stream])

    def __iter__(self):
        return iter(self.rng().permutation(self.n).tolist() if self.shuffle else range(self.n))

    def __len__(self) -> int:
        return self.n


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar lengths, so little compute goes to padding.

    Shuffled: the epoch's shuffled rows (`self.sampler`, whose `set_epoch` Lightning
    calls) are cut into pools of `pool` batches, each pool sorted by length and cut
    into batches, and the batch order shuffled again. Not shuffled (evaluation):
    sorted by length. Under DDP (`num_replicas` R) training takes R neighbouring
    batches of a pool for each step, one per rank, so the ranks' batches at a step
    have similar lengths (the steps are shuffled); the batch list is padded by
    repeating its first batches so that every rank runs the same number of steps.
    Evaluation gives each rank every R-th batch of the sorted order, repeating nothing.
    `resume_at = (epoch, k)` skips this rank's first k batches of that epoch: a
    run resumed mid-epoch sees the rest of the same order.
    """

    def __init__(
        self,
        lengths: np.ndarray,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        pool: int = 50,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        self.lengths = np.asarray(lengths)
        self.sampler = EpochShuffle(len(self.lengths), shuffle, seed)
        self.batch_size, self.shuffle, self.pool = batch_size, shuffle, pool
        self.num_replicas, self.rank = num_replicas, rank
        self.resume_at: tuple[int, int] | None = None

    @property
    def epoch(self) -> int:
        return self.sampler.epoch

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def _batches(self) -> list[np.ndarray]:
        bs, R = self.batch_size, self.num_replicas
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            return [order[i : i + bs] for i in range(0, len(order), bs)]
        perm = np.fromiter(self.sampler, dtype=np.int64, count=len(self.sampler))
        batches = []
        for start in range(0, len(perm), bs * self.pool):
            chunk = perm[start : start + bs * self.pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batches += [chunk[i : i + bs] for i in range(0, len(chunk), bs)]
        # every rank runs as many steps (DDP syncs gradients each step): pad by repeating the first batches
        batches += batches[: -(-len(batches) // R) * R - len(batches)]
        # the ranks' batches of one step are neighbours in length order (no rank waits on a much longer
        # batch); the steps are shuffled. One rank: every batch shuffled, as before.
        steps = [batches[i : i + R] for i in range(0, len(batches), R)]
        return [b for i in self.sampler.rng(stream=1).permutation(len(steps)) for b in steps[i]]

    def __iter__(self):
        batches = self._batches()
        if self.num_replicas > 1:  # training: step k's R batches; evaluation: each review exactly once
            batches = batches[self.rank :: self.num_replicas]
        if self.resume_at is not None and self.resume_at[0] == self.epoch:
            batches = batches[self.resume_at[1] :]
        for b in batches:
            yield b.tolist()

    def __len__(self) -> int:
        n = -(-len(self.lengths) // self.batch_size)
        if self.shuffle:
            return -(-n // self.num_replicas)
        return len(range(self.rank, n, self.num_replicas))


# ---------------------------------------------------------------- datamodule


class IMDBDataModule(L.LightningDataModule):
    def __init__(
        self,
        path: str = "stanfordnlp/imdb",
        max_length: int = 400,
        batch_size: int = 64,
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
        num_classes: int = 2,
    ):
        super().__init__()
        for name, value in (
            ("max_length", max_length),
            ("batch_size", batch_size),
            ("eval_batch_size", eval_batch_size),
            ("vocab_size", vocab_size),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise AttnclfError(f"data.{name}={value!r} must be a positive integer")
        if truncation not in TRUNCATIONS:
            raise AttnclfError(f"data.truncation={truncation!r}; allowed: {', '.join(TRUNCATIONS)}")
        if not (0 < val_size < 1 or (val_size >= 1 and float(val_size).is_integer())):
            raise AttnclfError(f"data.val_size={val_size!r} must be a fraction in (0, 1) or a row count >= 1")
        self.path, self.max_length, self.batch_size = path, max_length, batch_size
        self.eval_batch_size, self.vocab_size, self.min_freq = eval_batch_size, vocab_size, min_freq
        self.val_size, self.truncation, self.bucket_pool = val_size, truncation, bucket_pool
        self.train_size = train_size
        self.num_workers, self.cache_dir, self.seed, self.vocab_path = num_workers, cache_dir, seed, vocab_path
        self.train_split, self.test_split = train_split, test_split
        self.text_column, self.label_column, self.num_classes = text_column, label_column, num_classes
        self.vocab: Vocab | None = None
        self._train_sampler: BucketBatchSampler | None = None
        self._resume_at: tuple[int, int] | None = None  # (epoch, batches done) from a checkpoint

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        ds = load_splits(self.path, self.text_column, self.label_column)
        for split in (self.train_split, self.test_split):
            if split not in ds:
                raise AttnclfError(f"dataset {self.path!r} has no split {split!r}; splits found: {list(ds)}")
        train = encode_split(ds[self.train_split], self.text_column, self.label_column, self.cache_dir)
        test = encode_split(ds[self.test_split], self.text_column, self.label_column, self.cache_dir)
        for name, enc in ((self.train_split, train), (self.test_split, test)):
            bad = enc.labels[(enc.labels < 0) | (enc.labels >= self.num_classes)]
            if len(bad):
                raise AttnclfError(
                    f"split {name!r} has label {int(bad[0])}; labels must be in 0..{self.num_classes - 1}"
                )
        train_rows, val_rows = split_train_val(len(train.labels), self.val_size, self.seed)
        if self.train_size is not None:  # a fixed random subset of the training rows (quick runs, scaling)
            n = int(round(self.train_size * len(train_rows))) if self.train_size <= 1 else int(self.train_size)
            if not 0 < n <= len(train_rows):
                raise AttnclfError(f"data.train_size={self.train_size} gives {n} rows; need 1..{len(train_rows)}")
            train_rows = np.sort(np.random.default_rng([self.seed, 1]).permutation(train_rows)[:n])
        self.vocab = Vocab.from_counts(train.table, train.token_counts(train_rows), self.vocab_size, self.min_freq)
        # how this run reads a review, saved with the vocabulary so that eval and predict read it the same way
        self.vocab.meta.update(
            max_length=self.max_length,
            truncation=self.truncation,
            labels=label_names(ds[self.train_split], self.label_column, self.num_classes),
        )
        if self.vocab_path and self.trainer_is_rank_zero():
            Path(self.vocab_path).parent.mkdir(parents=True, exist_ok=True)
            self.vocab.save(self.vocab_path)
        train_ids, test_ids = train.remap(self.vocab), test.remap(self.vocab)
        args = dict(max_length=self.max_length, truncation=self.truncation)
        self.train_set = Reviews(train_ids, train.offsets, train.labels, train_rows, **args)
        self.val_set = Reviews(train_ids, train.offsets, train.labels, val_rows, **args)
        self.test_set = Reviews(test_ids, test.offsets, test.labels, np.arange(len(test.labels)), **args)
        log.info(
            "train %d, val %d, test %d reviews; vocabulary %d",
            len(self.train_set),
            len(self.val_set),
            len(self.test_set),
            len(self.vocab),
        )

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

    def train_dataloader(self) -> DataLoader:
        loader = self._loader(self.train_set, self.batch_size, shuffle=True)
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
