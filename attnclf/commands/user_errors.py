"""A user's error as one line: on stderr, exit status 2, in a single run and in a sweep. `one_line(fn, arg)`
around every command's own work (a bad value, a file that cannot be written, Ctrl-C before training; a failed
start's run folder taken down), `composed_or_one_line(app, config)` around a Hydra app's composition (an option,
key or value Hydra cannot compose: one line naming what is allowed)."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

from hydra.errors import (
    CompactHydraException,
    ConfigCompositionException,
    HydraException,
    MissingConfigException,
    OverrideParseException,
)
from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from attnclf.errors import AttnclfError, Interrupted, Terminated
from attnclf.settings.compose import compose_config
from attnclf.settings.run import in_multirun
from attnclf.utils.runfolder import close_logs_in, remove_if_unused
from attnclf.utils.stops import raised_on_stop


def one_line(fn, cfg):
    """Call a command's own work, `fn(cfg)` (`cfg`: a Hydra app's composed config, or a command's
    arguments), and return what it returns; a user error, a file that cannot be written (a full disk, a read-only
    folder) or Ctrl-C before training becomes one line on stderr: exit status 2, or 128 + the signal's
    number for a run stopped from outside (Interrupted). A failed start leaves no run folder behind.

    In a sweep (Hydra multirun) a user error is raised on instead, so that the sweeper records the job as
    failed and goes on with the others; a stopped run stops the sweep.
    """
    e, by = None, None
    try:
        with raised_on_stop():
            return fn(cfg)
    # outside the fit, which Lightning stops itself: word vectors, data work, the test after it
    except KeyboardInterrupt:
        by = signal.SIGINT
    except Terminated:
        by = signal.SIGTERM
    except OSError as e_:
        e = AttnclfError(os_error_line(e_))
    except AttnclfError as e_:
        e = e_
    folder = run_folder_of(cfg)
    # a failed start leaves no run folder behind (one with results stays)
    if folder is not None:
        close_logs_in(folder)
        remove_if_unused(folder)
        remove_empty_parents(folder)
    if by is not None:
        e = Interrupted(stopped_outside_fit(by, folder), by)
    print(f"error: {e}", file=sys.stderr)
    if isinstance(e, Interrupted):
        sys.exit(e.status)
    # a sweep's other jobs go on: Hydra gives each its own log
    if in_multirun():
        raise SweepJobError(str(e)) from e
    sys.exit(2)


def stopped_outside_fit(sig: signal.Signals, folder: Path | None) -> str:
    """The line for a stop by `sig` outside the fit: before it (its run folder removed) or after it."""
    by = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    if folder is not None and folder.exists():
        return f"stopped by {by}; what was written before is kept in {folder}"
    return f"stopped by {by} before training began; nothing was kept but the caches"


def run_folder_of(cfg) -> Path | None:
    """The run folder a command made (`paths.output_dir`: the one Hydra made for it); None where it has none."""
    try:
        out = OmegaConf.select(cfg, "paths.output_dir")
    # outside Hydra its resolver is not there
    except Exception:
        out = None
    return Path(out).resolve() if out else None


def remove_empty_parents(folder: Path) -> None:
    """The folders above a removed run folder (outputs/eval/ ...), where they are empty and inside the
    working directory: a failed start leaves nothing behind."""
    # it held results: kept, and so are the folders above it
    if folder.exists():
        return
    here = Path.cwd().resolve()
    for parent in folder.parents:
        if parent == here or here not in parent.parents:
            return
        try:
            parent.rmdir()  # (only where empty)
        except OSError:
            return


def os_error_line(e: OSError) -> str:
    """An OSError (a path that cannot be read or written) as one line naming the path."""
    if e.filename:
        return f"{e.filename}: {e.strerror or e}"
    return str(e) or type(e).__name__


class SweepJobError(AttnclfError, CompactHydraException):
    """A sweep job's user error, raised on for the sweeper to record. Where the sweep stops on it, Hydra
    prints its one line (a CompactHydraException), not a traceback."""


def composed_or_one_line(app, config_name: str) -> None:
    """Call a Hydra app, `app` (a `@hydra.main` function; its primary config: `config_name`). A command line
    that names an option, a key or a value Hydra cannot compose is one line naming it and what is allowed,
    exit 2 (Hydra itself prints several lines and exits 1); so is a multirun stopped by a job's user error.
    HYDRA_FULL_ERROR=1 set by the user still shows Hydra's own full error."""
    full = _env_set("HYDRA_FULL_ERROR")
    # composition errors reach us as exceptions, not as Hydra's print-out
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        app()
    except SystemExit as e:
        # raised while Hydra handled ours
        if e.code == 1 and isinstance(e.__context__, AttnclfError):
            raise SystemExit(2) from None
        raise
    # a sweep stopped by a job's user error: the job said it ("error: ..."); as Hydra
    except AttnclfError as e:
        # does, the sweep ends on its message
        if full:
            raise
        print(str(e) if isinstance(e, SweepJobError) else f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except HydraException as e:
        if full or not isinstance(e, (MissingConfigException, ConfigCompositionException, OverrideParseException)):
            raise
        print(f"error: {composition_error(e, config_name)}", file=sys.stderr)
        raise SystemExit(2) from None
    # Hydra making the run folder (ours are one line in one_line() already; this clause comes
    except OSError as e:
        # after HydraException's, for Hydra's MissingConfigException is an OSError too)
        if full:
            raise
        print(f"error: {os_error_line(e)} (the run folder: hydra.run.dir, or hydra.sweep.dir with -m)", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        if not full:
            os.environ.pop("HYDRA_FULL_ERROR", None)


def _env_set(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0", "false", "False")


def composition_error(e: HydraException, config_name: str) -> str:
    """Hydra's composition error as one line: the option, key or value named, and what is allowed."""
    if isinstance(e, MissingConfigException) and e.missing_cfg_file and e.options is not None:
        # e.g. attention/foo
        group, _, option = e.missing_cfg_file.rpartition("/")
        return f"{group}={option!r}; allowed: {', '.join(sorted(e.options))}"
    cause = e.__cause__
    not_a_group = re.search(r"Could not override '([^']+)'\. No match in the defaults list.*use \+(\S+)", str(e), re.S)
    # attention=additive where the command has no such group (its checkpoint decides it)
    if not_a_group:
        keys = keys_of(config_name, "")
        return f"{not_a_group.group(2)}: {not_a_group.group(1)} is not a setting here; allowed: {', '.join(keys)}"
    # model.foo=1: no such key
    if isinstance(cause, (ConfigKeyError, ConfigAttributeError)) and cause.full_key:
        # its keys come with a search
        if cause.full_key == "hparams_search" and config_name == "train":
            given = re.search(r"Could not override '([^']+)'", str(e))
            key = given.group(1) if given else "hparams_search.*"
            return (
                f"{key} belongs to an Optuna search: give hparams_search=imdb_optuna with it "
                f"(attnclf train -m hparams_search=imdb_optuna {key}=...)"
            )
        parent, _, key = cause.full_key.rpartition(".")
        keys = keys_of(config_name, parent)
        where = f"a setting of {parent}" if parent else "a setting"
        allowed = f"; allowed: {', '.join(keys)}" if keys else ""
        return f"{cause.full_key} is not {where}{allowed} (to add a key of your own: +{cause.full_key}=...)"
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if cause is not None:
        lines += [line.strip() for line in str(cause).splitlines()[:1] if line.strip()]
    return "; ".join(lines[:2]) or type(e).__name__


def keys_of(config_name: str, parent: str) -> list[str]:
    """The keys of `parent` ("" for the top level) in the default composition of `config_name`; [] where it
    cannot be composed here."""
    from hydra.core.global_hydra import GlobalHydra

    try:
        # conf/ itself, whatever the entry point's search path was
        GlobalHydra.instance().clear()
        cfg = compose_config(config_name, [])
        node = OmegaConf.select(cfg, parent) if parent else cfg
        return [str(k) for k in node] if OmegaConf.is_dict(node) else []
    # only a list for the message: the error itself is said either way
    except Exception:
        return []
