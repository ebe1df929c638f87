"""The classifier module's arguments from the config (attention, model.*, optimizer.*, regularizer.*), and
back: what a resumed run compares with its checkpoint."""

from __future__ import annotations

import inspect

from omegaconf import DictConfig

from attnclf.training.module import AttnClassifierModule


def regularizer_args(cfg: DictConfig) -> dict:
    """cfg.regularizer as the module's plain arguments: regularizer, regularizer_epsilon, ..."""
    reg = cfg.get("regularizer") or {}
    args = {"regularizer": reg.get("name", "none")}
    args.update({f"regularizer_{k}": reg[k] for k in ("epsilon", "weight", "xi") if reg.get(k) is not None})
    return args


def module_settings(cfg: DictConfig) -> dict:
    """The LightningModule's arguments that the config gives (the data gives vocab_size and num_classes)."""
    return {"attention": cfg.attention, **cfg.model, **cfg.optimizer, **regularizer_args(cfg)}


# what a checkpoint saved before a setting existed had for it
MODULE_DEFAULTS = {
    k: p.default
    for k, p in inspect.signature(AttnClassifierModule.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty
}


def config_key(arg: str, cfg: DictConfig) -> str:
    """A module argument by its config key: lr -> optimizer.lr, regularizer_epsilon -> regularizer.epsilon."""
    if arg in cfg.model:
        return f"model.{arg}"
    if arg in cfg.optimizer:
        return f"optimizer.{arg}"
    return arg.replace("regularizer_", "regularizer.")
