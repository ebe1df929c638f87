"""Tokenising once, and the token cache.

Each split is tokenised once into a flat array of ids over the split's own
token table (every distinct token, in order of first appearance), keyed by the
split's `datasets` fingerprint and the tokenizer version. A run's vocabulary is
then counted from its training rows and mapped onto the cached ids with a
lookup table, so a second start never re-tokenises.
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

from attnclf.data.text import TOKENIZER_VERSION, UNK_ID, Vocab, tokenize
from attnclf.utils.files import write_atomic

log = logging.getLogger(__name__)


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


# the sequence a forked worker reads its slices from (set in each worker, inherited by fork)
_texts = None


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
    # more processes than that gain little on 25,000 reviews
    n = workers or min(os.cpu_count() or 1, 8)
    fork = "fork" in multiprocessing.get_all_start_methods()
    if n <= 1 or not fork or len(texts) < 1000:
        # a slice: a datasets column converts in bulk, not row by row
        chunks = [_encode_chunk(texts[:])]
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
        # int32, as the lookup tables
        ids=np.concatenate(all_ids),
        offsets=np.concatenate(all_offsets),
        labels=np.asarray(labels[:], dtype=np.int64),
        table=list(table),
    )


def encode_split(split, text_column: str, label_column: str, cache_dir: str | None) -> Encoded:
    """Tokenise a `datasets.Dataset`, or load it from the cache when done before."""
    key = hashlib.sha1(f"{split._fingerprint}|{text_column}|{label_column}|{TOKENIZER_VERSION}".encode()).hexdigest()
    cache = Path(cache_dir) / f"{key[:20]}.npz" if cache_dir else None
    if cache is not None and cache.is_file():
        try:
            with np.load(cache, allow_pickle=False) as z:
                return Encoded(z["ids"], z["offsets"], z["labels"], z["table"].tolist())
        # cut short, or not ours: tokenise again and write it anew
        except Exception as e:
            log.warning("token cache %s cannot be read (%s: %s); tokenising again", cache, type(e).__name__, e)
    enc = encode_texts(split[text_column], split[label_column])
    if cache is not None:
        # write then rename: never a torn cache file (a full disk leaves none), and two runs writing at once
        # each rename a whole one
        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, ids=enc.ids, offsets=enc.offsets, labels=enc.labels, table=np.array(enc.table, dtype=str))

        write_atomic(cache, write)
    return enc
