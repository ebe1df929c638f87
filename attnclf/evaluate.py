"""`evaluate(cfg)`: a checkpoint's accuracy, loss, macro-F1 and confusion matrix on a dataset split."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig
from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix, MulticlassF1Score

from attnclf.checkpoint import best_checkpoint, run_dir_of
from attnclf.data import Reviews, encode_split
from attnclf.errors import AttnclfError
from attnclf.inference import Classifier
from attnclf.loading import label_ids, load_splits, prepare_labels, resolve_columns

log = logging.getLogger(__name__)


def evaluate(cfg: DictConfig) -> dict:
    if not cfg.get("ckpt"):
        raise AttnclfError("give the checkpoint to evaluate: ckpt=<path to .ckpt or a run folder>")
    ckpt = best_checkpoint(cfg.ckpt)
    if ckpt != Path(cfg.ckpt):
        log.info("evaluating %s, the best checkpoint of %s", ckpt, cfg.ckpt)
    clf = Classifier.from_checkpoint(ckpt, cfg.get("device", "cpu"))
    data = cfg.data
    dataset = split_as_trained(data, clf)
    labels = dataset.labels
    n = clf.module.hparams.num_classes

    acc = MulticlassAccuracy(n, average="micro")
    f1 = MulticlassF1Score(n, average="macro")
    per_class = MulticlassF1Score(n, average=None)
    confusion = MulticlassConfusionMatrix(n)
    loss_sum = 0.0
    for positions, logits, _ in clf.batches(dataset, cfg.batch_size):
        y = torch.as_tensor(labels[positions])
        loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
        pred = logits.argmax(-1)
        acc.update(pred, y)
        f1.update(pred, y)
        per_class.update(pred, y)
        confusion.update(pred, y)

    result = {
        "checkpoint": str(ckpt),
        "data": str(data.path),
        "split": data.split,
        "reviews": len(dataset),
        "accuracy": float(acc.compute()),
        "loss": loss_sum / len(dataset),
        "macro_f1": float(f1.compute()),
        "f1": dict(zip(clf.labels, per_class.compute().tolist(), strict=True)),  # per class
        "labels": clf.labels,
        "confusion_matrix": confusion.compute().tolist(),  # rows: true label, columns: predicted
    }
    out = Path(cfg.output) if cfg.get("output") else run_dir_of(ckpt) / f"eval_{data.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print_result(result)
    print(f"written to {out}")
    return result


def split_as_trained(data: DictConfig, clf: Classifier) -> Reviews:
    """The split `data.split` of `data.path`, encoded with the checkpoint's vocabulary, read as in its
    training (max_length, truncation), with labels as the checkpoint's class ids."""
    ds = load_splits(data.path, data.get("name"))
    if data.split not in ds:
        raise AttnclfError(f"data.split={data.split!r}; splits in {data.path!r}: {', '.join(ds)}")
    text_col, label_col = resolve_columns(ds, data.text_column, data.label_column, data.path)
    ds, names, remap = prepare_labels(ds, label_col, data.path)
    enc = encode_split(ds[data.split], text_col, label_col, data.cache_dir)
    labels = labels_as_trained(enc.labels, names, remap, clf.labels, data.split)
    return Reviews(enc.remap(clf.vocab), enc.offsets, labels, np.arange(len(labels)), clf.max_length, clf.truncation)


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
    print(
        f"{r['split']}: {r['reviews']} reviews  accuracy {r['accuracy']:.4f}  loss {r['loss']:.4f}  "
        f"macro-F1 {r['macro_f1']:.4f}"
    )
    print("F1 per class: " + "  ".join(f"{name} {v:.4f}" for name, v in r["f1"].items()))
    width = max(*(len(x) for x in r["labels"]), *(len(str(v)) for row in r["confusion_matrix"] for v in row)) + 1
    print("confusion (rows true, columns predicted):")
    print(" " * (len("  true ") + width) + "".join(f"{x:>{width + 2}}" for x in r["labels"]))
    for name, row in zip(r["labels"], r["confusion_matrix"], strict=True):
        print(f"  true {name:<{width}}" + "".join(f"{v:>{width + 2}}" for v in row))
