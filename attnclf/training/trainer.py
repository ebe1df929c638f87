"""The process and the Trainer: warnings a user cannot act on, threads, the allocator, the configured
callbacks and loggers, and the HParams dashboard."""

from __future__ import annotations

import logging
import signal
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import pytorch_lightning as L
import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.utilities.exceptions import SIGTERMException

from attnclf.errors import AttnclfError, Interrupted
from attnclf.settings.run import PathsConfig, RunConfig
from attnclf.training.callbacks import CheckpointOnStop, ModelSummary, Throughput
from attnclf.training.checkpoint_io import AtomicCheckpointIO
from attnclf.utils.memory import keep_freed_memory
from attnclf.utils.quiet import logs_at_least

log = logging.getLogger(__name__)

# Lightning's warnings that a user of this tool cannot act on (its own internals, or settings that
# train() makes on purpose); the ones that matter stay.
QUIET = (
    # Lightning's pytree use under torch >= 2.9
    r".*isinstance\(treespec, LeafSpec\)",
    r".*torch.distributed.nn.functional.all_gather is deprecated",  # Lightning's all_gather
    # it counts parameters in fp32
    r"Precision bf16-mixed is not supported by the model summary",
    # the loaders bucket in-process on purpose (data.num_workers)
    r".*does not have many workers",
    # the first one is the best's
    r".*is called with Trainer configured with multiple `ModelCheckpoint`",
    # a mid-epoch resume: the DataModule's own state_dict skips the batches done (tests/test_resume.py)
    r".*your dataloader is not resumable",
)


def quiet_known_warnings() -> None:
    for pattern in QUIET:
        warnings.filterwarnings("ignore", message=pattern)


def hparams_of(settings, batch_size: int) -> dict:
    """The run's hyperparameters by their config keys (TensorBoard's HParams dashboard and metrics.json):
    every setting of the classifier (settings.classifier), and the run's seed, data sizes and epochs,
    data.batch_size as trained (`batch_size`: auto's choice)."""
    config = settings.classifier
    flat = {"attention": config.attention.name, **{f"attention.{k}": v for k, v in config.attention.keys.items()}}
    for section in ("model", "optimizer", "regularizer"):
        for key, value in asdict(getattr(config, section)).items():
            flat[f"{section}.{key}"] = value
    run = {
        "seed": settings.run.seed,
        "data.max_length": settings.data.max_length,
        "data.vocab_size": settings.data.vocab_size,
        "trainer.max_epochs": settings.trainer.max_epochs,
    }
    return {**flat, **run, "data.batch_size": batch_size}


def instantiate_group(group: DictConfig | None) -> list:
    """Instantiate every `_target_` entry of a config group (callbacks, logger); null entries are off."""
    return [instantiate(c) for c in (group or {}).values() if c is not None and "_target_" in c]


def quiet(trainer: L.Trainer) -> bool:
    """Whether the command asked for no progress displays: no logger (logger=none) or no training bar
    (callbacks.rich_progress_bar=null, trainer.enable_progress_bar=false)."""
    return not trainer.loggers or trainer.progress_bar_callback is None


def instantiate_loggers(group: DictConfig | None, resumed_step: int | None) -> list:
    """The loggers; on resume (at `resumed_step`), TensorBoard drops what the interrupted run logged after
    its checkpoint."""
    loggers = []
    for c in (group or {}).values():
        if c is None or "_target_" not in c:
            continue
        extra = {}
        if resumed_step is not None and c._target_.endswith("TensorBoardLogger"):
            extra["purge_step"] = resumed_step
        loggers.append(instantiate(c, **extra))
    return loggers


# min_epochs=auto: data of more than 2 classes and fewer training rows than this trains at least
# MANY_CLASS_EPOCHS epochs (the best by val/acc is tested). Measured against 3 epochs: SST-5 (5 classes,
# 8,544 rows, seeds 1-6) dot +0.85, additive +0.51 points; SST-5 cut to 5,500 rows with one class at 1.8%
# (seeds 1-3) dot +1.69, additive +0.84. Two classes gained nothing (MR at 6 epochs -0.15, CR at 10 -0.69),
# so binary data keeps 3.
SMALL_DATA_ROWS = 20_000
MANY_CLASS_EPOCHS = 10


def _epochs_by_count(trainer: L.Trainer) -> int | None:
    """trainer.max_epochs where it bounds the run (None where max_steps does, or it runs unbounded)."""
    epochs = trainer.fit_loop.max_epochs
    return None if epochs is None or epochs < 0 or trainer.max_steps > 0 else epochs


