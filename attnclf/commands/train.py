"""`attnclf train attention=additive [key=value ...]`: train a classifier. `train(cfg)` is the whole run,
callable from Python and tests: its settings checked first (attnclf/settings/train.py, no torch: a bad value is
one line at once), then the run (attnclf/training/fit.py). `command(cfg)` is what the Hydra app calls
(attnclf/commands/__init__.py: hydra_app; `python train.py` at a checkout's root too)."""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from attnclf.settings.train import TrainConfig, train_settings
from attnclf.training.resume import with_run_settings

__all__ = ["TrainConfig", "command", "train", "train_settings"]


def train(cfg: DictConfig, overrides: list[str] | None = None) -> float:
    """Fit, test the best checkpoint, write metrics.json; return the metric `cfg.optimized_metric`.
    `overrides`: the command line's (a run resumed by name takes every key they leave out from its own
    config and data record, and refuses one given that differs; None: every key of `cfg` counts as given)."""
    # a run resumed by name: its own settings
    cfg = with_run_settings(cfg, overrides)
    # every value typed and checked, before any data work (attnclf/settings/)
    s = train_settings(cfg)
    from attnclf.training.fit import fit

    return fit(s, cfg, overrides)


def command(cfg: DictConfig) -> float:
    # a run resumed by name takes the keys its command line leaves out from its own config and data record
    return train(cfg, list(HydraConfig.get().overrides.task))
