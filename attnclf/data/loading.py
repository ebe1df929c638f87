"""Any text-classification dataset through Hugging Face `datasets`: a Hub id, a local folder or one file.

`load_splits` returns a DatasetDict; `resolve_columns` finds the text and label
columns; `prepare_labels` turns the label column into class ids 0..C-1 with
names (a ClassLabel's own names, integers remapped in sorted order with their
values as names, strings encoded in sorted order), the same over all splits.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np

from attnclf.errors import AttnclfError
from attnclf.utils.quiet import logs_at_least

log = logging.getLogger(__name__)

# a single file's type -> the `datasets` builder that reads it
FILE_TYPES = {
    ".csv": ("csv", {}),
    ".tsv": ("csv", {"delimiter": "\t"}),
    ".json": ("json", {}),
    ".jsonl": ("json", {}),
    ".parquet": ("parquet", {}),
    ".txt": ("text", {}),
}
# what a local folder must hold for `datasets` to read it (files of FILE_TYPES, or a saved dataset's .arrow)
DATA_SUFFIXES = {*FILE_TYPES, ".arrow"}
VALIDATION_SPLITS = ("validation", "valid", "dev", "val")
TEXT_COLUMNS = ("text", "sentence", "review", "content", "question")
LABEL_COLUMNS = ("label", "labels", "class", "category", "sentiment", "target")
# a .txt file: one example a line, "__label__<name> <text>" (fastText's format)
FASTTEXT_LABEL = "__label__"


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


def _builder(file: Path) -> tuple[str, dict]:
    suffix = file.suffix.lower()
    if suffix not in FILE_TYPES:
        raise AttnclfError(f"{file}: unknown file type {suffix!r}; allowed: {', '.join(FILE_TYPES)}")
    return FILE_TYPES[suffix]


def _load_files(files: dict[str, Path]):
    """Splits from single files (all of one type)."""
    import datasets

    for f in files.values():
        if not f.is_file():
            raise AttnclfError(f"data file not found: {f}")
        why = _no_rows(f)
        if why:
            raise AttnclfError(f"data file {f} has no rows ({why})")
    kinds = {str(_builder(f)) for f in files.values()}
    if len(kinds) > 1:
        raise AttnclfError(f"the data files are of different types: {', '.join(str(f) for f in files.values())}")
    builder, kwargs = _builder(next(iter(files.values())))
    ds = datasets.load_dataset(builder, data_files={k: str(v) for k, v in files.items()}, **kwargs)
    for split, f in files.items():
        if len(ds[split]) == 0:
            raise AttnclfError(f"data file {f} has no rows")
    return _fasttext(ds) if builder == "text" else ds


def _no_rows(file: Path) -> str | None:
    """Why a text file holds no example ("it is empty", "only a header"), or None where it has one. Reads
    up to its first two lines that are not blank; a Parquet file is checked once loaded."""
    if file.suffix.lower() == ".parquet":
        return None
    header = file.suffix.lower() in (".csv", ".tsv")
    seen = 0
    with open(file, "rb") as f:
        for line in f:
            seen += bool(line.strip())
            if seen > header:
                return None
    return "only a header" if seen else "it is empty"


def _fasttext(ds):
    """A .txt file's lines "__label__pos a great film" -> columns label ("pos") and text."""

    def split(batch):
        labels, texts = [], []
        for line in batch["text"]:
            head, _, rest = line.partition(" ")
            if not head.startswith(FASTTEXT_LABEL):
                raise AttnclfError(
                    f"a .txt data file holds one example a line as '{FASTTEXT_LABEL}<label> <text>'; "
                    f"found {line[:60]!r}"
                )
            labels.append(head[len(FASTTEXT_LABEL) :])
            texts.append(rest)
        return {"label": labels, "text": texts}

    ds = ds.filter(lambda b: [bool(t.strip()) for t in b["text"]], batched=True)
    return ds.map(split, batched=True, remove_columns=["text"])


