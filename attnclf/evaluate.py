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
from attnclf.data import Reviews, encode_split, load_splits
from attnclf.errors import AttnclfError
from attnclf.inference import Classifier

log = logging.getLogger(__name__)


def evaluate(cfg: DictConfig) -> dict:
    if not cfg.get("ckpt"):
        raise AttnclfError("give the checkpoint to evaluate: ckpt=<path to .ckpt or a run folder>")
    ckpt = best_checkpoint(cfg.ckpt)
    if ckpt != Path(cfg.ckpt):
        log.info("evaluating %s, the best checkpoint of %s", ckpt, cfg.ckpt)
    clf = Classifier.from_checkpoint(ckpt, cfg.get("device", "cpu"))
    data = cfg.data
    ds = load_splits(data.path, data.text_column, data.label_column)
    if data.split not in ds:
        raise AttnclfError(f"data.split={data.split!r}; splits in {data.path!r}: {', '.join(ds)}")
    enc = encode_split(ds[data.split], data.text_column, data.label_column, data.cache_dir)
    n = clf.module.hparams.num_classes
    bad = enc.labels[(enc.labels < 0) | (enc.labels >= n)]
    if len(bad):
        raise AttnclfError(f"split {data.split!r} has label {int(bad[0])}; labels must be in 0..{n - 1}")
    dataset = Reviews(
        enc.remap(clf.vocab), enc.offsets, enc.labels, np.arange(len(enc.labels)), clf.max_length, clf.truncation
    )

    acc = MulticlassAccuracy(n, average="micro")
    f1 = MulticlassF1Score(n, average="macro")
    confusion = MulticlassConfusionMatrix(n)
    loss_sum = 0.0
    for positions, logits, _ in clf.batches(dataset, cfg.batch_size):
        y = torch.as_tensor(enc.labels[positions])
        loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
        pred = logits.argmax(-1)
        acc.update(pred, y)
        f1.update(pred, y)
        confusion.update(pred, y)

    result = {
        "checkpoint": str(ckpt),
        "data": str(data.path),
        "split": data.split,
        "reviews": len(dataset),
        "accuracy": float(acc.compute()),
        "loss": loss_sum / len(dataset),
        "macro_f1": float(f1.compute()),
        "labels": clf.labels,
        "confusion_matrix": confusion.compute().tolist(),  # rows: true label, columns: predicted
    }
    out = Path(cfg.output) if cfg.get("output") else run_dir_of(ckpt) / f"eval_{data.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print_result(result)
    print(f"written to {out}")
    return result


def print_result(r: dict) -> None:
    print(
        f"{r['split']}: {r['reviews']} reviews  accuracy {r['accuracy']:.4f}  loss {r['loss']:.4f}  "
        f"macro-F1 {r['macro_f1']:.4f}"
    )
    width = max(*(len(x) for x in r["labels"]), *(len(str(v)) for row in r["confusion_matrix"] for v in row)) + 1
    print("confusion (rows true, columns predicted):")
    print(" " * (len("  true ") + width) + "".join(f"{x:>{width + 2}}" for x in r["labels"]))
    for name, row in zip(r["labels"], r["confusion_matrix"], strict=True):
        print(f"  true {name:<{width}}" + "".join(f"{v:>{width + 2}}" for v in row))
