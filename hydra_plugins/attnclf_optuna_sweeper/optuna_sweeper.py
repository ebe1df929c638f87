"""attnclf's Optuna sweeper: a Hydra sweeper on Optuna's ask-and-tell API (Optuna >= 4), with pruning.

    attnclf train -m hparams_search=imdb_optuna [hparams_search.pruner=median] [hydra.sweeper.n_trials=30]

Each batch of `n_jobs` trials is asked of the study, launched through Hydra's launcher (each run's folder
and log as in any sweep), and told back: a run's return value (optimized_metric) finishes its trial; a run
that failed (an error, nan) is a failed trial and the search goes on (`max_failure_rate`); a run its pruner
stopped (attnclf/training/pruning.py) is a pruned trial, not an error. The study lives in `storage` (SQLite:
the same command again adds new trials). At the end: the best trial, every trial of the study as a table
(printed, and trials.md in the sweep folder), optimization_results.yaml; a study with no finished trial is
one line. The way Hydra's own hydra-optuna-sweeper (MIT licence) turns overrides into trials is kept.
"""

import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.core.utils import JobStatus
from hydra.plugins.sweeper import Sweeper
from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.settings.run import SearchConfig
from hydra_plugins.attnclf_optuna_sweeper.search_space import search_space
from hydra_plugins.attnclf_optuna_sweeper.trials import trials_table, write_trials

log = logging.getLogger(__name__)


@dataclass
class OptunaSweeperConf:
    """hydra.sweeper.* (conf/hparams_search/imdb_optuna.yaml sets them)."""

    _target_: str = "hydra_plugins.attnclf_optuna_sweeper.optuna_sweeper.OptunaSweeper"
    # the sampler is built by the sweeper itself (make_sampler), so that a missing Optuna or a bad sampler
    # value is one line, not Hydra's traceback of the instantiation
    _recursive_: bool = False
    direction: str = "maximize"
    study_name: str | None = None
    storage: str | None = None  # e.g. sqlite:///outputs/optuna.db; null: in memory, not kept
    n_trials: int = 20
    n_jobs: int = 1  # trials launched together (as the launcher runs them)
    max_failure_rate: float = 0.0  # the share of a batch's trials that may fail before the sweep stops
    sampler: Any = field(default_factory=lambda: {"_target_": "optuna.samplers.TPESampler", "seed": None})
    params: dict[str, str] | None = None  # key: search, in Hydra's override grammar (search_space.py)


ConfigStore.instance().store(group="hydra/sweeper", name="attnclf_optuna", node=OptunaSweeperConf,
                             provider="attnclf")  # fmt: skip


def finished(ret) -> bool:
    """A job that returned a number Optuna records as a finished trial (a nan is recorded as failed)."""
    if ret.status != JobStatus.COMPLETED:
        return False
    try:
        return math.isfinite(float(ret.return_value))
    except (TypeError, ValueError):
        return False


def pruned(ret) -> bool:
    """A job its pruner stopped."""
    import optuna

    return ret.status == JobStatus.FAILED and isinstance(ret._return_value, optuna.TrialPruned)


def first_error(ret) -> str:
    """One line: why a job did not finish."""
    if ret.status != JobStatus.FAILED:
        return f"it returned {ret._return_value!r}"
    e = ret._return_value
    line = (str(e).strip().splitlines() or [""])[0]
    return line if isinstance(e, AttnclfError) else f"{type(e).__name__}: {line}"


SWEEP_EXTRA = 'pip install "attnclf[sweep]"'


