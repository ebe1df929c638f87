"""One-line errors for config values, before any data work: the checks `train(cfg)` and `pretrain(cfg)`
run first (the data's own values are checked by the DataModule, before it reads anything)."""

from __future__ import annotations

import math
import os

import torch
from omegaconf import DictConfig, OmegaConf

from attnclf.config import ClassifierConfig, classifier_config
from attnclf.data.vectors import check_embeddings
from attnclf.errors import AttnclfError
from attnclf.utils.checks import fraction, positive_int, positive_int_or_auto, positive_number
from attnclf.utils.files import check_writable_folder

# what train(cfg) can return for a sweep to optimise (keys of metrics.json)
OBJECTIVES = ("val/acc", "test/acc", "test/loss", "train_tokens_per_sec")


def check_positive_int(cfg: DictConfig, key: str) -> None:
    positive_int(key, OmegaConf.select(cfg, key))


def check_positive_number(cfg: DictConfig, key: str) -> None:
    positive_number(key, OmegaConf.select(cfg, key))


def check_positive_int_or_null(cfg: DictConfig, key: str, null_means: str) -> None:
    positive_int(key, OmegaConf.select(cfg, key), null_means)


def check_fraction(cfg: DictConfig, key: str) -> None:
    fraction(key, OmegaConf.select(cfg, key))


def check_process(cfg: DictConfig) -> None:
    """seed and num_threads: what every entry point that trains sets for the whole process."""
    seed = cfg.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise AttnclfError(f"seed={seed!r} must be a whole number in 0..{2**32 - 1}")
    check_positive_int_or_null(cfg, "num_threads", "PyTorch's default")


def check_paths(cfg: DictConfig) -> None:
    """The run folder and the cache folder can take files: a read-only or full disk, or a path under a file,
    is one line now, not a traceback after the data work."""
    check_writable_folder("paths.output_dir", cfg.paths.output_dir)
    cache = OmegaConf.select(cfg, "paths.cache_dir")
    if cache:
        by_env = os.environ.get("ATTNCLF_CACHE") == str(cache)
        check_writable_folder("ATTNCLF_CACHE" if by_env else "paths.cache_dir", cache)


def check_int_at_least(cfg: DictConfig, key: str, low: int, means: str = "") -> None:
    value = OmegaConf.select(cfg, key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise AttnclfError(f"{key}={value!r} must be a whole number >= {low}{means}")


def check_share_or_count(cfg: DictConfig, key: str, allowed: str, zero: bool = False) -> None:
    """A float in [0, 1] (0 only where `zero`) or a whole number >= 1 (>= 0 where `zero`); null passes."""
    value = OmegaConf.select(cfg, key)
    if value is None:
        return
    share = isinstance(value, float) and (0 <= value if zero else 0 < value) and value <= 1
    count = isinstance(value, int) and not isinstance(value, bool) and value >= (0 if zero else 1)
    if not (share or count):
        raise AttnclfError(f"{key}={value!r} must be {allowed}")


def check_trainer(cfg: DictConfig) -> None:
    """The Trainer's values that Lightning accepts silently or refuses only once it is built (after the data
    was read): refused now, in one line. (The rest, such as precision, the Trainer refuses when it is built,
    before any data work too: make_trainer.)"""
    check_int_at_least(cfg, "trainer.max_epochs", -1, " (-1: no limit)")
    check_int_at_least(cfg, "trainer.min_epochs", 0)
    check_int_at_least(cfg, "trainer.max_steps", -1, " (-1: no limit)")
    check_int_at_least(cfg, "trainer.num_sanity_val_steps", -1, " (-1: the whole validation set)")
    for key in ("trainer.log_every_n_steps", "trainer.accumulate_grad_batches"):
        if OmegaConf.select(cfg, key) is not None:
            check_positive_int(cfg, key)
    for key in ("trainer.limit_train_batches", "trainer.limit_val_batches", "trainer.limit_test_batches"):
        check_share_or_count(cfg, key, "a fraction in [0.0, 1.0] or a batch count >= 0", zero=True)
    check_share_or_count(
        cfg, "trainer.val_check_interval", "a fraction of an epoch in (0.0, 1.0] or a batch count >= 1"
    )
    clip = OmegaConf.select(cfg, "trainer.gradient_clip_val")
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not 0 <= clip < math.inf):
        raise AttnclfError(f"trainer.gradient_clip_val={clip!r} must be a number >= 0 or null (no clipping)")


