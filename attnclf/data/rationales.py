"""Human rationales: texts with the spans people marked as the reason for their label, read from ERASER's
released format or from one simple file, and aligned to the tokens a classifier reads.

ERASER (DeYoung et al. 2020) releases a dataset as a folder: `docs/<docid>`, one text per file (its tokens
separated by whitespace), and `{train,val,test}.jsonl`, one annotation a line:

    {"annotation_id": "negR_000.txt", "classification": "NEG",
     "evidences": [[{"docid": "negR_000.txt", "start_token": 12, "end_token": 17, "text": "..."}], ...]}

`start_token`/`end_token` count the document's whitespace-separated tokens (end exclusive); an evidence may
give `start_char`/`end_char` (character offsets in the file's text) instead. The simple format is one JSONL,
CSV or Parquet file with a text column, a label column and a column of marked spans: a list of
[start, end] character offsets in the text (end exclusive), in a CSV cell as JSON text ("[[0, 9]]").

What does not fit is left out with one line a kind (tokens that do not align, a document missing from
docs/, an empty rationale), never silently.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attnclf.data.dataset import truncate
from attnclf.data.text import Vocab, token_spans, tokenize
from attnclf.errors import AttnclfError
from attnclf.settings.data import RationalesConfig

log = logging.getLogger(__name__)

# ERASER's tokens: the document's lines split on whitespace
WORD = re.compile(r"\S+")


@dataclass
class Marked:
    """One text and the character spans (start, end: end exclusive) people marked in it."""

    id: str
    text: str
    label: str
    spans: list[tuple[int, int]]


@dataclass
class LeftOut:
    """What could not be used, by kind: the ids (or "id: why") of each, reported in one line a kind."""

    kinds: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, what: str) -> None:
        self.kinds[kind].append(what)

    def report(self) -> dict[str, int]:
        for kind, items in self.kinds.items():
            log.warning("rationales: %d %s (first: %s)", len(items), kind, items[0])
        return {kind: len(items) for kind, items in self.kinds.items()}


def read_eraser(folder: Path, split: str, left: LeftOut) -> list[Marked]:
    """The annotations of `<folder>/<split>.jsonl` with their documents' texts (docs/<docid>)."""
    marked = []
    path = folder / f"{split}.jsonl"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            ann = json.loads(line)
            ann_id, label, groups = str(ann["annotation_id"]), ann["classification"], ann.get("evidences") or []
            evidences = [ev for group in groups for ev in (group if isinstance(group, list) else [group])]
            docids = {str(ev["docid"]) for ev in evidences} or {str(d) for d in ann.get("docids") or [ann_id]}
        except (ValueError, KeyError, TypeError) as e:
            raise AttnclfError(
                f"{path}: line {n} is not an ERASER annotation (JSON with annotation_id, classification, "
                f"evidences: {type(e).__name__} {e})"
            ) from None
        if len(docids) > 1:
            left.add("annotations over several documents (a query task; one document an annotation is read)", ann_id)
            continue
        docid = docids.pop()
        doc = folder / "docs" / docid
        if not doc.is_file():
            left.add("annotations name a document missing from docs/", f"{ann_id}: {docid}")
            continue
        text = doc.read_text(encoding="utf-8")
        words = [m.span() for m in WORD.finditer(text)]
        spans = []
        for ev in evidences:
            span = evidence_span(ev, text, words)
            if span is None:
                left.add("evidences whose offsets do not align with their document's tokens", f"{ann_id}: {ev}")
            else:
                spans.append(span)
        marked.append(Marked(ann_id, text, str(label), spans))
    return marked


def evidence_span(ev: dict, text: str, words: list[tuple[int, int]]) -> tuple[int, int] | None:
    """An evidence's character span in its document, from its token offsets (or character offsets); None
    where they fall outside the document or its `text` is not the words they cover."""
    start, end = ev.get("start_token", -1), ev.get("end_token", -1)
    if isinstance(start, int) and isinstance(end, int) and start >= 0:
        if not 0 <= start < end <= len(words):
            return None
        span = (words[start][0], words[end - 1][1])
        covered = " ".join(text[a:b] for a, b in words[start:end])
    else:
        start, end = ev.get("start_char", -1), ev.get("end_char", -1)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            return None
        span = (start, end)
        covered = " ".join(text[start:end].split())
    said = ev.get("text")
    # (compared without spacing or case: "do n't" and "don't" are the same words)
    if isinstance(said, str) and said.strip() and "".join(said.split()).lower() != "".join(covered.split()).lower():
        return None
    return span


