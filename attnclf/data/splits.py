"""Which rows of a dataset a run trains, validates and tests on: the dataset's own splits where it has them,
else rows carved from its training split (seeded), or one fold of k stratified folds. Training and
evaluation call the same functions, so that attnclf eval and attnclf faithfulness read exactly a run's test rows."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnclf.data.loading import VALIDATION_SPLITS, load_splits, looks_local, prepare_labels, resolve_columns
from attnclf.errors import AttnclfError
from attnclf.settings.data import PATH_KEYS, RECORDED, DataConfig
from attnclf.settings.typed import typed
from attnclf.utils.jsonfile import read_json
from attnclf.utils.runfolder import RECORD

log = logging.getLogger(__name__)


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
    together cover every row. More folds than the smallest class has rows are refused (a fold without it)."""
    classes, counts = np.unique(labels, return_counts=True)
    if folds > counts.min():
        raise AttnclfError(
            f"data.folds={folds} is more than the {counts.min()} rows of the smallest class (of {len(labels)} "
            f"rows, {len(classes)} classes); give data.folds={max(2, int(counts.min()))} or fewer"
        )
    rng = np.random.default_rng([seed, 4])
    assign = np.empty(len(labels), dtype=np.int64)
    dealt = 0
    for c in classes:
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
    (None: not carved), never from the test rows. The same for the same arguments: attnclf eval rebuilds them."""
    rows, test_rows, val_rows = np.arange(n), None, None
    # k-fold cross-validation: this run tests on one fold
    if folds is not None:
        test_rows = fold_rows(labels, folds, fold, seed)
        rows = np.setdiff1d(rows, test_rows)
    # never touching a validation split
    elif test_size is not None:
        rows, test_rows = carve(rows, test_size, np.random.default_rng([seed, 2]), "data.test_size", "testing")
    train_rows = rows
    if val_size is not None:
        train_rows, val_rows = carve(rows, val_size, np.random.default_rng(seed), "data.val_size", "validation")
    return rows, train_rows, val_rows, test_rows


@dataclass
class Opened:
    """A dataset as a DataConfig reads it: its splits, columns and labels (names and any remapping)."""

    ds: object  # a datasets.DatasetDict
    text_column: str
    label_column: str
    # the class names, by class id
    names: list[str]
    # label values -> class ids where the labels are not 0..C-1 already
    remap: np.ndarray | None
    # the dataset's own validation split (None: carved from training)
    val_split: str | None
    # its own test split (None: carved from training, or a fold of it)
    test_split: str | None


def open_data(config: DataConfig, need_train: bool = True) -> Opened:
    """The dataset `config` names, its columns found and labels read; one line where it does not fit."""
    files = dict(train_file=config.train_file, validation_file=config.validation_file, test_file=config.test_file)
    ds = load_splits(config.path, config.name, **files)
    text_col, label_col = resolve_columns(ds, config.text_column, config.label_column, config.path)
    if config.label_map is not None:
        ds = map_labels(ds, label_col, config.label_map, config.path)
    ds, names, remap = prepare_labels(ds, label_col, config.path)
    if need_train and config.train_split not in ds:
        raise AttnclfError(f"dataset {config.path!r} has no split {config.train_split!r}; splits found: {list(ds)}")
    val_split = next((v for v in VALIDATION_SPLITS if v in ds and v != config.train_split), None)
    test_split = config.test_split if config.test_split in ds else None
    if config.folds is not None and test_split is not None:
        raise AttnclfError(
            f"data.folds={config.folds}: {config.path!r} has a {test_split!r} split of its own; k-fold "
            "cross-validation is for data without one (drop data.folds, or give the training file alone)"
        )
    return Opened(ds, text_col, label_col, names, remap, val_split, test_split)


def map_labels(ds, label_column: str, label_map: dict[str, str], path: str):
    """data.label_map: each labelled split's labels as the classes the map names (as names), the rows of a
    label it does not name dropped. Unlabeled splits (every label -1) stay as they are."""
    import datasets

    def namer(feature):
        names = feature.names if isinstance(feature, datasets.ClassLabel) else None
        return lambda v: names[v] if names is not None and v >= 0 else str(v)

    labelled = {s: p for s, p in ds.items() if p.unique(label_column) != [-1]}
    found = {namer(p.features[label_column])(v) for p in labelled.values() for v in p.unique(label_column)}
    unknown = sorted(set(label_map) - found)
    if unknown:
        raise AttnclfError(
            f"data.label_map names {unknown[0]!r}, not a label of {path!r} (its labels: {', '.join(sorted(found))})"
        )

    def relabel(part):
        name = namer(part.features[label_column])
        features = part.features.copy()
        features[label_column] = datasets.Value("string")
        part = part.map(
            lambda b: {label_column: [label_map.get(name(v)) for v in b[label_column]]}, batched=True, features=features
        )
        return part.filter(lambda b: [v is not None for v in b[label_column]], batched=True)

    return datasets.DatasetDict({**ds, **{split: relabel(part) for split, part in labelled.items()}})


def carving(config: DataConfig, seed: int, opened: Opened, rows: int) -> dict:
    """What is carved from the training split of `rows` rows, and how (saved with the vocabulary): a test
    split where the data has none (test_size, or fold `fold` of `folds`), a validation split where it has
    none. `split_rows` turns it into rows."""
    return {
        "from": config.train_split,
        "rows": rows,
        "seed": seed,
        "test_split": config.test_split,
        "test_size": config.test_size if opened.test_split is None and config.folds is None else None,
        # from what a carved test split left
        "val_size": config.val_size if opened.val_split is None else None,
        "folds": config.folds,
        "fold": config.fold,
    }


def split_rows(carved: dict, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(rows, train rows, validation rows, test rows) of the training split of class ids `labels`, as
    `carved` (carving(), or a run's saved record of it) says: the same rows every time."""
    return carve_splits(
        len(labels),
        carved["seed"],
        carved["test_size"],
        carved["val_size"],
        carved.get("folds"),
        carved.get("fold"),
        labels,
    )


