"""Tokenizer and vocabulary.

A plain regex tokenizer: lower-cased words (with inner apostrophes, "don't"),
numbers, and "!" / "?" as tokens of their own. IMDb's "<br />" tags are removed.
Measured against HF `tokenizers` (WordLevel + Whitespace) in
scripts/bench_tokenize.py: the regex one was faster here and gives the same words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from attnclf.errors import AttnclfError
from attnclf.utils.files import write_text_atomic
from attnclf.utils.jsonfile import dumps

# part of the cache key: change it when the rules change
TOKENIZER_VERSION = "regex-v1"
PAD, UNK = "<pad>", "<unk>"
# PAD_ID, the first: attnclf/models/names.py
UNK_ID = 1

# markup such as IMDb's <br />, removed
TAG = re.compile(r"<[^>]{0,20}>")
# words (inner apostrophes kept), numbers, ! and ?
TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[!?]")


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(TAG.sub(" ", text.lower()))


def token_spans(text: str) -> list[tuple[int, int]] | None:
    """Where each of tokenize(text)'s tokens stands in `text` itself, as (start, end) character offsets, so
    that the text can be shown as written (case, punctuation, spacing) with its tokens marked. None where
    lower-casing changes a character's length (a few non-Latin letters), so offsets cannot be trusted."""
    if len(text.lower()) != len(text):
        return None
    # same length: offsets are the text's
    blanked = TAG.sub(lambda m: " " * len(m.group()), text.lower())
    return [m.span() for m in TOKEN.finditer(blanked)]


def without_tokens(text: str, positions: Iterable[int]) -> str:
    """`text` with the tokens at `positions` (places among tokenize(text)'s) deleted, the rest as written:
    tokenize() of the result is tokenize(text) less those tokens. Where offsets cannot be traced
    (token_spans), the other tokens joined by spaces."""
    gone = set(positions)
    spans = token_spans(text)
    if spans is None:
        return " ".join(t for i, t in enumerate(tokenize(text)) if i not in gone)
    out, at = [], 0
    for i in sorted(gone):
        start, end = spans[i]
        out.append(text[at:start])
        before, after = text[start - 1 : start], text[end : end + 1]
        # the tokens either side stay apart ("a!b" less "!" is "a b"), one space where there were two, none
        # before the first word left
        if before and after and not before.isspace() and not after.isspace():
            out.append(" ")
        at = end + (after == " " and before in (" ", ""))
    return "".join([*out, text[at:]])


class Vocab:
    """Token <-> id map; id 0 is padding, id 1 unknown words."""

    def __init__(self, itos: Sequence[str], meta: dict | None = None):
        if list(itos[:2]) != [PAD, UNK]:
            raise AttnclfError(f"vocabulary must start with {PAD!r}, {UNK!r}; got {list(itos[:2])}")
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        # how the run preprocessed: max_length, truncation
        self.meta = dict(meta or {})

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        get = self.stoi.get
        return [get(t, UNK_ID) for t in tokenize(text)]

    def encode_tokens(self, tokens: Iterable[str]) -> list[int]:
        get = self.stoi.get
        return [get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[i] for i in ids]

    def save(self, path: str | Path) -> None:
        payload = {"tokenizer": TOKENIZER_VERSION, **self.meta, "itos": self.itos}
        write_text_atomic(path, dumps(payload, ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        path = Path(path)
        if not path.is_file():
            raise AttnclfError(f"vocabulary file not found: {path}")
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            itos = payload["itos"]
        except (ValueError, KeyError, TypeError) as e:
            raise AttnclfError(f"not a vocabulary file (expected JSON with 'itos'): {path}") from e
        if payload.get("tokenizer") != TOKENIZER_VERSION:
            raise AttnclfError(
                f"vocabulary {path} was made by tokenizer {payload.get('tokenizer')!r}, "
                f"this version uses {TOKENIZER_VERSION!r}"
            )
        meta = {k: v for k, v in payload.items() if k not in ("tokenizer", "itos")}
        return cls(itos, meta)

    @classmethod
    def from_counts(cls, tokens: Sequence[str], counts: np.ndarray, size: int, min_freq: int) -> Vocab:
        """The `size - 2` most frequent tokens seen at least `min_freq` times.

        Ties are broken by the token's first appearance, so the result is deterministic.
        """
        order = np.argsort(-counts, kind="stable")
        keep = [tokens[i] for i in order[: max(size - 2, 0)] if counts[i] >= min_freq]
        return cls([PAD, UNK, *keep])
