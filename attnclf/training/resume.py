"""Resuming an interrupted run: which checkpoint (`ckpt_path`), whether it fits this command's settings,
and continuing in its own run folder."""

from __future__ import annotations

import logging
import shutil
import warnings
from dataclasses import asdict
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser

from attnclf.data.splits import RECORD
from attnclf.errors import AttnclfError
from attnclf.settings.data import PATH_KEYS, RECORDED, DataConfig, as_recorded
from attnclf.settings.model import CLASSIFIER, ClassifierConfig, setting_differences
from attnclf.settings.run import PathsConfig
from attnclf.settings.typed import typed
from attnclf.training.checkpoint import checkpoint_kind, find_resume, load_checkpoint, run_dir_of
from attnclf.utils.jsonfile import read_json

log = logging.getLogger(__name__)


START = "start.json"  # in the run folder: where the weights started (the embedding's source, init_from)


def start_of(run: Path, unknown: dict) -> tuple[dict, dict | None]:
    """A run's start record (embeddings, init_from), read back on resume; a run folder written before the
    record existed gives `unknown` (the configured source, marked as not recorded)."""
    try:
        start = read_json(run / START)
    except FileNotFoundError:
        return {**unknown, "recorded": False}, None
    return start["embeddings"], start["init_from"]


def resume_point(ckpt_path: str | None, paths: PathsConfig, matches, mismatch=None) -> Path | None:
    """The checkpoint `ckpt_path` names (None: a fresh run); a resumed run continues in its own folder
    (paths.output_dir becomes it).

    `last` picks a run whose checkpoint's hyperparameters pass `matches`; a run given by name is refused
    where `mismatch(hyperparameters, run folder)` gives a reason (one line).
    """
    if not ckpt_path:
        return None
    here = Path(paths.output_dir)
    resume = find_resume(ckpt_path, Path(paths.runs_dir), here, matches)
    if ckpt_path != "last" and mismatch is not None:
        why = mismatch(load_checkpoint(resume).get("hyper_parameters", {}), run_dir_of(resume))
        if why:
            raise AttnclfError(f"ckpt_path={ckpt_path!r}: {why}")
    if run_dir_of(resume).resolve() != here.resolve():  # continue in the interrupted run's folder
        paths.output_dir = str(run_dir_of(resume).resolve())  # (absolute, as Hydra's own: metrics.json's paths)
        move_log_to(run_dir_of(resume), here)
    log.info("resuming %s", resume)
    # the run's own checkpoints are in its checkpoints/: Lightning's warning that the folder is not empty is no news
    warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")
    return resume


def resumed_data(data: DataConfig, run: Path, given: set[str] | None) -> DataConfig:
    """The data a resumed run continues on: its own record (`run`/data.json), how it is read (batch sizes,
    workers, caches) this command's. `given`: the data keys this command names (None: every one); one that
    differs from the run's record is refused in one line. A run from before the record: `data` as given."""
    try:
        record = read_json(run / RECORD)["data"]
    except FileNotFoundError:
        return data
    # (a key the record lacks: this command's; a relative path recorded before paths were absolute: as here)
    record = {k: as_recorded(v) if k in PATH_KEYS else v for k, v in record.items() if k in RECORDED}
    now = data.recorded()
    for key in RECORDED:
        if key in record and (given is None or key in given) and now[key] != record[key]:
            raise AttnclfError(
                f"data.{key}={now[key]!r}: the run resumed was trained with data.{key}={record[key]!r} "
                f"({run / RECORD}); leave data.{key} out to resume on the run's own data"
            )
    log.info("data: the run's own (%s)", run / RECORD)
    return typed(DataConfig, {**asdict(data), **record}, "data")


