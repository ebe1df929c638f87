"""`attnclf eval ckpt=<run>`: a checkpoint's (or an ensemble's) accuracy, loss, macro-F1 and confusion matrix
on a split of the data it was trained on. `evaluate(cfg)`, its settings (`EvalConfig`), its Hydra entry."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from attnclf.errors import AttnclfError
from attnclf.settings.data import DataConfig
from attnclf.settings.defaults import store_run_reader_defaults
from attnclf.settings.run import check_device, check_quantize, checkpoints_given, on_a_run
from attnclf.utils.checks import positive_int
from attnclf.utils.files import check_writable_file
from attnclf.utils.jsonfile import write_json
from attnclf.utils.predictions import Predictions, predictions_name, write_predictions
from attnclf.utils.progress import stage
from attnclf.utils.threads import torch_threads

log = logging.getLogger(__name__)


def evaluate(cfg: DictConfig) -> dict:
    """One checkpoint, or an ensemble of several (`ckpt=[a,b,...]`: their class probabilities averaged,
    each model reading the reviews with its own vocabulary). Each reads the data its run was trained on
    (its data.json), with the data.* keys given over it."""
    # every value typed and checked, before any checkpoint or data is read
    s = eval_settings(cfg)
    with torch_threads(s.num_threads):
        return evaluate_as_set(s, cfg)


def evaluate_as_set(s: EvalConfig, cfg: DictConfig) -> dict:
    """evaluate() with its settings read and checked (`cfg.paths.output_dir`: where an ensemble's result goes)."""
    # (the model's imports here: the settings are read and refused without torch)
    import torch.nn.functional as F

    from attnclf.inference.as_trained import split_as_trained
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.training.checkpoint import best_checkpoint, run_dir_of

    ckpts = [best_checkpoint(c) for c in s.ckpt]
    for c, ckpt in zip(s.ckpt, ckpts, strict=True):
        if ckpt != Path(c):
            log.info("evaluating %s, the best checkpoint of %s", ckpt, c)
    if s.output:
        out = Path(s.output)
    elif len(ckpts) == 1:
        # an int8 evaluation apart from the float one: eval_<split>_int8.json
        out = run_dir_of(ckpts[0]) / f"eval_{s.split}{'' if s.quantize == 'none' else '_' + s.quantize}.json"
    else:
        out = Path(cfg.paths.output_dir) / f"ensemble_{s.split}.json"
    # before any data work: a read-only run folder is one line
    check_writable_file("output", out)
    clfs = [TrainedClassifier.from_checkpoint(ckpt, s.device, s.quantize) for ckpt in ckpts]
    # before any evaluation, not after the first
    for ckpt, clf in zip(ckpts[1:], clfs[1:], strict=True):
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
        # (N, C) this model's probabilities
        own = np.zeros((len(dataset), clf.module.hparams.num_classes))
        with stage(f"eval {s.split}", len(dataset), "reviews") as advance:
            for positions, logits, _ in clf.batches(dataset, s.batch_size):
                own[positions] = F.softmax(logits.double(), -1).numpy()
                advance(len(positions))
        labels = dataset.labels[dataset.rows]
        members.append(
            {
                "checkpoint": str(ckpt),
                "labels": clf.labels,
                "data": data,
                "dataset": dataset,
                "accuracy": float((own.argmax(1) == labels).mean()),
            }
        )
        probs = own if probs is None else probs + own
    probs /= len(ckpts)
    data = members[0]["data"]
    result = {
        "checkpoint": str(ckpts[0]) if len(ckpts) == 1 else [str(c) for c in ckpts],
        "data": str(data.path or data.train_file),
        "split": s.split,
        # none, or int8: the model as quantized
        "quantize": s.quantize,
        "reviews": len(labels),
        **metrics_of(probs, labels, members[0]["labels"]),
    }
    # each member alone, beside the ensemble
    if len(ckpts) > 1:
        result["members"] = [{k: m[k] for k in ("checkpoint", "accuracy")} for m in members]
    write_json(out, result)
    first = members[0]["dataset"]
    found = Predictions(first.rows, labels, probs, members[0]["labels"], s.split, result["data"])
    kept = predictions_path(s, out, len(ckpts) > 1)
    write_predictions(kept, found)
    print_result(result)
    print(f"written to {out} (each example's prediction: {kept})")
    return result


def predictions_path(s: EvalConfig, out: Path, ensemble: bool) -> Path:
    """Where the evaluated examples' predictions go: a run's own evaluation beside its metrics, as the run
    folder's predictions_<split>.parquet (predictions_<split>_int8.parquet for int8); an ensemble's or a given
    output's beside that file, named after it (<output stem>.predictions.parquet)."""
    if s.output or ensemble:
        return out.with_name(f"{out.stem}.predictions.parquet")
    return out.with_name(predictions_name(s.split, s.quantize))


def same_rows(member: dict, data: DataConfig, dataset) -> bool:
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
    import torch
    from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix, MulticlassF1Score

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
        # rows: true label, columns: predicted
        "confusion_matrix": MulticlassConfusionMatrix(n)(pred, y).tolist(),
    }


