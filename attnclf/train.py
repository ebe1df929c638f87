"""`train(cfg)`: the whole run, callable from tests (`train.py` at the root is its Hydra entry point)."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from pathlib import Path

import pytorch_lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from attnclf.attention import ATTENTIONS
from attnclf.callbacks import Throughput
from attnclf.checkpoint import AtomicCheckpointIO, find_resume, load_checkpoint, run_dir_of
from attnclf.data import IMDBDataModule
from attnclf.errors import AttnclfError
from attnclf.memory import keep_freed_memory
from attnclf.module import AttnClassifierModule

log = logging.getLogger(__name__)

# the hyperparameters shown in TensorBoard's HParams dashboard
HPARAMS = (
    "attention",
    "seed",
    "optimizer.lr",
    "optimizer.weight_decay",
    "model.embed_dim",
    "model.hidden_dim",
    "model.num_layers",
    "model.dropout",
    "model.attention_scale",
    "model.attention_init",
    "data.max_length",
    "data.batch_size",
    "data.vocab_size",
    "trainer.max_epochs",
)


# what train(cfg) can return for a sweep to optimise (keys of metrics.json)
OBJECTIVES = ("val/acc", "test/acc", "test/loss", "train_tokens_per_sec")


def validate(cfg: DictConfig) -> None:
    """One-line errors for values that would otherwise fail deep inside a library."""
    if cfg.attention not in ATTENTIONS:
        raise AttnclfError(f"attention={cfg.attention!r}; allowed: {', '.join(ATTENTIONS)}")
    # (data.* values are checked by the DataModule itself, before any data is read)
    for key in ("model.embed_dim", "model.hidden_dim", "model.num_layers"):
        value = OmegaConf.select(cfg, key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise AttnclfError(f"{key}={value!r} must be a positive integer")
    lr = cfg.optimizer.lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < math.inf:
        raise AttnclfError(f"optimizer.lr={lr!r} must be a number > 0")
    objective = cfg.get("optimized_metric") or "val/acc"
    if objective not in OBJECTIVES:  # checked now, not after a whole run
        raise AttnclfError(f"optimized_metric={objective!r}; allowed: {', '.join(OBJECTIVES)}")
    for key in ("model.dropout", "model.embed_dropout"):
        value = OmegaConf.select(cfg, key)
        if not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise AttnclfError(f"{key}={value!r} must be in [0, 1)")


def hparams_of(cfg: DictConfig) -> dict:
    return {key: OmegaConf.select(cfg, key) for key in HPARAMS}


def instantiate_group(group: DictConfig | None) -> list:
    """Instantiate every `_target_` entry of a config group (callbacks, logger); null entries are off."""
    return [instantiate(c) for c in (group or {}).values() if c is not None and "_target_" in c]


def instantiate_loggers(group: DictConfig | None, resume: Path | None) -> list:
    """The loggers; on resume, TensorBoard drops what the interrupted run logged after its checkpoint."""
    loggers = []
    for c in (group or {}).values():
        if c is None or "_target_" not in c:
            continue
        extra = {}
        if resume is not None and c._target_.endswith("TensorBoardLogger"):
            extra["purge_step"] = load_checkpoint(resume)["global_step"]
        loggers.append(instantiate(c, **extra))
    return loggers


def write_hparams(trainer: L.Trainer, hparams: dict, metrics: dict) -> None:
    """Fill the HParams dashboard: hyperparameters with their final metrics (tags logged as scalars)."""
    from torch.utils.tensorboard.summary import hparams as hparams_summary

    for lg in trainer.loggers:
        if isinstance(lg, L.loggers.TensorBoardLogger):
            clean = {k: (v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in hparams.items()}
            writer = lg.experiment._get_file_writer()
            for summary in hparams_summary(clean, metrics):
                writer.add_summary(summary)
            lg.experiment.flush()


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (MB); nan where the platform does not say."""
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20  # (macOS reports bytes)