def training_subset(train_rows: np.ndarray, train_size: int | float | None, seed: int) -> np.ndarray:
    """data.train_size: a fixed random subset of the training rows (quick runs, scaling): a share of them (a float
    in (0, 1)) or a count (a whole number); None: all."""
    if train_size is None:
        return train_rows
    n = int(round(train_size * len(train_rows))) if isinstance(train_size, float) else int(train_size)
    if not 0 < n <= len(train_rows):
        raise AttnclfError(f"data.train_size={train_size} gives {n} rows; need 1..{len(train_rows)}")
    return np.sort(np.random.default_rng([seed, 1]).permutation(train_rows)[:n])


# ---------------------------------------------------------------- a run's record of its data


def record_of(config: DataConfig, seed: int, carved: dict) -> dict:
    """What a run folder keeps of its data (RECORD): which data, read how, and the rows it carved."""
    return {"data": config.recorded(), "seed": seed, "carved": carved}


def check_still_there(config: DataConfig, run: Path, given: dict) -> None:
    """The local data a run recorded is still where it was (a key given on the command line is the user's):
    one line naming it and the run, not a Hub error for a path that is not a Hub id."""
    for key in PATH_KEYS:
        value = getattr(config, key)
        if key in given or not value or (key == "path" and not looks_local(value)):
            continue
        if not Path(value).expanduser().exists():
            raise AttnclfError(
                f"data.{key}={value!r}: the run {run} was trained on it, and it is not there (looked for from "
                f"{Path.cwd()}); give data.{key}=<where it is now>"
            )


def run_data(run: Path, vocab_meta: dict, given: dict) -> tuple[DataConfig, dict | None, str]:
    """The data a run was trained on as a DataConfig, with `given` (data.* keys from the command line) over
    it, checked; the run's record of what it carved (None: the run kept none); and a line saying which data
    this is. A run folder written before the record existed gives the DataConfig defaults (IMDb), with the
    carving its vocabulary saved."""
    try:
        record = read_json(run / RECORD)
    except FileNotFoundError:
        record = None
    carved = record["carved"] if record else vocab_meta.get("carved")
    if record:
        base, whence = dict(record["data"]), f"the run's own ({run / RECORD})"
    else:
        base, whence = {}, f"the default ({run} has no {RECORD}: trained before runs recorded their data)"
        # how it carved: its training split's name, test split's name, sizes and folds
        if carved:
            base = {
                "train_split": carved["from"],
                "test_split": carved["test_split"],
                "folds": carved.get("folds"),
                "fold": carved.get("fold"),
            }
            base.update({k: carved[k] for k in ("test_size", "val_size") if carved[k] is not None})
    config = typed(DataConfig, {**base, **given}, "data")
    config.check()
    check_still_there(config, run, given)
    where = config.path or config.train_file
    named = ", ".join(f"data.{k}={v!r}" for k, v in given.items() if k in RECORDED)
    if named:
        whence = f"{named} given" + (f"; the rest the run's own, {run / RECORD}" if record else "")
    return config, carved, f"data: {where} ({whence})"
