"""Hydra's Optuna sweeper with one change: a sweep in which no trial finished ends in one line.

The plugin records a failed trial and goes on (max_failure_rate: 1.0), but when every trial of the sweep
failed it asks the study for its best trial and stops in a traceback ("Record does not exist."). Here that
case prints what went wrong instead: how many trials ran, the first one's error, where the study is kept.
conf/hparams_search/imdb_optuna.yaml selects it (`_target_`); Hydra accepts sweepers only from this namespace.
"""

from __future__ import annotations

import math
import sys

from hydra.core.utils import JobStatus

from attnclf.errors import AttnclfError

try:
    from hydra_plugins.hydra_optuna_sweeper.optuna_sweeper import OptunaSweeper as _OptunaSweeper
except ImportError:  # without the sweep extra: Hydra imports every plugin module at start, so no error here
    _OptunaSweeper = None


def finished(ret) -> bool:
    """A job that returned a number Optuna records as a finished trial (a nan is recorded as failed)."""
    if ret.status != JobStatus.COMPLETED:
        return False
    try:
        return math.isfinite(float(ret.return_value))
    except (TypeError, ValueError):
        return False


def first_error(ret) -> str:
    """One line: why a job did not finish."""
    if ret.status != JobStatus.FAILED:
        return f"it returned {ret._return_value!r}"
    e = ret._return_value
    line = (str(e).strip().splitlines() or [""])[0]
    return line if isinstance(e, AttnclfError) else f"{type(e).__name__}: {line}"


if _OptunaSweeper is not None:

    class OptunaSweeper(_OptunaSweeper):
        def setup(self, *, hydra_context, task_function, config) -> None:
            super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
            self.returns = []  # every job this sweep launched
            launcher = self.sweeper.launcher
            launch = launcher.launch

            def launch_and_keep(job_overrides, initial_job_idx):
                returns = launch(job_overrides, initial_job_idx=initial_job_idx)
                self.returns.extend(returns)
                return returns

            launcher.launch = launch_and_keep

        def sweep(self, arguments):
            try:
                return super().sweep(arguments)
            except ValueError:  # raised where the study has no finished trial to call best
                if not self.returns or any(finished(r) for r in self.returns):
                    raise
                print(
                    f"error: none of the {len(self.returns)} trials finished, so the study has no best trial; "
                    f"the first failed: {first_error(self.returns[0])} "
                    f"(trials recorded in {self.sweeper.storage or 'memory, not kept'}, "
                    f"study {self.sweeper.study_name})",
                    file=sys.stderr,
                )
                sys.exit(2)
