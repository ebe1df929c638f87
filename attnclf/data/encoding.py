"""Tokenising once, and the token cache.

Each split is tokenised once into a flat array of ids over the split's own
token table (every distinct token, in order of first appearance), keyed by the
split's `datasets` fingerprint and the tokenizer version. A run's vocabulary is
then counted from its training rows and mapped onto the cached ids with a
lookup table, so a second start never re-tokenises.

Memory stays flat in the number of rows: the split is tokenised CHUNK_ROWS rows
at a time, each chunk written straight to the cache folder; the cache's ids are
then read memory-mapped (the page cache, which DataLoader workers and the DDP
ranks of one machine share), the vocabulary is counted by streaming over them,
and a run's vocabulary maps each row's ids as it is read (Remapped), never the
whole split at once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import shutil
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock

from attnclf.data.text import TOKENIZER_VERSION, UNK_ID, Vocab, tokenize
from attnclf.utils.children import die_with
from attnclf.utils.files import writing
from attnclf.utils.stops import held

log = logging.getLogger(__name__)

# rows tokenised, and tokens counted, at a time: what bounds the memory however large the split (a chunk is
# Python lists in its worker first: at 1.6M rows 20,000-row chunks held 0.53 GB at a first start, 5,000 0.23)
CHUNK_ROWS = 5_000
# chunks a tokenising worker takes before it is replaced (see chunks_of)
WORKER_CHUNKS = 4
# the cache folder's layout: change it when the files change
CACHE_LAYOUT = "flat-v2"


@dataclass
class Encoded:
    """A tokenised split: row i is ids[offsets[i]:offsets[i+1]], in ids of `table`. From the cache the ids
    are memory-mapped, and streaming passes read their file in blocks instead, so that reading the whole split
    once does not keep it resident."""

    ids: np.ndarray  # (N_tokens,) int32
    offsets: np.ndarray  # (N_rows + 1,) int64
    labels: np.ndarray  # (N_rows,) int64
    table: list[str]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def id_blocks(self, rows_per_block: int | None = None) -> Iterator[tuple[int, int, np.ndarray]]:
        """(first row, end row, their ids) over the split, `rows_per_block` rows at a time (None: CHUNK_ROWS, read
        when called, not when defined)."""
        rows_per_block = rows_per_block or CHUNK_ROWS
        # (the cache's file where the ids are mapped from one)
        path = getattr(self.ids, "filename", None)
        for a in range(0, len(self.labels), rows_per_block):
            b = min(a + rows_per_block, len(self.labels))
            lo, hi = int(self.offsets[a]), int(self.offsets[b])
            if path is None:
                yield a, b, self.ids[lo:hi]
            else:
                yield a, b, np.fromfile(path, dtype=np.int32, count=hi - lo, offset=4 * lo)

    def token_counts(self, rows: np.ndarray) -> np.ndarray:
        """How often each table entry occurs in the given rows (counted a block of rows at a time)."""
        keep = np.zeros(len(self.labels), dtype=bool)
        keep[rows] = True
        counts = np.zeros(len(self.table), dtype=np.int64)
        for a, b, ids in self.id_blocks():
            if keep[a:b].any():
                kept = ids[np.repeat(keep[a:b], np.diff(self.offsets[a : b + 1]))]
                counts += np.bincount(kept, minlength=len(counts))
        return counts

    def remap(self, vocab: Vocab) -> Remapped:
        """The ids as ids of `vocab` (unknown words -> UNK_ID), each slice mapped as it is read."""
        get = vocab.stoi.get
        lut = np.fromiter((get(t, UNK_ID) for t in self.table), dtype=np.int32, count=len(self.table))
        return Remapped(self.ids, lut)


@dataclass
class Remapped:
    """A split's ids read as a vocabulary's ids: `lut[ids[a:b]]` for the slice asked, never a copy of the
    split (its ids may be memory-mapped)."""

    ids: np.ndarray
    lut: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, part) -> np.ndarray:
        return self.lut[self.ids[part]]


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


# the sequence a forked worker reads its slices from (set in each worker, inherited by fork)
_texts = None


def _inherit(texts, parent: int) -> None:
    global _texts
    _texts = texts
    # a worker holds nothing worth keeping: it dies at once with the run (kill -9 of it too), and leaves
    # Ctrl-C, which the terminal sends to every process of the run, to the run to stop it
    die_with(parent, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # (the parent's handler, inherited by the fork: a SIGTERM sent to a worker itself ends it)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _encode_slice(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    return _encode_chunk(_texts[bounds[0] : bounds[1]])


def chunks_of(texts, table: dict[str, int], workers: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The texts tokenised at most CHUNK_ROWS at a time, in order: (the chunk's ids, its offsets from 0), the
    ids over `table`, which the chunks fill as they come (every distinct token, in order of first appearance).

    `texts` is a sequence whose slices are lists of str: a list, or a `datasets` column, which each worker
    then reads from the (memory-mapped) Arrow table itself instead of receiving it through a pipe. Chunks are
    tokenised in `workers` processes (default: one per CPU, at most 8; 1 = in this one) and their tables
    merged in order, so the table and the ids are exactly those of a single pass. Processes are forked
    (Linux), so the workers inherit `texts` instead of unpickling it; elsewhere the work stays in this one.
    """
    # more processes than that gain little on 25,000 reviews
    n = workers or min(os.cpu_count() or 1, 8)
    fork = "fork" in multiprocessing.get_all_start_methods()
    # several chunks a worker, so that a slower core takes fewer
    size = max(1, min(CHUNK_ROWS, -(-len(texts) // (8 * n))))
    bounds = [(a, min(a + size, len(texts))) for a in range(0, len(texts), size)]
    if n <= 1 or not fork or len(texts) < 1000:
        # a slice: a datasets column converts in bulk, not row by row
        yield from merged((_encode_chunk(texts[a:b]) for a, b in bounds), table)
        return
    ctx = multiprocessing.get_context("fork")
    # fresh workers for every WORKER_CHUNKS chunks each: the Arrow pages a worker has read stay mapped in it until
    # it exits, so long-lived ones would come to hold the whole split's text (measured: 2.1 GB at 1.6M IMDb rows).
    # (A pool that replaces its workers itself forks them from a thread of its own, which can deadlock.)
    per_pool = n * WORKER_CHUNKS
    for first in range(0, len(bounds), per_pool):
        pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=_inherit, initargs=(texts, os.getpid()))
        try:
            # (the workers are forked here: a stop raised inside would be lost, or leave them waiting for good)
            with held():
                done = pool.map(_encode_slice, bounds[first : first + per_pool])
            yield from merged(done, table)
        # stopped (SIGTERM, Ctrl-C, an error): the chunks not begun are dropped, not waited for
        finally:
            pool.shutdown(cancel_futures=True)


def merged(done, table: dict[str, int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each chunk's ids over its own table, as ids over `table` (its new tokens added in order)."""
    for ids, offsets, chunk_table in done:
        lut = np.fromiter((table.setdefault(t, len(table)) for t in chunk_table), np.int32, len(chunk_table))
        yield lut[ids], offsets


def encode_texts(texts, labels, workers: int | None = None) -> Encoded:
    """The texts tokenised in memory (no cache folder)."""
    table: dict[str, int] = {}
    all_ids, all_offsets, start = [np.zeros(0, dtype=np.int32)], [np.zeros(1, dtype=np.int64)], 0
    for ids, offsets in chunks_of(texts, table, workers):
        all_ids.append(ids)
        all_offsets.append(offsets[1:] + start)
        start += len(ids)
    return Encoded(
        # int32, as the lookup tables
        ids=np.concatenate(all_ids),
        offsets=np.concatenate(all_offsets),
        labels=np.asarray(labels[:], dtype=np.int64),
        table=list(table),
    )


def encode_split(split, text_column: str, label_column: str, cache_dir: str | None) -> Encoded:
    """A `datasets.Dataset` tokenised: read from the cache folder when done before, else tokenised into it
    chunk by chunk (in memory where there is no cache folder)."""
    if not cache_dir:
        return encode_texts(split[text_column], split[label_column])
    key = hashlib.sha1(f"{split._fingerprint}|{text_column}|{label_column}|{TOKENIZER_VERSION}".encode()).hexdigest()
    folder = Path(cache_dir) / key[:20]
    enc = opened_cache(folder)
    if enc is not None:
        return enc
    folder.parent.mkdir(parents=True, exist_ok=True)
    # runs started together (the DDP ranks of a machine, a parallel sweep) tokenise once: the first writes it,
    # the others wait and then read it
    with FileLock(str(folder.with_name(f".{folder.name}.lock"))):
        enc = opened_cache(folder)
        if enc is None:
            remove_interrupted(folder)
            old = folder.with_suffix(".npz")
            if old.is_file():
                log.info("token cache %s is of an older layout; tokenising again into %s", old, folder)
            write_cache(split, text_column, label_column, folder)
            old.unlink(missing_ok=True)
            enc = opened_cache(folder)
    return enc


def remove_interrupted(folder: Path) -> None:
    """The temporary folders of tokenisations of `folder`'s split that were killed before they ended (kill -9
    leaves them; a writer holds the lock, which the caller now does), each removed with one line."""
    for tmp in sorted(folder.parent.glob(f".{folder.name}.tmp*")):
        log.warning("removing %s, left by a tokenisation that was stopped before it ended", tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def write_cache(split, text_column: str, label_column: str, folder: Path) -> None:
    """The split tokenised into `folder`, chunk by chunk: ids.int32, offsets.int64 and labels.int64 (flat
    arrays), table.json and meta.json (the counts, written last). Written beside it and renamed into place:
    a reader sees no folder or a whole one, and a failed write (a full disk) leaves neither."""
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    table: dict[str, int] = {}
    rows = tokens = 0
    try:
        with writing(folder):
            tmp.mkdir(parents=True)
            ids_file, offsets_file = open(tmp / "ids.int32", "wb"), open(tmp / "offsets.int64", "wb")
            # the chunks closed here, not when the traceback of a stop is freed: their workers end with them
            with ids_file, offsets_file, closing(chunks_of(split[text_column], table)) as chunks:
                np.zeros(1, dtype=np.int64).tofile(offsets_file)
                for ids, offsets in chunks:
                    ids.tofile(ids_file)
                    (offsets[1:] + tokens).tofile(offsets_file)
                    tokens, rows = tokens + len(ids), rows + len(offsets) - 1
            labels = split[label_column]
            with open(tmp / "labels.int64", "wb") as labels_file:
                for a in range(0, rows, CHUNK_ROWS):
                    np.asarray(labels[a : a + CHUNK_ROWS], dtype=np.int64).tofile(labels_file)
            (tmp / "table.json").write_text(json.dumps(list(table), ensure_ascii=False), encoding="utf-8")
            meta = {"layout": CACHE_LAYOUT, "rows": rows, "tokens": tokens, "table": len(table)}
            (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
            os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def opened_cache(folder: Path) -> Encoded | None:
    """The split cached in `folder`, its arrays memory-mapped; None where there is none. One that cannot be
    read (cut short, another layout, not ours) is said in one warning and removed, to be tokenised again."""
    if not folder.is_dir():
        return None
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if meta.get("layout") != CACHE_LAYOUT:
            raise ValueError(f"layout {meta.get('layout')!r}, not {CACHE_LAYOUT!r}")
        table = json.loads((folder / "table.json").read_text(encoding="utf-8"))
        ids = mapped(folder / "ids.int32", np.int32, meta["tokens"])
        offsets = mapped(folder / "offsets.int64", np.int64, meta["rows"] + 1)
        labels = mapped(folder / "labels.int64", np.int64, meta["rows"])
        if len(table) != meta["table"] or int(offsets[-1]) != meta["tokens"]:
            raise ValueError("its table or offsets disagree with its meta.json")
    # cut short, or not ours: tokenise again and write it anew
    except Exception as e:
        log.warning("token cache %s cannot be read (%s: %s); tokenising again", folder, type(e).__name__, e)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return Encoded(ids, offsets, labels, table)


def mapped(path: Path, dtype, count: int) -> np.ndarray:
    """The flat array of `count` values in `path`, memory-mapped (read-only); a file of another size is refused."""
    size = path.stat().st_size
    if size != count * np.dtype(dtype).itemsize:
        raise ValueError(f"{path.name} holds {size} bytes, not {count} values of {np.dtype(dtype).name}")
    # (an empty file cannot be mapped)
    return np.memmap(path, dtype=dtype, mode="r", shape=(count,)) if count else np.zeros(0, dtype=dtype)
