"""A split of the data a run was trained on, read as the run read it: the same rows (its data record,
data.json), the same tokens (its vocabulary) and its own label ids. eval, faithfulness, the attention tests
and the server's /browse read through here."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnclf.data.dataset import TextDataset
from attnclf.data.encoding import encode_split
from attnclf.data.loading import VALIDATION_SPLITS, label_ids
from attnclf.data.splits import carving, open_data, run_data, split_rows
from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier
from attnclf.settings.data import DataConfig

log = logging.getLogger(__name__)


def split_as_trained(clf: TrainedClassifier, split: str, given: dict) -> tuple[DataConfig, TextDataset]:
    """The data the checkpoint's run was trained on (its record, with the data.* keys `given` over it) and
    its split `split`, encoded with the checkpoint's vocabulary, read as in its training (max_length,
    truncation), with labels as the checkpoint's class ids: the dataset's own split whole, or exactly the
    rows the run carved or folded from its training split."""
    split_of = rows_as_trained(clf, split, given)
    enc = split_of.encoded
    dataset = TextDataset(
        enc.remap(clf.vocab), enc.offsets, split_of.labels, split_of.rows, clf.max_length, clf.truncation
    )
    return split_of.data, dataset


def texts_as_trained(clf: TrainedClassifier, split: str, given: dict) -> tuple[list[str], np.ndarray]:
    """The texts of the rows that split_as_trained reads, as written (None as ""), and their labels as the
    checkpoint's class ids."""
    split_of = rows_as_trained(clf, split, given)
    column = split_of.opened.ds[split_of.source][split_of.opened.text_column]
    texts = [column[int(r)] for r in split_of.rows]
    return ["" if t is None else str(t) for t in texts], split_of.labels[split_of.rows]


@dataclass
class SplitAsTrained:
    data: DataConfig
    # the opened data (attnclf.data.splits.open_data)
    opened: Any
    # the data's split the rows are taken from
    source: str
    # that split encoded (attnclf.data.encoding.encode_split)
    encoded: Any
    # every row's label as the checkpoint's class id
    labels: np.ndarray
    # the rows of `source` that are the split asked for
    rows: np.ndarray


def rows_as_trained(clf: TrainedClassifier, split: str, given: dict) -> SplitAsTrained:
    """Which rows of which split of the run's data (its record, `given` over it) are its split `split`."""
    data, carved, line = run_data(clf.run, clf.vocab.meta, given)
    log.info(line)
    opened = open_data(data, need_train=False)
    ds = opened.ds
    from_train = split not in ds
    if from_train:
        check_carved(split, carved, ds, data)
    source = data.train_split if from_train else split
    enc = encode_split(ds[source], opened.text_column, opened.label_column, data.cache_dir)
    labels = labels_as_trained(enc.labels, opened.names, opened.remap, clf.labels, split)
    rows = np.arange(len(labels))
    if from_train:
        _, _, val_rows, test_rows = split_rows(
            carving(data, carved["seed"], opened, len(labels)), label_ids(enc.labels, opened.remap)
        )
        rows = test_rows if split == data.test_split else val_rows
        fold = data.folds is not None and rows is test_rows
        how = f"tested on, fold {data.fold} of {data.folds}" if fold else "carved off"
        log.info("data.split=%r: the %d rows of %r that the run %s", split, len(rows), source, how)
    return SplitAsTrained(data, opened, source, enc, labels, rows)


def check_carved(split: str, carved: dict | None, ds, data: DataConfig) -> None:
    """The data has no split `split` of its own: the run carved it from its training split (its record
    says so), and this data's training split has the rows it carved from."""
    path = data.path or data.train_file
    test = carved and split == carved["test_split"] and (carved["test_size"] is not None or carved.get("folds"))
    if not (test or (carved and split in VALIDATION_SPLITS and carved["val_size"] is not None)):
        allowed = list(ds)
        if carved and (carved["test_size"] is not None or carved.get("folds")):
            allowed.append(f"{carved['test_split']} (the rows the run tested on)")
        if carved and carved["val_size"] is not None:
            allowed.append("validation (the rows the run validated on)")
        raise AttnclfError(f"data.split={split!r}; allowed for {path!r}: {', '.join(allowed)}")
    n = len(ds[carved["from"]]) if carved["from"] in ds else None
    if n != carved["rows"]:
        raise AttnclfError(
            f"data.split={split!r}: the run carved it from a {carved['from']!r} split of {carved['rows']} rows, "
            f"{path!r} has " + (f"{n}" if n is not None else "no such split") + "; give the data it was trained on "
            f"(or data.split={carved['from']} for every row of {path!r})"
        )


def labels_as_trained(values: np.ndarray, names: list[str], remap, trained: list[str], split: str) -> np.ndarray:
    """The split's labels as the checkpoint's class ids, matched by class name (so that string labels,
    remapped integers and ClassLabels line up with training whatever this data's own label set is)."""
    as_names = np.asarray(names, dtype=object)[label_ids(values, remap)]
    index = {name: i for i, name in enumerate(trained)}
    if not set(names) & set(index) and all(x.isdigit() and int(x) < len(trained) for x in names):
        # plain class numbers against named classes
        index = {str(i): i for i in range(len(trained))}
    unknown = sorted({str(v) for v in as_names if v not in index})
    if unknown:
        raise AttnclfError(
            f"split {split!r} has label(s) {', '.join(unknown[:5])} that the checkpoint was not trained on; "
            f"its classes: {', '.join(trained)}"
        )
    return np.fromiter((index[v] for v in as_names), dtype=np.int64, count=len(as_names))
