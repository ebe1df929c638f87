"""What every entry point shares: a user error becomes one line on stderr and exit status 2, in a single
run and in a sweep (`run`, `main_entry`)."""

from __future__ import annotations

import sys
from pathlib import Path

from hydra.errors import CompactHydraException
from omegaconf import OmegaConf

from attnclf.errors import AttnclfError
from attnclf.training.checks import in_multirun
from attnclf.training.resume import close_logs_in, remove_if_unused


def run(fn, cfg):
    """Call an entry point's logic; a user error becomes one line on stderr and exit status 2.

    In a sweep (Hydra multirun) the error is raised on instead, so that the sweeper
    records the job as failed and goes on with the others.
    """
    try:
        return fn(cfg)
    except AttnclfError as e:
        print(f"error: {e}", file=sys.stderr)
        try:
            out = OmegaConf.select(cfg, "paths.output_dir")
        except Exception:  # (outside Hydra its resolver is not there)
            out = None
        if out:  # a failed start leaves no run folder behind (one with checkpoints or metrics stays)
            close_logs_in(Path(out))
            remove_if_unused(Path(out))
        if in_multirun():  # (a sweep's other jobs go on: Hydra gives each its own log)
            raise SweepJobError(str(e)) from e
        sys.exit(2)


class SweepJobError(AttnclfError, CompactHydraException):
    """A sweep job's user error, raised on for the sweeper to record. Where the sweep stops on it, Hydra
    prints its one line (a CompactHydraException), not a traceback."""


def main_entry(main) -> None:
    """Call a `@hydra.main` entry point. A multirun stopped by a job's user error exits 2, as a single run
    does (Hydra itself exits 1 after printing the error)."""
    try:
        main()
    except SystemExit as e:
        if e.code == 1 and isinstance(e.__context__, AttnclfError):  # (raised while Hydra handled ours)
            raise SystemExit(2) from None
        raise
