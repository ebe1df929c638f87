"""`attnclf pretrain [data.path=...]`: pretrain the encoder as two language models (a forward and a backward
one on one embedding), for a classifier to start from (`attnclf train model.init_from=<run>`)."""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from attnclf.settings.lm import pretrain_settings
from attnclf.training.resume import with_run_settings


def pretrain(cfg: DictConfig, overrides: list[str] | None = None) -> float:
    """Fit both language models, write metrics.json; return the best val/loss (mean NLL per token).
    `overrides`: the command line's (a run resumed by name takes every key they leave out from its own
    config, and refuses one given that differs; None: every key of `cfg` counts as given)."""
    # a run resumed by name: its own settings
    cfg = with_run_settings(cfg, overrides, "pretrain")
    # every value typed and checked, before any data work
    s = pretrain_settings(cfg)
    from attnclf.training.pretrain import fit_language_models

    return fit_language_models(s, cfg)


def command(cfg: DictConfig) -> float:
    # a run resumed by name takes the keys its command line leaves out from its own config
    return pretrain(cfg, list(HydraConfig.get().overrides.task))