def validate(cfg: DictConfig) -> ClassifierConfig:
    """One-line errors for values that would otherwise fail deep inside a library; the classifier's typed
    settings, checked."""
    check_process(cfg)
    check_paths(cfg)
    check_trainer(cfg)
    check_positive_int_or_null(cfg, "min_steps", "trainer.max_epochs as it is")
    if not OmegaConf.select(cfg, "data.path") and not OmegaConf.select(cfg, "data.train_file"):
        raise AttnclfError("data.path is required here: give the data's file, folder or Hub id, e.g. data.path=my.csv")
    # attention, model.*, optimizer.*, regularizer.*: typed and their ranges checked (attnclf/config.py)
    config = classifier_config(cfg)
    # (data.* values are checked by the DataModule itself, before any data is read)
    objective = cfg.get("optimized_metric") or "val/acc"
    if objective not in OBJECTIVES:  # checked now, not after a whole run
        raise AttnclfError(f"optimized_metric={objective!r}; allowed: {', '.join(OBJECTIVES)}")
    check_embeddings(config.model.embeddings, config.model.embed_dim)
    if config.model.embeddings == "word2vec":
        check_word2vec(cfg)
    check_devices(cfg)
    return config


def check_word2vec(cfg: DictConfig) -> None:
    for key in ("window", "min_count", "negative"):
        if OmegaConf.select(cfg, f"word2vec.{key}") is not None:
            check_positive_int(cfg, f"word2vec.{key}")
    positive_int_or_auto("word2vec.epochs", OmegaConf.select(cfg, "word2vec.epochs"))
    check_positive_int_or_null(cfg, "word2vec.workers", "up to 4 threads")
    check_positive_int_or_null(cfg, "word2vec.max_texts", "all of them")


def check_devices(cfg: DictConfig) -> None:
    """Before any data work: a GPU asked for where there is none, and local DDP inside a multirun."""
    accelerator = str(OmegaConf.select(cfg, "trainer.accelerator") or "auto")
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise AttnclfError(f"trainer.accelerator={accelerator}: no GPU found; use trainer=cpu")
    if in_multirun() and launches_local_ranks(cfg):
        raise AttnclfError(
            f"trainer.strategy={OmegaConf.select(cfg, 'trainer.strategy')} with "
            f"trainer.devices={OmegaConf.select(cfg, 'trainer.devices')} in a multirun (-m): Lightning would "
            "start each extra rank as this whole sweep again; run each setting as its own command, "
            "or sweep with hydra/launcher=slurm (one task per GPU)"
        )


def launches_local_ranks(cfg: DictConfig) -> bool:
    """Whether Lightning would start more ranks on this node by running the command line again."""
    from lightning_fabric.plugins.environments import SLURMEnvironment, TorchElasticEnvironment

    strategy = str(OmegaConf.select(cfg, "trainer.strategy") or "auto")
    if not strategy.startswith("ddp") or "spawn" in strategy or "fork" in strategy:
        return False  # (no DDP, or ranks forked or spawned from this process)
    devices = OmegaConf.select(cfg, "trainer.devices")
    if OmegaConf.is_list(devices) or isinstance(devices, (list, tuple)):
        many = len(devices) > 1
    else:
        many = str(devices) in ("-1", "auto") or (str(devices).isdigit() and int(devices) > 1)
    launched_outside = SLURMEnvironment.detect() or TorchElasticEnvironment.detect() or "LOCAL_RANK" in os.environ
    return many and not launched_outside


def in_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