def train(cfg: DictConfig) -> float:
    """Fit, test the best checkpoint, write metrics.json; return the metric `cfg.optimized_metric`."""
    validate(cfg)
    if cfg.get("num_threads"):
        torch.set_num_threads(cfg.num_threads)
    if cfg.get("keep_freed_memory"):
        keep_freed_memory()
    resume = find_resume(cfg.ckpt_path, Path(cfg.paths.runs_dir)) if cfg.get("ckpt_path") else None
    if resume is not None:  # continue in the interrupted run's folder: checkpoints, TensorBoard curves, vocab
        cfg.paths.output_dir = str(run_dir_of(resume))
        log.info("resuming from %s", resume)
    L.seed_everything(cfg.seed, workers=True)
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)

    datamodule = IMDBDataModule(**cfg.data, seed=cfg.seed, vocab_path=str(out / "vocab.json"))
    datamodule.setup("fit")
    model = AttnClassifierModule(
        vocab_size=len(datamodule.vocab),
        num_classes=datamodule.num_classes,
        attention=cfg.attention,
        **cfg.model,
        **cfg.optimizer,
    )
    callbacks = instantiate_group(cfg.get("callbacks"))
    throughput = next((c for c in callbacks if isinstance(c, Throughput)), None) or Throughput()
    if throughput not in callbacks:
        callbacks.append(throughput)
    loggers = instantiate_loggers(cfg.get("logger"), resume)
    if not loggers:  # logger=none: the learning-rate monitor has nowhere to write (Lightning refuses it)
        callbacks = [c for c in callbacks if not isinstance(c, L.callbacks.LearningRateMonitor)]
    trainer: L.Trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()])

    start = time.perf_counter()
    trainer.fit(model, datamodule=datamodule, ckpt_path=str(resume) if resume else None, weights_only=True)
    fit_seconds = time.perf_counter() - start
    if trainer.interrupted:
        raise AttnclfError("training was interrupted; checkpoints so far are in " + str(out / "checkpoints"))

    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    tested = {}
    if cfg.get("test", True):
        tested = trainer.test(
            model, datamodule=datamodule, ckpt_path="best" if best else None, verbose=False, weights_only=True
        )[0]
    nan = float("nan")

    metrics = {
        "attention": cfg.attention,
        "seed": cfg.seed,
        "val/acc": float(model.val_acc_best.compute()) if model.val_acc_best.update_called else nan,
        "test/acc": tested.get("test/acc", nan),
        "test/loss": tested.get("test/loss", nan),
        "test/attn_entropy": tested.get("test/attn_entropy", nan),
        "test/attn_top5": tested.get("test/attn_top5", nan),
        "epochs": trainer.current_epoch,
        "steps": trainer.global_step,
        "fit_seconds": fit_seconds,
        "train_seconds": throughput.train_seconds,
        "train_tokens_per_sec": throughput.tokens_per_sec,
        "eval_reviews_per_sec": throughput.eval_reviews_per_sec,
        "peak_rss_mb": peak_rss_mb(),
        "best_checkpoint": best,
        "vocab": str(out / "vocab.json"),
        "hparams": hparams_of(cfg),
    }
    if trainer.is_global_zero:
        write_hparams(
            trainer,
            metrics["hparams"],
            {
                "val/acc_best": metrics["val/acc"],
                "test/acc": metrics["test/acc"],
                "train/tokens_per_sec": metrics["train_tokens_per_sec"],
            },
        )
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        log.info(
            "val/acc %.4f  test/acc %.4f  %.0f s  %.0f tokens/s  -> %s",
            metrics["val/acc"],
            metrics["test/acc"],
            fit_seconds,
            metrics["train_tokens_per_sec"],
            out / "metrics.json",
        )
    return metrics[cfg.get("optimized_metric") or "val/acc"]


def run(fn, cfg):
    """Call an entry point's logic; a user error becomes one line on stderr and exit status 2.

    In a sweep (Hydra multirun) the error is raised on instead, so that the sweeper
    records the job as failed and goes on with the others.
    """
    try:
        return fn(cfg)
    except AttnclfError as e:
        print(f"error: {e}", file=sys.stderr)
        if in_multirun():
            raise
        sys.exit(2)


def in_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