def _raise_epochs(trainer: L.Trainer, needed: int, why: str) -> None:
    """More epochs than trainer.max_epochs where `needed` is more, said in the log with why."""
    epochs = trainer.fit_loop.max_epochs
    if needed > epochs:
        trainer.fit_loop.max_epochs = needed
        log.info("trainer.max_epochs %d -> %d: %s", epochs, needed, why)


def at_least_epochs(trainer: L.Trainer, min_epochs: int | str | None, datamodule) -> None:
    """Train at least `min_epochs` epochs (more than trainer.max_epochs where it is fewer); `auto`: the rule
    above, said in one log line where it changes the epochs."""
    if min_epochs is None or _epochs_by_count(trainer) is None:
        return
    why = f"min_epochs={min_epochs}"
    if min_epochs == "auto":
        classes, rows = datamodule.num_classes, len(datamodule.train_set)
        if classes <= 2 or rows >= SMALL_DATA_ROWS:
            return
        min_epochs = MANY_CLASS_EPOCHS
        why = (
            f"min_epochs=auto: {classes} classes and {rows} training rows (more than 2 classes, fewer than "
            f"{SMALL_DATA_ROWS}: few rows a class learn for longer; the best epoch by val/acc is tested)"
        )
    _raise_epochs(trainer, min_epochs, why)