def looks_local(path: str) -> bool:
    """Whether `path` names a local file or folder rather than a Hub id (owner/name): it starts with . / ~,
    has more than one folder level, or ends in a data file's suffix."""
    return (
        path.startswith((".", "/", "~"))
        or os.sep in path.strip("/").split("/", 1)[-1]
        or Path(path).suffix.lower() in DATA_SUFFIXES
    )


def load_splits(
    path: str,
    name: str | None = None,
    train_file: str | None = None,
    validation_file: str | None = None,
    test_file: str | None = None,
):
    """A DatasetDict from a Hub id (with `name`, the dataset's configuration), a local folder, one file,
    or the given train/validation/test files, with one-line errors for the usual mistakes. `datasets` logs
    a file it cannot read before raising: held back, the one line here says it."""
    import datasets  # noqa: F401  (first: its import sets its loggers' levels)

    with logs_at_least(logging.CRITICAL, "datasets"):
        return read_splits(path, name, train_file, validation_file, test_file)


def read_splits(
    path: str, name: str | None, train_file: str | None, validation_file: str | None, test_file: str | None
):
    """load_splits(), its library's log as it is."""
    import datasets

    files = {
        split: Path(f).expanduser()
        for split, f in (("train", train_file), ("validation", validation_file), ("test", test_file))
        if f
    }
    path = path or ""
    local = Path(path).expanduser()
    try:
        if files:
            if "train" not in files:
                raise AttnclfError("data.validation_file / data.test_file need data.train_file too")
            return _load_files(files)
        if looks_local(path) and not local.exists():
            raise AttnclfError(f"data.path {path!r} does not exist (give a local dataset folder or file, or a Hub id)")
        if local.is_file():
            return _load_files({"train": local})
        if local.is_dir():
            if not any(f.suffix.lower() in DATA_SUFFIXES for f in local.rglob("*") if f.is_file()):
                raise AttnclfError(
                    f"data.path={path}: the folder holds no data file ({', '.join(sorted(DATA_SUFFIXES))})"
                )
            return datasets.load_dataset(str(local), name)
        check_hub_reachable(path)
        return datasets.load_dataset(path, name)
    except AttnclfError:
        raise
    except (ConnectionError, OSError) as e:
        if local.exists() or files:
            raise AttnclfError(f"could not load {path!r}: {e}") from e
        raise AttnclfError(
            f"could not load {path!r} from the Hugging Face Hub ({type(e).__name__}); "
            "if offline, set data.path to a local copy, e.g. data.path=/data/imdb"
        ) from e
    # datasets raises many kinds (DatasetNotFoundError, ValueError, ...)
    except Exception as e:
        # its last line is often generic ("An error occurred while generating the dataset"): the first error
        # of the chain names the cause (a byte that is not UTF-8, a line that is not JSON)
        cause = e
        while (cause.__cause__ or cause.__context__) is not None:
            cause = cause.__cause__ or cause.__context__
        for f in files.values() if files else [local] if local.is_file() else sorted(local.rglob("*")):
            if f.is_file() and f.suffix.lower() in FILE_TYPES:
                # the file and line at fault, in one line
                check_text_file(f)
        said = (str(cause).strip().splitlines() or [""])[0]
        raise AttnclfError(f"could not load dataset {path!r}: {type(cause).__name__}: {said}") from e


def check_text_file(path: Path) -> None:
    """Where a data file could not be read: the first byte that is not UTF-8, or a JSON Lines file's first
    line that is not JSON, as one line naming the file and the line (nothing where neither is found)."""
    if path.suffix.lower() == ".jsonl":
        json_lines(path)
    elif path.suffix.lower() != ".parquet":
        decode_utf8(path.read_bytes(), path)


