"""Resuming an interrupted run: which checkpoint (`ckpt_path`), whether it fits this command's settings,
and continuing in its own run folder."""

from __future__ import annotations

import logging
import warnings
from dataclasses import asdict
from importlib.resources import files
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.settings.attention import name_of_target
from attnclf.settings.compose import CONF_MODULE, compose_config
from attnclf.settings.data import PATH_KEYS, RECORDED, DataConfig, as_recorded
from attnclf.settings.model import CLASSIFIER, ClassifierConfig, setting_differences
from attnclf.settings.run import PathsConfig
from attnclf.settings.typed import typed
from attnclf.training.checkpoint import checkpoint_kind, find_resume, load_checkpoint, run_dir_of
from attnclf.utils.jsonfile import read_json
from attnclf.utils.runfolder import RECORD, START, close_logs_in, remove_if_unused

log = logging.getLogger(__name__)


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
    # continue in the interrupted run's folder
    if run_dir_of(resume).resolve() != here.resolve():
        # absolute, as Hydra's own: metrics.json's paths
        paths.output_dir = str(run_dir_of(resume).resolve())
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
            f"{run} is not a classifier's run (a language model's from attnclf pretrain?); a classifier starts from "
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


# A run's own settings, as Hydra wrote them when it started (train(cfg) from Python writes them too).
RUN_CONFIG = Path(".hydra") / "config.yaml"

# Keys that cannot change a run's results: on a resume they stay this command's (docs/usage.md,
# "A run given by name", lists them). Every other key is the run's own.
RUNTIME_KEYS = (
    "ckpt_path",
    "num_threads",
    "keep_freed_memory",
    "test",
    "optimized_metric",
    "paths",
    "logger",
    "hparams_search",
    "data.num_workers",
    "data.cache_dir",
    "trainer.default_root_dir",
    "trainer.enable_model_summary",
    "trainer.log_every_n_steps",
    "callbacks.rich_progress_bar",
    "callbacks.lr_monitor",
    "callbacks.throughput",
    "callbacks.attention_maps",
    "callbacks.confusion_matrix",
)


def keep_config(cfg: DictConfig, out: Path) -> None:
    """A fresh run's own settings in its folder (RUN_CONFIG), where Hydra wrote none (train(cfg) called from
    Python): what a resume by the run's name takes."""
    if not (out / RUN_CONFIG).exists():
        (out / RUN_CONFIG).parent.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(cfg, out / RUN_CONFIG)


def run_named(ckpt_path: str | None) -> Path | None:
    """The run folder `ckpt_path` names (a run folder, or a checkpoint in one); None for last, none, or a
    path that is not there (find_resume says so)."""
    if not ckpt_path or ckpt_path == "last":
        return None
    path = Path(ckpt_path).expanduser()
    if path.is_file():
        return run_dir_of(path)
    return path if path.is_dir() else None


def is_runtime(key: str) -> bool:
    return any(key == k or key.startswith(k + ".") for k in RUNTIME_KEYS)


def with_run_settings(cfg: DictConfig, overrides: list[str] | None, command: str = "train") -> DictConfig:
    """`cfg` with every setting of the run `ckpt_path` names taken from the run's own config, but the
    runtime keys (RUNTIME_KEYS). A key the command gives that differs from the run's is refused in one line
    (the data keys of data.json: by resumed_data, against that record). `overrides`: the command line's (None: every
    key of `cfg` counts as given). `cfg` as it is for ckpt_path=last, a fresh run, or a run without its
    config. `command`: the config the command composes (train, pretrain)."""
    run = run_named(cfg.get("ckpt_path"))
    # (a finished run: find_resume refuses it, whatever the settings)
    if run is None or not (run / RUN_CONFIG).is_file() or (run / "metrics.json").exists():
        return cfg
    own = OmegaConf.load(run / RUN_CONFIG)
    for key in RUNTIME_KEYS:
        parent, _, last = key.rpartition(".")
        node = OmegaConf.select(own, parent) if parent else own
        if isinstance(node, DictConfig) and last in node:
            del node[last]
    # unstructured: a key the run lacks stays
    merged = OmegaConf.merge(OmegaConf.to_container(cfg), own)
    has_record = (run / RECORD).is_file()
    for key in sorted(keys_given(cfg, overrides, command)):
        recorded = has_record and key.startswith("data.") and key.split(".")[1] in RECORDED
        # as given: resumed_data holds them against the run's data record, paths made whole
        if recorded:
            OmegaConf.update(merged, key, OmegaConf.select(cfg, key), merge=False)
        if recorded or is_runtime(key):
            continue
        given, was = OmegaConf.select(cfg, key), OmegaConf.select(merged, key)
        # the mechanism by its name, as the command line chose it
        if given != was and key == "attention._target_":
            key, given, was = "attention", name_of_target(given), name_of_target(was)
        if given != was:
            raise AttnclfError(
                f"{key}={given!r}: the run resumed was trained with {key}={was!r} ({run / RUN_CONFIG}); leave "
                f"{key} out to resume with the run's own settings"
            )
    log.info("settings: the run's own (%s)", run / RUN_CONFIG)
    return merged


def keys_given(cfg: DictConfig, overrides: list[str] | None, command: str = "train") -> set[str]:
    """The keys (dotted, to the leaves) a command line of `command` sets: key=value, and the keys a group
    choice sets (attention=additive, experiment=smoke: those its file sets). None: every key of `cfg`."""
    if overrides is None:
        return set(leaves(OmegaConf.to_container(cfg)))
    keys = set()
    for o in OverridesParser.create().parse_overrides(overrides):
        name = o.key_or_group
        if name.startswith("hydra"):
            continue
        if o.is_delete():
            keys.add(name)
        elif files(CONF_MODULE).joinpath(name).is_dir():
            chosen = compose_config(command, [o.input_line.lstrip("+")])
            without = compose_config(command, [f"~{name}"])
            keys.update(differing(OmegaConf.to_container(chosen), OmegaConf.to_container(without)))
        else:
            node = OmegaConf.select(cfg, name)
            container = OmegaConf.to_container(node) if isinstance(node, DictConfig) else None
            keys.update(leaves(container, name) if container else [name])
    return keys


def leaves(node: dict, prefix: str = "") -> dict:
    """{dotted key: value} of every leaf of a nested dict."""
    out = {}
    for key, value in node.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        out.update(leaves(value, dotted) if isinstance(value, dict) and value else {dotted: value})
    return out


def differing(a: dict, b: dict) -> set[str]:
    """The dotted keys whose leaves differ between two nested dicts (or are in one only)."""
    la, lb = leaves(a), leaves(b)
    return {k for k in la.keys() | lb.keys() if la.get(k, ...) != lb.get(k, ...)}