def make_sampler(sampler):
    """hydra.sweeper.sampler (a plain dict: a `_target_` and its arguments) as an Optuna sampler; Optuna
    missing or a value the sampler refuses is one line."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        import optuna  # noqa: F401
    except ImportError:
        raise AttnclfError(f"hparams_search needs Optuna, which the sweep extra installs: {SWEEP_EXTRA}") from None
    if not isinstance(sampler, dict):
        return sampler  # (an Optuna sampler already)
    seed = sampler.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise AttnclfError(f"hydra.sweeper.sampler.seed={seed!r} must be a whole number or null (not seeded)")
    try:
        return instantiate(sampler)
    except InstantiationException as e:
        cause = e.__cause__ or e
        why = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        raise AttnclfError(f"hydra.sweeper.sampler={sampler}: {why}") from None


class OptunaSweeper(Sweeper):
    def __init__(self, direction, study_name, storage, n_trials, n_jobs, max_failure_rate, sampler, params):
        self.direction, self.study_name, self.storage = direction, study_name, storage
        self.n_trials, self.n_jobs, self.max_failure_rate = n_trials, n_jobs, max_failure_rate
        self.sampler, self.params = sampler, params

    def setup(self, *, hydra_context, task_function, config: DictConfig) -> None:
        self.config, self.job_idx = config, 0
        self.launcher = Plugins.instance().instantiate_launcher(
            config=config, hydra_context=hydra_context, task_function=task_function
        )
        self.search = SearchConfig.of(config.get("hparams_search"))  # (checked before any trial starts)
        self.check()
        # (the sampler as given, plain: what make_sampler builds from, and what a refusal names)
        self.sampler_given = OmegaConf.to_container(self.sampler) if OmegaConf.is_config(self.sampler) else self.sampler
        self.sampler = make_sampler(self.sampler_given)

    def check(self) -> None:
        """The sweeper's own values, each one line before any trial starts."""
        if self.direction not in ("maximize", "minimize"):
            raise AttnclfError(f"hydra.sweeper.direction={self.direction!r}; allowed: maximize, minimize")
        for key in ("n_trials", "n_jobs"):
            if not isinstance(getattr(self, key), int) or getattr(self, key) < 1:
                raise AttnclfError(f"hydra.sweeper.{key}={getattr(self, key)!r} must be a whole number >= 1")
        if not 0 <= self.max_failure_rate <= 1:
            raise AttnclfError(f"hydra.sweeper.max_failure_rate={self.max_failure_rate!r} must be in [0, 1]")
        if self.search.pruner != "none" and not self.storage:
            raise AttnclfError(
                f"hparams_search.pruner={self.search.pruner} needs hydra.sweeper.storage (the database each "
                "trial reports to), e.g. hydra.sweeper.storage=sqlite:///outputs/optuna.db"
            )

    def study(self):
        """The study, made or loaded (its stored trials kept), with the configured sampler and pruner."""
        import optuna

        from attnclf.training.pruning import make_pruner

        return optuna.create_study(study_name=self.study_name, storage=self.storage, sampler=self.sampler,
                                   pruner=make_pruner(self.search), direction=self.direction,
                                   load_if_exists=True)  # fmt: skip

    def sweep(self, arguments: list[str]) -> None:
        params = [f"{k}={v}" for k, v in (self.params or {}).items()]
        searched, fixed = search_space([*params, *arguments])
        if "hparams_search.trial" in fixed:  # (the sweeper gives each run its own)
            raise AttnclfError(f"hparams_search.trial={fixed['hparams_search.trial']} is set by the Optuna sweeper "
                               "for each run of a search; leave it out")  # fmt: skip
        study = self.study()
        log.info("study %s (%s), pruner %s, %d trials", study.study_name, self.storage or "in memory",
                 self.search.pruner, self.n_trials)  # fmt: skip
        returns = []
        for start in range(0, self.n_trials, self.n_jobs):
            batch = [self.ask(study, searched) for _ in range(min(self.n_jobs, self.n_trials - start))]
            overrides = [self.overrides_of(trial, fixed) for trial in batch]
            done = self.launcher.launch(overrides, initial_job_idx=self.job_idx)
            self.job_idx += len(done)
            failed = [ret for trial, ret in zip(batch, done, strict=True) if self.tell(study, trial, ret)]
            returns += done
            if len(failed) / len(done) > self.max_failure_rate:
                rate = f"hydra.sweeper.max_failure_rate={self.max_failure_rate}"
                raise AttnclfError(f"{len(failed)} of {len(done)} trials failed, more than {rate} allows; the "
                                   f"first: {first_error(failed[0])}")  # fmt: skip
        self.report(study, returns)

    def ask(self, study, searched: dict):
        """A new trial; a sampler whose values it only uses now (a word for a number) is one line."""
        try:
            return study.ask(searched)
        except (TypeError, ValueError) as e:
            why = (str(e).strip().splitlines() or [""])[0]
            raise AttnclfError(
                f"hydra.sweeper.sampler={self.sampler_given}: it could not propose a trial ({why})"
            ) from None

    def overrides_of(self, trial, fixed: dict[str, str]) -> tuple[str, ...]:
        """A trial's command line: its sampled values, the fixed ones, and its id (for its pruner)."""
        values = {**trial.params, **fixed}
        return (*(f"{k}={v}" for k, v in values.items()), f"hparams_search.trial={trial._trial_id}")

    def tell(self, study, trial, ret) -> bool:
        """Record a run's outcome in its trial; whether it failed (a pruned trial did not)."""
        import optuna

        if finished(ret):
            study.tell(trial, float(ret.return_value))
            return False
        if pruned(ret):
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return False
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        log.warning("trial %d failed: %s", trial.number, first_error(ret))
        return True

    def report(self, study, returns: list) -> None:
        """The best trial, the trials table (printed and trials.md), optimization_results.yaml; no finished
        trial in the study: one line, exit status 2."""
        import optuna

        done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        if not done:
            first = next((r for r in returns if not pruned(r)), returns[0])
            print(f"error: none of the {len(returns)} trials finished, so the study has no best trial; the first "
                  f"failed: {first_error(first)} (trials recorded in {self.storage or 'memory, not kept'}, "
                  f"study {study.study_name})", file=sys.stderr)  # fmt: skip
            sys.exit(2)
        folder = Path(self.config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        best = study.best_trial
        OmegaConf.save(OmegaConf.create({"name": "optuna", "best_params": best.params, "best_value": best.value}),
                       folder / "optimization_results.yaml")  # fmt: skip
        print(trials_table(study), flush=True)
        write_trials(study, folder / "trials.md")
        print(f"best: trial {best.number}, {best.value:.4f}, {best.params}; every trial: {folder / 'trials.md'}")