def json_lines(path: Path) -> list[tuple[int, object]]:
    """A JSON Lines file's values, each with its line number (blank lines skipped); a byte that is not UTF-8
    or a line that is not JSON is one error naming the file and the line."""
    values = []
    for n, line in enumerate(decode_utf8(path.read_bytes(), path).splitlines(), 1):
        if line.strip():
            try:
                values.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                raise AttnclfError(f"{path}: line {n} is not JSON ({e.msg}); one JSON object a line") from None
    return values


def decode_utf8(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise AttnclfError(
            f"{path}: line {line} is not valid UTF-8 (byte {raw[e.start]:#04x}); save it as UTF-8"
        ) from None


def _find(columns: list[str], wanted: str, usual: tuple[str, ...], what: str, where: str, taken=()) -> str:
    if wanted in columns:
        return wanted
    found = [c for c in usual if c in columns and c not in taken]
    # the default name is not there: the one usual name that is
    if wanted == usual[0] and len(found) == 1:
        log.info("data.%s_column: using %r (no %r column)", what, found[0], wanted)
        return found[0]
    raise AttnclfError(f"{where} has no {what} column {wanted!r}; columns found: {columns} (set data.{what}_column)")


def resolve_columns(ds, text_column: str, label_column: str, path: str) -> tuple[str, str]:
    """The text and label columns: the given names, or, where the default is absent, the one usual name."""
    split = ds[next(iter(ds))]
    columns = split.column_names
    text = _find(columns, text_column, TEXT_COLUMNS, "text", repr(path))
    label = _find(columns, label_column, LABEL_COLUMNS, "label", repr(path), taken=(text,))
    for name, s in ds.items():
        missing = [c for c in (text, label) if c not in s.column_names]
        if missing:
            raise AttnclfError(f"split {name!r} of {path!r} lacks column(s) {missing}; columns found: {s.column_names}")
    return text, label


def prepare_labels(ds, label_column: str, path: str):
    """(ds with integer labels, class names, remap): remap is None, or the sorted integer values whose
    positions are the class ids (np.searchsorted(values, label))."""
    import datasets

    feature = ds[next(iter(ds))].features[label_column]
    if isinstance(feature, datasets.ClassLabel):
        return ds, list(feature.names), None
    # (a split whose every label is -1 is unlabeled, as `datasets` marks IMDb's unsupervised reviews: no class)
    seen = [s.unique(label_column) for s in ds.values()]
    values = sorted({v for u in seen if u != [-1] for v in u}, key=lambda v: (v is None, str(v)))
    if any(v is None for v in values):
        raise AttnclfError(f"{path!r}: the label column {label_column!r} has empty values")
    # strings: classes in sorted order (`datasets`' ClassLabel)
    if all(isinstance(v, str) for v in values):
        names = sorted(values)
        return ds.cast_column(label_column, datasets.ClassLabel(names=names)), names, None
    if all(isinstance(v, (int, float, bool, np.integer)) and float(v).is_integer() for v in values):
        ints = sorted({int(v) for v in values})
        if ints == list(range(len(ints))):
            return ds, [str(v) for v in ints], None
        log.info("labels %s remapped to 0..%d (their values kept as names)", ints, len(ints) - 1)
        return ds, [str(v) for v in ints], np.asarray(ints, dtype=np.int64)
    kinds = sorted({type(v).__name__ for v in values})
    raise AttnclfError(
        f"{path!r}: the label column {label_column!r} holds {', '.join(kinds)} values such as {values[0]!r}; "
        "labels must be class names (strings) or whole numbers"
    )


def label_ids(values: np.ndarray, remap: np.ndarray | None) -> np.ndarray:
    """Integer labels as class ids: positions in `remap` (sorted values), or themselves."""
    if remap is None:
        return values
    ids = np.searchsorted(remap, values)
    ids = np.clip(ids, 0, len(remap) - 1)
    bad = values[remap[ids] != values]
    if len(bad):
        raise AttnclfError(f"label {int(bad[0])} is not one of the classes {remap.tolist()}")
    return ids
