"""`evaluate(cfg)`: a checkpoint's accuracy, loss, macro-F1 and confusion matrix on a dataset split."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix, MulticlassF1Score

from attnclf.data.datamodule import Reviews, carve_splits, encode_split
from attnclf.data.loading import VALIDATION_SPLITS, label_ids, load_splits, prepare_labels, resolve_columns
from attnclf.errors import AttnclfError
from attnclf.inference.classifier import Classifier, check_device
from attnclf.training.checkpoint import best_checkpoint, run_dir_of
from attnclf.utils.files import check_writable_file
from attnclf.utils.jsonfile import write_json

log = logging.getLogger(__name__)


def evaluate(cfg: DictConfig) -> dict:
    """One checkpoint, or an ensemble of several (`ckpt=[a,b,...]`: their class probabilities averaged,
    each model reading the reviews with its own vocabulary)."""
    given = cfg.get("ckpt")
    if not given:
        raise AttnclfError("give the checkpoint to evaluate: ckpt=<path to .ckpt or a run folder> (or a list)")
    given = [given] if isinstance(given, (str, Path)) else list(given)
    batch_size = cfg.get("batch_size")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise AttnclfError(f"batch_size={batch_size!r} must be a positive integer")
    check_device(cfg.get("device", "cpu"))
    ckpts = [best_checkpoint(c) for c in given]
    for c, ckpt in zip(given, ckpts, strict=True):
        if ckpt != Path(c):
            log.info("evaluating %s, the best checkpoint of %s", ckpt, c)
    data = cfg.data
    if cfg.get("output"):
        out = Path(cfg.output)
    elif len(ckpts) == 1:
        out = run_dir_of(ckpts[0]) / f"eval_{data.split}.json"
    else:
        out = Path(cfg.paths.output_dir) / f"ensemble_{data.split}.json"
    check_writable_file("output", out)  # (before any data work: a read-only run folder is one line)
    probs, labels, members = None, None, []
    for ckpt in ckpts:
        clf = Classifier.from_checkpoint(ckpt, cfg.get("device", "cpu"))
        if members and clf.labels != members[0]["labels"]:
            raise AttnclfError(
                f"ckpt: {ckpt} was trained on classes {clf.labels}, {members[0]['checkpoint']} on "
                f"{members[0]['labels']}; an ensemble needs the same classes"
            )
        dataset = split_as_trained(data, clf)
        own = np.zeros((len(dataset), clf.module.hparams.num_classes))  # (N, C) this model's probabilities
        for positions, logits, _ in clf.batches(dataset, cfg.batch_size):
            own[positions] = F.softmax(logits.double(), -1).numpy()
        labels = dataset.labels[dataset.rows]
        members.append(
            {"checkpoint": str(ckpt), "labels": clf.labels, "accuracy": float((own.argmax(1) == labels).mean())}
        )
        probs = own if probs is None else probs + own
    probs /= len(ckpts)
    result = {
        "checkpoint": str(ckpts[0]) if len(ckpts) == 1 else [str(c) for c in ckpts],
        "data": str(data.path),
        "split": data.split,
        "reviews": len(labels),
        **metrics_of(probs, labels, members[0]["labels"]),
    }
    if len(ckpts) > 1:  # each member alone, beside the ensemble
        result["members"] = [{k: m[k] for k in ("checkpoint", "accuracy")} for m in members]
    write_json(out, result)
    print_result(result)
    print(f"written to {out}")
    return result


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


def split_as_trained(data: DictConfig, clf: Classifier) -> Reviews:
    """The split `data.split` of `data.path`, encoded with the checkpoint's vocabulary, read as in its
    training (max_length, truncation), with labels as the checkpoint's class ids."""
    ds = load_splits(data.path, data.get("name"))
    carved = None if data.split in ds else carved_from(data.split, clf.vocab.meta.get("carved"), ds, data.path)
    text_col, label_col = resolve_columns(ds, data.text_column, data.label_column, data.path)
    ds, names, remap = prepare_labels(ds, label_col, data.path)
    split = data.split if carved is None else carved["from"]
    enc = encode_split(ds[split], text_col, label_col, data.cache_dir)
    labels = labels_as_trained(enc.labels, names, remap, clf.labels, data.split)
    rows = np.arange(len(labels)) if carved is None else carved_rows(data.split, carved, label_ids(enc.labels, remap))
    return Reviews(enc.remap(clf.vocab), enc.offsets, labels, rows, clf.max_length, clf.truncation)


def carved_from(split: str, carved: dict | None, ds, path: str) -> dict:
    """How the checkpoint's run carved the split `split` from its training split (the data has no such
    split of its own): its saved record, checked against this data."""
    test = carved and split == carved["test_split"] and (carved["test_size"] is not None or carved.get("folds"))
    if not (test or (carved and split in VALIDATION_SPLITS and carved["val_size"] is not None)):
        raise AttnclfError(f"data.split={split!r}; splits in {path!r}: {', '.join(ds)}")
    n = len(ds[carved["from"]]) if carved["from"] in ds else None
    if n != carved["rows"]:
        raise AttnclfError(
            f"data.split={split!r}: the run carved it from a {carved['from']!r} split of {carved['rows']} rows, "
            f"{path!r} has " + (f"{n}" if n is not None else "no such split") + "; give the data it was trained on"
        )
    return carved


def carved_rows(split: str, carved: dict, labels: np.ndarray) -> np.ndarray:
    """The rows of the training split (of class ids `labels`) that the run carved off as `split`, rebuilt
    from the seed, sizes and folds it saved."""
    which = 3 if split == carved["test_split"] else 2
    rows = carve_splits(len(labels), carved["seed"], carved["test_size"], carved["val_size"], carved.get("folds"),
                        carved.get("fold"), labels)[which]  # fmt: skip
    log.info("data.split=%r: the %d rows of %r that the run carved off", split, len(rows), carved["from"])
    return rows


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