def data_keys_given(overrides: list[str], data: DataConfig) -> set[str]:
    """The data keys a command line names: data.<key>=..., and for a group that sets data (data=<name>,
    experiment=<name>) the keys it sets away from the defaults."""
    keys, defaults, now = set(), DataConfig().recorded(), data.recorded()
    for o in OverridesParser.create().parse_overrides(overrides):
        name = o.key_or_group
        if name in ("data", "experiment"):
            keys.update(k for k in RECORDED if now[k] != defaults[k])
        elif name.startswith("data."):
            keys.add(name.split(".")[1])
    return keys


def same_settings(hparams: dict, config: ClassifierConfig) -> bool:
    """Whether a checkpoint is a classifier's with this command's settings (what ckpt_path=last takes)."""
    return checkpoint_kind(hparams) == CLASSIFIER and not setting_differences(hparams, config)


def settings_mismatch(hparams: dict, run: Path, config: ClassifierConfig) -> str | None:
    """Why a classifier checkpoint cannot continue under this command's settings (None: it can)."""
    if checkpoint_kind(hparams) != CLASSIFIER:
        return (
            f"{run} is not a classifier's run (a language model's from pretrain.py?); a classifier starts from "
            "one with model.init_from=<run>"
        )
    differ = setting_differences(hparams, config)
    if not differ:
        return None
    was = ", ".join(f"{key}={saved!r}" for key, (saved, _) in differ.items())
    now = ", ".join(f"{key}={given!r}" for key, (_, given) in differ.items())
    see = f" (its overrides: {run / '.hydra' / 'overrides.yaml'})" if (run / ".hydra").is_dir() else ""
    return f"that run was trained with {was}, this command gives {now}; resume with the run's own settings{see}"


def resumed_step_of(resume: Path | None) -> int | None:
    """The step a checkpoint resumes at (None: a fresh run)."""
    return None if resume is None else load_checkpoint(resume)["global_step"]


def check_resumed_vocab(resume: Path | None, vocab_size: int) -> None:
    """A resumed run's data settings must give its checkpoint's vocabulary."""
    if resume is None:
        return
    saved_vocab = load_checkpoint(resume).get("hyper_parameters", {}).get("vocab_size")
    if saved_vocab != vocab_size:
        raise AttnclfError(
            f"ckpt_path: {resume} has a vocabulary of {saved_vocab} words, this command's data settings give "
            f"{vocab_size}; resume with the run's own data.* settings"
        )


def move_log_to(run: Path, fresh: Path) -> None:
    """A resumed run logs into its own train.log; the folder Hydra made for this command goes, if that is
    all it holds (its config and log: the resumed run's own .hydra/ stays as it was)."""
    root = logging.getLogger()
    for h in close_logs_in(fresh):
        handler = logging.FileHandler(run / "train.log", mode="a")
        handler.setFormatter(h.formatter)
        handler.setLevel(h.level)
        root.addHandler(handler)
    remove_if_unused(fresh)


def close_logs_in(folder: Path) -> list[logging.FileHandler]:
    """Take the log files kept in `folder` off the loggers (the root's, and gensim's own: conf/hydra) and
    close them, so that the folder can go; the root's handlers, closed."""
    root, closed = logging.getLogger(), []
    named = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)]
    for logger in [root, *named]:
        for h in list(logger.handlers):
            if isinstance(h, logging.FileHandler) and Path(h.baseFilename).parent.resolve() == folder.resolve():
                logger.removeHandler(h)
                h.close()
                if logger is root:
                    closed.append(h)
    return closed


def remove_if_unused(folder: Path) -> None:
    """Remove a run folder that holds nothing but Hydra's config, an only-started log (train.log,
    eval.log ...), the vocabulary and the start record (a start that failed or was stopped before training,
    an evaluation that failed)."""
    kept = {p.name for p in folder.iterdir() if p.suffix != ".log"} if folder.is_dir() else {"(none)"}
    if folder.is_dir() and kept <= {".hydra", "vocab.json", START, RECORD}:
        shutil.rmtree(folder, ignore_errors=True)
