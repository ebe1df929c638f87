"""The values of the process and the run that every command which trains shares: the seed, threads and
resuming (`RunConfig`, the top-level keys of train.yaml and pretrain.yaml), the Trainer's values that
Lightning would take silently or refuse only after the data work (`TrainerConfig`), and the run and
cache folders (`PathsConfig`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.settings.data import DataConfig
from attnclf.settings.typed import typed
from attnclf.utils.checks import at_least, number, one_of, positive_int, whole
from attnclf.utils.files import check_writable_folder

# what train(cfg) can return for a sweep to optimise (keys of metrics.json)
OBJECTIVES = ("val/acc", "test/acc", "test/loss", "train_tokens_per_sec")

# a run's seed where none is given, written once: the configs take it from the dataclasses' defaults
DEFAULT_SEED = 42


@dataclass
class RunConfig:
    """The top-level values of pretrain.yaml; train.yaml's are TrainRunConfig's."""

    # the run's seed: weights, dropout, batches, carved splits
    seed: int = field(default=DEFAULT_SEED, metadata={"wanted": f"a whole number in 0..{2**32 - 1}"})
    # torch CPU threads; null = PyTorch's default
    num_threads: int | None = None
    # glibc: reuse freed memory instead of returning it to the OS (faster steps; the process keeps its peak memory)
    keep_freed_memory: bool = True
    # resume: last (the newest unfinished run under paths.runs_dir), a run folder, or a .ckpt file
    ckpt_path: str | None = None

    def check(self) -> None:
        if not 0 <= self.seed < 2**32:
            raise AttnclfError(f"seed={self.seed!r} must be a whole number in 0..{2**32 - 1}")
        positive_int("num_threads", self.num_threads, "PyTorch's default")

    @classmethod
    def of(cls, cfg):
        """The top-level values of a composed config (its groups are other objects')."""
        return typed(cls, {f.name: cfg.get(f.name) for f in fields(cls) if f.name in cfg}, "")


@dataclass
class TrainRunConfig(RunConfig):
    """The top-level values of train.yaml."""

    # test the best checkpoint on the test split at the end
    test: bool = True
    # train at least this many optimizer steps: more epochs than trainer.max_epochs where those would be fewer
    # (small data); None: trainer.max_epochs as it is
    min_steps: int | None = None
    # train at least this many epochs; auto: MANY_CLASS_EPOCHS for data of more than 2 classes and fewer than
    # SMALL_DATA_ROWS training rows (few rows a class learn for longer; the best epoch by val/acc is tested),
    # else trainer.max_epochs as it is; None: off. Early stopping (callbacks.early_stopping) ends a run 3 epochs
    # after its best val/acc: those epochs are a budget
    min_epochs: int | str | None = "auto"
    # what train(cfg) returns, for sweeps: val/acc (never tune on test/acc)
    optimized_metric: str = "val/acc"
    # model.init_from=pretrain: pretrain's settings (key=value, as on its command line) for the language models
    # made of this run's data (its data, model sizes, threads and cache folder are the run's), trained once into
    # paths.cache_dir/pretrain/ and reused by every run of the same texts and settings
    # (attnclf/training/init_from.py: cached_pretraining)
    pretraining: list[str] = field(default_factory=list)

    def check(self) -> None:
        super().check()
        positive_int("min_steps", self.min_steps, "trainer.max_epochs as it is")
        given = self.min_epochs
        if given is not None and given != "auto" and not (whole(given) and given >= 1):
            raise AttnclfError(f"min_epochs={self.min_epochs!r} must be a positive integer, auto or null")
        one_of("optimized_metric", self.optimized_metric, OBJECTIVES)


@dataclass
class TrainerConfig:
    """The Trainer's values checked before it is built (the Trainer itself is instantiated from the group,
    `_target_` and all: its other keys are Lightning's to check, when it is built, before any data work).
    Typed Any: each value's check says what it may be, as Lightning takes more than one kind for most."""

    max_epochs: Any = None
    min_epochs: Any = None
    max_steps: Any = None
    num_sanity_val_steps: Any = None
    log_every_n_steps: Any = None
    accumulate_grad_batches: Any = None
    limit_train_batches: Any = None
    limit_val_batches: Any = None
    limit_test_batches: Any = None
    val_check_interval: Any = None
    gradient_clip_val: Any = None
    accelerator: Any = None
    strategy: Any = None
    devices: Any = None

    def check(self) -> None:
        at_least("trainer.max_epochs", self.max_epochs, -1, " (-1: no limit)")
        # an untrained model's metrics.json would read as a result
        if self.max_epochs == 0:
            raise AttnclfError("trainer.max_epochs=0 would train nothing; allowed: 1 or more, or -1 (no limit)")
        at_least("trainer.min_epochs", self.min_epochs, 0)
        at_least("trainer.max_steps", self.max_steps, -1, " (-1: no limit)")
        at_least("trainer.num_sanity_val_steps", self.num_sanity_val_steps, -1, " (-1: the whole validation set)")
        positive_int("trainer.log_every_n_steps", self.log_every_n_steps, "Lightning's default")
        positive_int("trainer.accumulate_grad_batches", self.accumulate_grad_batches, "1")
        for key in ("limit_train_batches", "limit_val_batches", "limit_test_batches"):
            share_or_count(
                f"trainer.{key}", getattr(self, key), "a fraction in [0.0, 1.0] or a batch count >= 0", zero=True
            )
        share_or_count(
            "trainer.val_check_interval",
            self.val_check_interval,
            "a fraction of an epoch in (0.0, 1.0] or a batch count >= 1",
        )
        clip = self.gradient_clip_val
        if clip is not None and (not number(clip) or not 0 <= clip < math.inf):
            raise AttnclfError(f"trainer.gradient_clip_val={clip!r} must be a number >= 0 or null (no clipping)")
        self.check_devices()

    def check_devices(self) -> None:
        """A GPU asked for where there is none, and local DDP inside a multirun."""
        accelerator = str(self.accelerator or "auto")
        if accelerator in ("gpu", "cuda") and not cuda_available():
            raise AttnclfError(f"trainer.accelerator={accelerator}: no GPU found; use trainer=cpu")
        if in_multirun() and self.launches_local_ranks():
            raise AttnclfError(
                f"trainer.strategy={self.strategy} with trainer.devices={self.devices} in a multirun (-m): "
                "Lightning would start each extra rank as this whole sweep again; run each setting as its own "
                "command, or sweep with hydra/launcher=slurm (one task per GPU)"
            )

    def launches_local_ranks(self) -> bool:
        """Whether Lightning would start more ranks on this node by running the command line again."""
        from lightning_fabric.plugins.environments import SLURMEnvironment, TorchElasticEnvironment

        strategy = str(self.strategy or "auto")
        if not strategy.startswith("ddp") or "spawn" in strategy or "fork" in strategy:
            # no DDP, or ranks forked or spawned from this process
            return False
        devices = self.devices
        if isinstance(devices, (list, tuple)):
            many = len(devices) > 1
        else:
            many = str(devices) in ("-1", "auto") or (str(devices).isdigit() and int(devices) > 1)
        launched_outside = SLURMEnvironment.detect() or TorchElasticEnvironment.detect() or "LOCAL_RANK" in os.environ
        return many and not launched_outside

    @classmethod
    def of(cls, node):
        """The checked values of a trainer group (Lightning's other keys left to it)."""
        names = {f.name for f in fields(cls)}
        return typed(cls, {k: v for k, v in (node or {}).items() if k in names}, "trainer")


def share_or_count(key: str, value, allowed: str, zero: bool = False) -> None:
    """A float in [0, 1] (0 only where `zero`) or a whole number >= 1 (>= 0 where `zero`); None passes."""
    if value is None:
        return
    share = isinstance(value, float) and (0 <= value if zero else 0 < value) and value <= 1
    count = whole(value) and value >= (0 if zero else 1)
    if not (share or count):
        raise AttnclfError(f"{key}={value!r} must be {allowed}")


def in_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


@dataclass
class PathsConfig:
    """Where a run writes (conf/paths/default.yaml)."""

    output_dir: str = "."
    # where ckpt_path=last looks for the newest unfinished run
    runs_dir: str = "outputs/runs"
    # where attnclf pretrain writes, and model.init_from=latest looks
    pretrain_dir: str = "outputs/pretrain"
    # tokenised data and word vectors, shared by runs
    cache_dir: str | None = None

    def check(self) -> None:
        """The run folder and the cache folder can take files: a read-only or full disk, or a path under a
        file, is one line now, not a traceback after the data work."""
        check_writable_folder("paths.output_dir", self.output_dir)
        if self.cache_dir:
            by_env = os.environ.get("ATTNCLF_CACHE") == str(self.cache_dir)
            check_writable_folder("ATTNCLF_CACHE" if by_env else "paths.cache_dir", self.cache_dir)


PRUNERS = ("none", "median", "hyperband", "successive_halving")


@dataclass
class SearchConfig:
    """Pruning in an Optuna search (`hparams_search.*`, conf/hparams_search/): which pruner, when it may
    start; the sweeper and each of its runs build the same pruner from it (attnclf/training/pruning.py)."""

    # none (every trial runs to its end), median, hyperband or successive_halving
    pruner: str = "none"
    # validations a trial runs before it may be pruned (at least 1 for the last two)
    warmup: int = 1
    # median: trials that run to their end before any is compared with them
    startup_trials: int = 5
    # set by the sweeper for each run: its trial's id in the study
    trial: int | None = None

    def check(self) -> None:
        one_of("hparams_search.pruner", self.pruner, PRUNERS)
        at_least("hparams_search.warmup", self.warmup, 0)
        at_least("hparams_search.startup_trials", self.startup_trials, 0)

    def check_set_by_the_sweeper(self) -> None:
        """hparams_search.trial is the sweeper's to set, for each run of a search: given by hand, one line."""
        if self.trial is not None and not in_multirun():
            raise AttnclfError(
                f"hparams_search.trial={self.trial!r} is set by the Optuna sweeper for each run of a search; leave "
                "it out (a search: attnclf train -m hparams_search=imdb_optuna)"
            )

    @classmethod
    def of(cls, node) -> SearchConfig:
        search = typed(cls, node, "hparams_search")
        search.check()
        return search


def run_paths_trainer(cfg: DictConfig, run_config: type[RunConfig]) -> tuple:
    """(the top-level values as `run_config`, PathsConfig, TrainerConfig) of a command that trains, each checked."""
    run = run_config.of(cfg)
    run.check()
    paths = typed(PathsConfig, cfg.get("paths"), "paths")
    paths.check()
    trainer = TrainerConfig.of(cfg.get("trainer"))
    trainer.check()
    return run, paths, trainer


# how a trained model is read for inference (attnclf.inference.quantized)
QUANTIZE = ("none", "int8")


def check_quantize(quantize: str, device: str = "cpu") -> None:
    one_of("quantize", quantize, QUANTIZE)
    if quantize == "int8" and device != "cpu":
        raise AttnclfError(f"quantize=int8 runs on the CPU only (PyTorch's dynamic quantization); device={device}")


def cuda_available() -> bool:
    # torch imported only here: the settings are read and checked without it (seconds) where no GPU is asked for
    import torch

    return torch.cuda.is_available()


def check_device(device: str) -> None:
    """A device torch knows and this machine has, refused in one line before any checkpoint is read."""
    if device == "cpu":
        return
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as e:
        raise AttnclfError(f"device={device!r} is not a device; allowed: cpu, cuda, cuda:N") from e
    if kind == "cuda" and not cuda_available():
        raise AttnclfError(f"device={device!r}: no GPU found (CUDA is not available here); use device=cpu")
    if kind not in ("cpu", "cuda", "mps"):
        raise AttnclfError(f"device={device!r}; allowed: cpu, cuda, cuda:N")


def checkpoints_given(ckpt, what: str) -> list[str]:
    """ckpt= as a list of checkpoints or run folders (one, or an ensemble's), each there: refused before the
    command imports its model (torch, seconds)."""
    if not ckpt:
        raise AttnclfError(f"give the checkpoint to {what}: ckpt=<path to .ckpt or a run folder>")
    given = [str(ckpt)] if isinstance(ckpt, (str, Path)) else [str(c) for c in ckpt]
    for c in given:
        if not Path(c).expanduser().exists():
            raise AttnclfError(f"ckpt={c!r}: no such checkpoint or run folder")
    return given


def on_a_run(cls, cfg: DictConfig, key: str, **typed_apart):
    """An eval or faithfulness config as `cls`, checked: its top-level values, data.split as `split`, and
    the other data.* keys given (null: the run's own) as `data`, their types checked (checked whole once
    merged with the run's data.json); `typed_apart`: groups already read into their own dataclass."""
    node = OmegaConf.to_container(cfg.get("data") or {}, resolve=True)
    data = {k: v for k, v in node.items() if v is not None}
    split = data.pop("split", cls().split)
    if not isinstance(split, str):
        raise AttnclfError(f"data.split={split!r} must be a split's name, e.g. data.split=test")
    typed(DataConfig, data, "data")
    apart = ("split", "data", *typed_apart)
    values = {f.name: cfg.get(f.name) for f in fields(cls) if f.name not in apart and f.name in cfg}
    config = typed(cls, {**values, "split": split, "data": data}, key)
    for name, value in typed_apart.items():
        setattr(config, name, value)
    config.normalize()
    config.check()
    return config
