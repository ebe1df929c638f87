"""Pruning in an Optuna search (conf/hparams_search/): each trial reports `val/acc` after every validation
to the study, and the study's pruner may stop it there, recorded as pruned (not failed).

The sweeper (hydra_plugins/attnclf_optuna_sweeper) gives each run its trial (`hparams_search.trial`); the
run finds the study where the sweep keeps it (hydra.sweeper.storage, study_name) and builds the same
pruner from the same settings (`SearchConfig`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as L

from attnclf.settings.run import SearchConfig
from attnclf.utils.jsonfile import write_json

log = logging.getLogger(__name__)

# in a pruned run's folder: when and at what val/acc its pruner stopped it
PRUNED = "pruned.json"


def make_pruner(search: SearchConfig):
    """Optuna's pruner named by `search.pruner` (none: never prunes), its warm-up and start-up trials set."""
    import optuna

    if search.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=search.startup_trials, n_warmup_steps=search.warmup)
    if search.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=max(1, search.warmup))
    if search.pruner == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, search.warmup))
    return optuna.pruners.NopPruner()


class TrialPruning(L.Callback):
    """Reports `monitor` after each validation (its step: how many validations came before) and ends the run
    at once where the pruner says so: `pruned.json` in the run folder, then optuna.TrialPruned, which the
    sweeper records as a pruned trial."""

    def __init__(self, search: SearchConfig, storage: str, study_name: str, run_dir: str, monitor: str = "val/acc"):
        import optuna

        study = optuna.load_study(study_name=study_name, storage=storage, pruner=make_pruner(search))
        self.trial = optuna.trial.Trial(study, search.trial)
        self.run_dir, self.monitor, self.step = Path(run_dir), monitor, 0

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        import optuna

        if trainer.sanity_checking or self.monitor not in trainer.callback_metrics:
            return
        value = float(trainer.callback_metrics[self.monitor])
        self.trial.report(value, self.step)
        self.step += 1
        if self.trial.should_prune():
            said = f"pruned after validation {self.step} (epoch {trainer.current_epoch}): {self.monitor} {value:.4f}"
            write_json(
                self.run_dir / PRUNED,
                {
                    "trial": self.trial.number,
                    "validations": self.step,
                    "epoch": trainer.current_epoch,
                    self.monitor: value,
                },
            )
            log.info("trial %d %s", self.trial.number, said)
            raise optuna.TrialPruned(said)


def trial_pruning(search: SearchConfig, run_dir: Path) -> list[L.Callback]:
    """The pruning callback of a run that is a trial of an Optuna search with a pruner ([] otherwise): the
    study where the sweep keeps it (hydra.sweeper.storage and study_name)."""
    if search.trial is None or search.pruner == "none":
        return []
    from hydra.core.hydra_config import HydraConfig

    sweeper = HydraConfig.get().sweeper
    return [TrialPruning(search, sweeper.storage, sweeper.study_name, str(run_dir))]