def optimizer_steps_an_epoch(trainer: L.Trainer, datamodule) -> int:
    """An epoch's optimizer steps, as Lightning will count them: this rank's batches (the length-bucketing
    sampler shards them), cut by limit_train_batches, over the accumulated gradient batches."""
    batches = -(-len(datamodule.train_set) // (datamodule.train_batch_size() * trainer.world_size))
    limit = trainer.limit_train_batches
    batches = max(1, int(batches * limit)) if isinstance(limit, float) else min(batches, int(limit))
    return -(-batches // trainer.accumulate_grad_batches)


# train/loss points an epoch at the least: small data logs more often than trainer.log_every_n_steps says
LOSS_POINTS_AN_EPOCH = 4


def log_often_enough(trainer: L.Trainer, datamodule) -> None:
    """trainer.log_every_n_steps lowered where an epoch has too few steps for LOSS_POINTS_AN_EPOCH points of
    train/loss (Lightning would log none in an epoch shorter than it), and said in the log."""
    per_epoch = optimizer_steps_an_epoch(trainer, datamodule)
    every = max(1, per_epoch // LOSS_POINTS_AN_EPOCH)
    if every < trainer.log_every_n_steps:
        log.info(
            "trainer.log_every_n_steps=%d: %d, for %d steps an epoch (train/loss at least %d times an epoch)",
            trainer.log_every_n_steps,
            every,
            per_epoch,
            min(LOSS_POINTS_AN_EPOCH, per_epoch),
        )
        trainer.log_every_n_steps = every


def at_least_steps(trainer: L.Trainer, min_steps: int | None, datamodule) -> None:
    """Train for more epochs than trainer.max_epochs where those would be fewer than `min_steps` optimizer
    steps (small data: 3 epochs of 3,000 texts are 150 steps), and say so in the log. The schedule follows
    (its length is the Trainer's estimate of the steps, read when the fit starts)."""
    if not min_steps or _epochs_by_count(trainer) is None:
        return
    per_epoch = optimizer_steps_an_epoch(trainer, datamodule)
    needed = -(-min_steps // per_epoch)
    _raise_epochs(trainer, needed, f"{per_epoch} optimizer steps an epoch, and min_steps={min_steps}")


def timed_fit(trainer: L.Trainer, module, datamodule, resume: Path | None, what: str, checkpoints: Path) -> float:
    """trainer.fit, from `resume` where given; its wall-clock seconds. A fit stopped by Ctrl-C or by SIGTERM
    (a scheduler's stop, after which Lightning would exit with status 0) is one line that says where the
    checkpoints so far are and how to go on, and a non-zero exit status (Interrupted)."""
    start = time.perf_counter()
    try:
        trainer.fit(module, datamodule=datamodule, ckpt_path=str(resume) if resume else None, weights_only=True)
    except SIGTERMException:
        raise Interrupted(stopped(what, "SIGTERM", trainer, checkpoints), signal.SIGTERM) from None
    # Lightning's own exit after Ctrl-C: said below
    except SystemExit:
        if not trainer.interrupted:
            raise
    if trainer.interrupted:
        raise Interrupted(stopped(what, "Ctrl-C", trainer, checkpoints), signal.SIGINT)
    late = next((c.by for c in trainer.callbacks if isinstance(c, CheckpointOnStop) and c.by), None)
    # asked in the last validation: the fit ended, its checkpoints written
    if late is not None:
        by = "SIGTERM" if late == signal.SIGTERM else "Ctrl-C"
        raise Interrupted(stopped(what, by, trainer, checkpoints), late)
    said_early_stop(trainer)
    return time.perf_counter() - start


def said_early_stop(trainer: L.Trainer) -> None:
    """One log line where early stopping ended the fit before trainer.max_epochs (Lightning's own is quiet)."""
    stopper = trainer.early_stopping_callback
    if stopper is None or not stopper.stopped_epoch:
        return
    log.info(
        "early stopping: %s has not bettered its best %.4f in %d validations: stopped after %d of %d epochs "
        "(callbacks.early_stopping.patience; null: off)",
        stopper.monitor,
        float(stopper.best_score),
        stopper.patience,
        trainer.current_epoch,
        trainer.max_epochs,
    )


def stopped(what: str, by: str, trainer: L.Trainer, checkpoints: Path) -> str:
    kept = sorted(checkpoints.glob("*.ckpt")) if checkpoints.is_dir() else []
    if not kept:
        return f"{what} was stopped by {by} at step {trainer.global_step}, before its first checkpoint"
    return (
        f"{what} was stopped by {by} at step {trainer.global_step}; checkpoints so far are in {checkpoints}: "
        f"resume with the same command and ckpt_path={checkpoints.parent}"
    )


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


def peak_gpu_mb(trainer: L.Trainer) -> float:
    """Peak GPU memory allocated by tensors on this rank's device (MB); nan off a GPU."""
    device = trainer.strategy.root_device
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else float("nan")


def prepare_process(run: RunConfig) -> None:
    """Process-wide settings of an entry point: warnings, threads, the allocator."""
    quiet_known_warnings()
    if run.num_threads:
        torch.set_num_threads(run.num_threads)
    if run.keep_freed_memory:
        keep_freed_memory()


def groups_in(cfg: DictConfig, paths: PathsConfig) -> DictConfig:
    """The trainer, callbacks and logger groups, their ${paths.*} read from the typed `paths` (a resumed run's
    own folder), not from the composed config, which stays as it was."""
    groups = {
        k: OmegaConf.to_container(cfg[k], resolve=False) if isinstance(cfg.get(k), DictConfig) else cfg.get(k)
        for k in ("trainer", "callbacks", "logger")
    }
    return OmegaConf.create({**groups, "paths": asdict(paths)})


def make_trainer(
    cfg: DictConfig, paths: PathsConfig, resumed_step: int | None, extra: list | None = None
) -> tuple[L.Trainer, Throughput]:
    """The Trainer with the configured callbacks (a Throughput among them, always), `extra` ones and the
    loggers, writing where `paths` says. Built before any data work, so that a value it refuses costs no
    loading."""
    cfg = groups_in(cfg, paths)
    callbacks = [*instantiate_group(cfg.get("callbacks")), *(extra or [])]
    throughput = next((c for c in callbacks if isinstance(c, Throughput)), None) or Throughput()
    if throughput not in callbacks:
        callbacks.append(throughput)
    loggers = instantiate_loggers(cfg.get("logger"), resumed_step)
    # logger=none: the learning-rate monitor has nowhere to write (Lightning refuses it)
    if not loggers:
        callbacks = [c for c in callbacks if not isinstance(c, L.callbacks.LearningRateMonitor)]
    # Lightning's own would print FLOPs it never counted
    if cfg.trainer.get("enable_model_summary", True):
        callbacks.append(ModelSummary())
    # last: its checkpoint holds what every other callback did at the step
    callbacks.append(CheckpointOnStop(Path(paths.output_dir) / "checkpoints"))
    try:
        # quietly: the Trainer's notes as it is built (the hardware found, "100% of the batches will be used",
        # a tip) would stand before a data error's one line; its warnings still show
        with logs_at_least(logging.WARNING, "pytorch_lightning", "lightning_fabric", "lightning"):
            trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()])
    # a value the Trainer refuses (precision, accelerator, devices, ...)
    except InstantiationException as e:
        why = str(e.__cause__ or e).strip().splitlines()[-1]
        raise AttnclfError(f"trainer: {why}") from e
    return trainer, throughput