def print_result(r: dict) -> None:
    for m in r.get("members", []):
        print(f"member {m['checkpoint']}: accuracy {m['accuracy']:.4f}")
    int8 = "" if r.get("quantize", "none") == "none" else f"{r['quantize']} "
    print(
        f"{r['split']}: {r['reviews']} reviews  {int8}{'ensemble ' if 'members' in r else ''}accuracy "
        f"{r['accuracy']:.4f}  "
        f"loss {r['loss']:.4f}  macro-F1 {r['macro_f1']:.4f}"
    )
    print("F1 per class: " + "  ".join(f"{name} {v:.4f}" for name, v in r["f1"].items()))
    width = max(*(len(x) for x in r["labels"]), *(len(str(v)) for row in r["confusion_matrix"] for v in row)) + 1
    print("confusion (rows true, columns predicted):")
    print(" " * (len("  true ") + width) + "".join(f"{x:>{width + 2}}" for x in r["labels"]))
    for name, row in zip(r["labels"], r["confusion_matrix"], strict=True):
        print(f"  true {name:<{width}}" + "".join(f"{v:>{width + 2}}" for v in row))


@dataclass
class EvalConfig:
    """`attnclf eval`'s settings (conf/eval.yaml). `data`: the data.* keys given, each over the run's own
    (data.json)."""

    # a checkpoint or run folder, or a list of them (an ensemble: the models' class probabilities averaged)
    ckpt: Any = None
    # the JSON written; None: <run folder>/eval_<split>.json (an ensemble's: <hydra run dir>/ensemble_<split>.json)
    output: str | None = None
    batch_size: int = 256
    # cpu or cuda
    device: str = "cpu"
    # torch CPU threads, as train's; None: PyTorch's default
    num_threads: int | None = None
    # data.split on the command line: any split of the data, or the test/validation rows the run carved from
    # its training split
    split: str = "test"
    # none, or int8: the encoder's recurrent layers and the output layer in int8 (CPU)
    quantize: str = "none"
    data: dict = field(default_factory=dict)

    def normalize(self) -> None:
        self.ckpt = checkpoints_given(self.ckpt, "evaluate")

    def check(self) -> None:
        positive_int("batch_size", self.batch_size)
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        check_device(self.device)
        check_quantize(self.quantize, self.device)


# conf/eval.yaml starts from these defaults
store_run_reader_defaults("eval", EvalConfig)


def eval_settings(cfg: DictConfig) -> EvalConfig:
    return on_a_run(EvalConfig, cfg, "eval")


# what the Hydra app `attnclf eval` calls with its composed config (attnclf/commands/__init__.py)
command = evaluate