def read_marked_file(path: Path, text_column: str, label_column: str, spans_column: str, left: LeftOut):
    """The rows of one file with a text, a label and a spans column (see the module's docstring)."""
    from attnclf.data.loading import load_splits

    ds = load_splits(str(path))
    rows = ds[next(iter(ds))]
    for wanted, what in ((text_column, "text"), (label_column, "label"), (spans_column, "spans")):
        if wanted not in rows.column_names:
            raise AttnclfError(
                f"{path} has no {what} column {wanted!r}; columns found: {rows.column_names} "
                f"(set rationales.{what}_column)"
            )
    marked = []
    for n, row in enumerate(rows):
        spans, text = row[spans_column], row[text_column]
        if isinstance(spans, str):
            try:
                spans = json.loads(spans) if spans.strip() else []
            except ValueError:
                raise AttnclfError(
                    f"{path}: row {n + 1}'s {spans_column!r} is not JSON ({spans[:40]!r}); give [[start, end], ...]"
                ) from None
        if not isinstance(text, str):
            raise AttnclfError(f"{path}: row {n + 1}'s {text_column!r} is {text!r}, not a text")
        ok = []
        for s in spans or []:
            if (
                isinstance(s, (list, tuple))
                and len(s) == 2
                and all(isinstance(v, int) for v in s)
                and 0 <= s[0] < s[1] <= len(text)
            ):
                ok.append((int(s[0]), int(s[1])))
            else:
                left.add("marked spans that are not [start, end] offsets within their text", f"row {n + 1}: {s!r}")
        marked.append(Marked(f"row {n + 1}", text, str(row[label_column]), ok))
    return marked


@dataclass
class Aligned:
    """The texts as a classifier reads them, with the marked tokens: `seqs` (token ids after truncation),
    `labels` (class ids), `gold` (bool a token: marked), `spans` (the marked spans in those tokens,
    (start, end) end exclusive), `ids`."""

    seqs: list[np.ndarray]
    labels: np.ndarray
    gold: list[np.ndarray]
    spans: list[list[tuple[int, int]]]
    ids: list[str]


def class_of(label: str, classes: list[str], named: dict[str, str]) -> int:
    """A rationale set's label as the classifier's class id: the class `named` gives it, or its own name,
    matched exactly or ignoring case."""
    if label in named:
        if named[label] not in classes:
            raise AttnclfError(
                f"rationales.labels: {label!r} -> {named[label]!r} is not one of the classifier's classes {classes}"
            )
        return classes.index(named[label])
    if label in classes:
        return classes.index(label)
    folded = [c.lower() for c in classes]
    if label.lower() in folded and folded.count(label.lower()) == 1:
        return folded.index(label.lower())
    raise AttnclfError(
        f"rationales: label {label!r} is not one of the classifier's classes {classes}; name its class with "
        f"rationales.labels={{{label}: <class>}}"
    )


def align(
    marked: list[Marked],
    vocab: Vocab,
    max_length: int | None,
    truncation: str,
    classes: list[str],
    left: LeftOut,
    named: dict[str, str] | None = None,
) -> Aligned:
    """Each text as the classifier's tokens (truncated as it reads), and which of them people marked: a token
    is marked where its characters overlap a marked span. Texts left with no marked token are left out."""
    out = Aligned([], np.zeros(0, dtype=np.int64), [], [], [])
    labels = []
    for m in marked:
        # a label the classifier does not know: one line, stop
        label = class_of(m.label, classes, named or {})
        where = token_spans(m.text)
        if where is None:
            left.add("texts whose tokens cannot be placed in the text (lower-casing changes its length)", m.id)
            continue
        starts = np.array([a for a, _ in where], dtype=np.int64)
        ends = np.array([b for _, b in where], dtype=np.int64)
        kept = truncate(np.arange(len(where)), max_length, truncation) if where else np.zeros(0, dtype=np.int64)
        # a token's position in what the classifier reads
        at = np.full(len(where), -1, dtype=np.int64)
        at[kept] = np.arange(len(kept))
        spans = set()
        for a, b in m.spans:
            # tokens overlapping the span
            inside = np.flatnonzero((starts < b) & (ends > a))
            if not len(inside):
                left.add(
                    "marked spans that cover no token of the classifier (punctuation or markup only)",
                    f"{m.id}: {m.text[a:b][:40]!r}",
                )
                continue
            read = at[inside][at[inside] >= 0]
            if not len(read):
                left.add("marked spans beyond the tokens the classifier reads (max_length)", m.id)
                continue
            spans.add((int(read.min()), int(read.max()) + 1))
        if not spans:
            left.add("texts with an empty rationale (no marked token the classifier reads)", m.id)
            continue
        ids = np.asarray(vocab.encode_tokens(tokenize(m.text)), dtype=np.int64)
        seq = truncate(ids, max_length, truncation).astype(np.int64)
        gold = np.zeros(len(seq), dtype=bool)
        for a, b in spans:
            gold[a:b] = True
        out.seqs.append(seq)
        out.gold.append(gold)
        out.spans.append(sorted(spans))
        out.ids.append(m.id)
        labels.append(label)
    out.labels = np.asarray(labels, dtype=np.int64)
    return out


def read_rationales(config: RationalesConfig, left: LeftOut) -> list[Marked]:
    """The marked texts of an ERASER folder's `config.split`, or of one file's columns."""
    p = Path(config.path).expanduser()
    if p.is_dir():
        return read_eraser(p, config.split, left)
    return read_marked_file(p, config.text_column, config.label_column, config.spans_column, left)
