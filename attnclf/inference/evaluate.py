"""`evaluate(cfg)`: a checkpoint's accuracy, loss, macro-F1 and confusion matrix on a dataset split."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix, MulticlassF1Score

from attnclf.data.dataset import TextDataset
from attnclf.data.encoding import encode_split
from attnclf.data.loading import VALIDATION_SPLITS, label_ids
from attnclf.data.splits import carving, open_data, run_data, split_rows
from attnclf.errors import AttnclfError
from attnclf.inference.trained import Classifier
from attnclf.settings.commands import EvalConfig, eval_settings
from attnclf.settings.data import DataConfig
from attnclf.training.checkpoint import best_checkpoint, run_dir_of
from attnclf.utils.files import check_writable_file
from attnclf.utils.jsonfile import write_json
from attnclf.utils.progress import stage
from attnclf.utils.threads import torch_threads

log = logging.getLogger(__name__)


def evaluate(cfg: DictConfig) -> dict:
    """One checkpoint, or an ensemble of several (`ckpt=[a,b,...]`: their class probabilities averaged,
    each model reading the reviews with its own vocabulary). Each reads the data its run was trained on
    (its data.json), with the data.* keys given over it."""
    s = eval_settings(cfg)  # every value typed and checked, before any checkpoint or data is read
    with torch_threads(s.num_threads):
        return evaluate_as_set(s, cfg)


def evaluate_as_set(s: EvalConfig, cfg: DictConfig) -> dict:
    """evaluate() with its settings read and checked (`cfg.paths.output_dir`: where an ensemble's result goes)."""
    ckpts = [best_checkpoint(c) for c in s.ckpt]
    for c, ckpt in zip(s.ckpt, ckpts, strict=True):
        if ckpt != Path(c):
            log.info("evaluating %s, the best checkpoint of %s", ckpt, c)
    if s.output:
        out = Path(s.output)
    elif len(ckpts) == 1:
        out = run_dir_of(ckpts[0]) / f"eval_{s.split}.json"
    else:
        out = Path(cfg.paths.output_dir) / f"ensemble_{s.split}.json"
    check_writable_file("output", out)  # (before any data work: a read-only run folder is one line)
    clfs = [Classifier.from_checkpoint(ckpt, s.device) for ckpt in ckpts]
    for ckpt, clf in zip(ckpts[1:], clfs[1:], strict=True):  # (before any evaluation, not after the first)
        if clf.labels != clfs[0].labels:
            raise AttnclfError(
                f"ckpt: {ckpt} was trained on classes {clf.labels}, {ckpts[0]} on {clfs[0].labels}; an ensemble "
                "needs the same classes"
            )
    probs, labels, members = None, None, []
    for ckpt, clf in zip(ckpts, clfs, strict=True):
        data, dataset = split_as_trained(clf, s.split, s.data)
        if members and not same_rows(members[0], data, dataset):
            first = members[0]
            raise AttnclfError(
                f"ckpt: {ckpt} was trained on other data than {first['checkpoint']} ({data.path or data.train_file}, "
                f"{len(dataset)} {s.split} rows; {first['data'].path or first['data'].train_file}, "
                f"{len(first['dataset'])}); an ensemble needs runs of the same data and the same {s.split} rows"
            )
        own = np.zeros((len(dataset), clf.module.hparams.num_classes))  # (N, C) this model's probabilities
        with stage(f"eval {s.split}", len(dataset), "reviews") as advance:
            for positions, logits, _ in clf.batches(dataset, s.batch_size):
                own[positions] = F.softmax(logits.double(), -1).numpy()
                advance(len(positions))
        labels = dataset.labels[dataset.rows]
        members.append({"checkpoint": str(ckpt), "labels": clf.labels, "data": data, "dataset": dataset,
                        "accuracy": float((own.argmax(1) == labels).mean())})  # fmt: skip
        probs = own if probs is None else probs + own
    probs /= len(ckpts)
    data = members[0]["data"]
    result = {
        "checkpoint": str(ckpts[0]) if len(ckpts) == 1 else [str(c) for c in ckpts],
        "data": str(data.path or data.train_file),
        "split": s.split,
        "reviews": len(labels),
        **metrics_of(probs, labels, members[0]["labels"]),
    }
    if len(ckpts) > 1:  # each member alone, beside the ensemble
        result["members"] = [{k: m[k] for k in ("checkpoint", "accuracy")} for m in members]
    write_json(out, result)
    print_result(result)
    print(f"written to {out}")
    return result


def same_rows(member: dict, data: DataConfig, dataset: TextDataset) -> bool:
    """Whether an ensemble's member reads the same data and rows as the first (`member`)."""
    first, rows = member["data"], member["dataset"].rows
    return (first.path, first.name, first.train_file, first.test_file) == (
        data.path,
        data.name,
        data.train_file,
        data.test_file,
    ) and np.array_equal(rows, dataset.rows)


def metrics_of(probs: np.ndarray, labels: np.ndarray, names: list[str]) -> dict:
    """Accuracy, loss (mean negative log-probability of the true class), macro-F1, F1 per class and the
    confusion matrix of class probabilities (N, C) against class ids (N,)."""
    n = len(names)
    p, y = torch.from_numpy(probs), torch.from_numpy(np.asarray(labels))
    pred = p.argmax(-1)
    per_class = MulticlassF1Score(n, average=None)(pred, y)
    return {
        "accuracy": float(MulticlassAccuracy(n, average="micro")(pred, y)),
        "loss": float(-p[torch.arange(len(y)), y].clamp_min(1e-300).log().mean()),
        "macro_f1": float(MulticlassF1Score(n, average="macro")(pred, y)),
        "f1": dict(zip(names, per_class.tolist(), strict=True)),
        "labels": names,
        "confusion_matrix": MulticlassConfusionMatrix(n)(pred, y).tolist(),  # rows: true label, columns: predicted
    }


def split_as_trained(clf: Classifier, split: str, given: dict) -> tuple[DataConfig, TextDataset]:
    """The data the checkpoint's run was trained on (its record, with the data.* keys `given` over it) and
    its split `split`, encoded with the checkpoint's vocabulary, read as in its training (max_length,
    truncation), with labels as the checkpoint's class ids: the dataset's own split whole, or exactly the
    rows the run carved or folded from its training split."""
    split_of = rows_as_trained(clf, split, given)
    enc = split_of.encoded
    dataset = TextDataset(enc.remap(clf.vocab), enc.offsets, split_of.labels, split_of.rows, clf.max_length,
                          clf.truncation)  # fmt: skip
    return split_of.data, dataset


def texts_as_trained(clf: Classifier, split: str, given: dict) -> tuple[list[str], np.ndarray]:
    """The texts of the rows that split_as_trained reads, as written (None as ""), and their labels as the
    checkpoint's class ids."""
    split_of = rows_as_trained(clf, split, given)
    column = split_of.opened.ds[split_of.source][split_of.opened.text_column]
    texts = [column[int(r)] for r in split_of.rows]
    return ["" if t is None else str(t) for t in texts], split_of.labels[split_of.rows]


@dataclass
class SplitAsTrained:
    data: DataConfig
    opened: Any  # the opened data (attnclf.data.splits.open_data)
    source: str  # the data's split the rows are taken from
    encoded: Any  # that split encoded (attnclf.data.encoding.encode_split)
    labels: np.ndarray  # every row's label as the checkpoint's class id
    rows: np.ndarray  # the rows of `source` that are the split asked for


def rows_as_trained(clf: Classifier, split: str, given: dict) -> SplitAsTrained:
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
        _, _, val_rows, test_rows = split_rows(carving(data, carved["seed"], opened, len(labels)),
                                               label_ids(enc.labels, opened.remap))  # fmt: skip
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
        index = {str(i): i for i in range(len(trained))}  # plain class numbers against named classes
    unknown = sorted({str(v) for v in as_names if v not in index})
    if unknown:
        raise AttnclfError(
            f"split {split!r} has label(s) {', '.join(unknown[:5])} that the checkpoint was not trained on; "
            f"its classes: {', '.join(trained)}"
        )
    return np.fromiter((index[v] for v in as_names), dtype=np.int64, count=len(as_names))


def print_result(r: dict) -> None:
    for m in r.get("members", []):
        print(f"member {m['checkpoint']}: accuracy {m['accuracy']:.4f}")
    print(
        f"{r['split']}: {r['reviews']} reviews  {'ensemble ' if 'members' in r else ''}accuracy {r['accuracy']:.4f}  "
        f"loss {r['loss']:.4f}  macro-F1 {r['macro_f1']:.4f}"
    )
    print("F1 per class: " + "  ".join(f"{name} {v:.4f}" for name, v in r["f1"].items()))
    width = max(*(len(x) for x in r["labels"]), *(len(str(v)) for row in r["confusion_matrix"] for v in row)) + 1
    print("confusion (rows true, columns predicted):")
    print(" " * (len("  true ") + width) + "".join(f"{x:>{width + 2}}" for x in r["labels"]))
    for name, row in zip(r["labels"], r["confusion_matrix"], strict=True):
        print(f"  true {name:<{width}}" + "".join(f"{v:>{width + 2}}" for v in row))
