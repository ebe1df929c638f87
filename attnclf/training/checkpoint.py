"""Checkpoints: loaded without unpickling code, read as today's settings, found for resuming (written
atomically by checkpoint_io.py)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict
from pathlib import Path

from attnclf.errors import AttnclfError
from attnclf.settings.model import (
    CLASSIFIER,
    MOVED_TO_ATTENTION,
    RENAMED,
    ModelConfig,
    OptimizerConfig,
    RegularizerConfig,
)


def load_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """torch.load(weights_only=True) with one-line errors for missing, truncated or foreign files."""
    # (here, not at the top: finding a run to resume, by a command's settings, needs no torch)
    import torch

    path = Path(path)
    if not path.is_file():
        raise AttnclfError(f"checkpoint not found: {path}")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
        raise AttnclfError(f"{path} is not a readable checkpoint (truncated or another format): {e}") from e
    # pickle.UnpicklingError for non-weights content: refuse, don't execute
    except Exception as e:
        raise AttnclfError(f"{path} is not a plain checkpoint (refused to unpickle it): {type(e).__name__}") from e
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise AttnclfError(f"{path} is not a Lightning checkpoint of this project (no state_dict)")
    hp = ckpt.get("hyper_parameters")
    # every form written, as today's
    if isinstance(hp, dict) and checkpoint_kind(hp) == CLASSIFIER:
        ckpt["hyper_parameters"] = classifier_hparams(hp)
    return ckpt


# what a checkpoint saved before a setting existed had for it: the module's defaults of that time
LEGACY_DEFAULTS = {
    "model": dict(asdict(ModelConfig()), dropout=0.3, embeddings="random"),
    "optimizer": asdict(OptimizerConfig()),
    "regularizer": asdict(RegularizerConfig()),
}
_FLAT_REGULARIZER = {
    "regularizer": "name",
    "regularizer_epsilon": "epsilon",
    "regularizer_weight": "weight",
    "regularizer_xi": "xi",
}


def classifier_hparams(hp: dict) -> dict:
    """A classifier checkpoint's hyperparameters in today's form, whatever form it was written in: nested
    as ClassifierConfig saves them, {kind, vocab_size, num_classes, attention, model: {...}, optimizer: {...},
    regularizer: {...}}. Checkpoints from before the nesting held them flat (lr, hidden_dim,
    regularizer_epsilon, ...; `pack` before the kernel was a choice); model.gru_kernel is model.rnn_kernel
    now; a setting a checkpoint lacks (saved before it existed) gets the default of that time (LEGACY_DEFAULTS).
    The attention is saved by its name, class and keys; before, by its name alone (dot or additive), with its
    keys among the model's (attention_legacy)."""
    nested = isinstance(hp.get("model"), dict)
    out = {
        "kind": CLASSIFIER,
        "vocab_size": hp.get("vocab_size"),
        "num_classes": hp.get("num_classes", 2),
        **attention_legacy(hp, hp.get("model") if nested else hp),
    }
    for section, defaults in LEGACY_DEFAULTS.items():
        given = dict(hp.get(section) or {}) if nested else hp
        given = {RENAMED.get(k, k): v for k, v in given.items()} if section == "model" else given
        out[section] = {k: given.get(k, v) for k, v in defaults.items()}
    if not nested:
        for flat, key in _FLAT_REGULARIZER.items():
            if flat in hp:
                out["regularizer"][key] = hp[flat]
    if "pack" in hp:
        out["model"]["rnn_kernel"] = {True: "packed", False: "padded"}.get(hp["pack"], "auto")
    return out


# the two mechanisms a checkpoint named before attentions were classes, and their keys' defaults of that time
_LEGACY_ATTENTIONS = {
    "dot": ("attnclf.models.attention.DotAttention", {"attention_scale": True}),
    "additive": ("attnclf.models.attention.AdditiveAttention", {"attention_init": "xavier"}),
}


def attention_legacy(hp: dict, model: dict | None) -> dict:
    """{attention, attention_class, attention_keys} of a checkpoint's hyperparameters: as saved, or, for a
    checkpoint of before (its attention a name, dot or additive; scale and init among the model's keys,
    attention_scale and attention_init), as today's YAML of that name with those keys."""
    name = hp.get("attention", "dot")
    if "attention_class" in hp:
        return {"attention": name, "attention_class": hp["attention_class"], "attention_keys": hp["attention_keys"]}
    target, old_keys = _LEGACY_ATTENTIONS[name]
    keys = {MOVED_TO_ATTENTION[k]: (model or {}).get(k, v) for k, v in old_keys.items()}
    return {"attention": name, "attention_class": target, "attention_keys": keys}


def checkpoint_kind(hparams: dict) -> str | None:
    """What a checkpoint holds, by its hyperparameters' `kind`: "classifier", or "bigru_lm" (attnclf pretrain's
    language models). A classifier saved before classifiers said their kind is told by its attention."""
    return hparams.get("kind") or (CLASSIFIER if "attention" in hparams else None)


def best_checkpoint(path: str | Path) -> Path:
    """A .ckpt file as given; a run folder: its best checkpoint (metrics.json's, else the one checkpoint
    that is not last.ckpt), so that eval and predict take run folders as train.py does."""
    path = Path(path).expanduser()
    # a file, or an exported model (attnclf export: config.json and model.safetensors), read whole
    if not path.is_dir() or ((path / "config.json").is_file() and (path / "model.safetensors").is_file()):
        return path
    metrics = path / "metrics.json"
    if metrics.is_file():
        best = json.loads(metrics.read_text()).get("best_checkpoint")
        # this folder's, if it was copied
        if best and (path / "checkpoints" / Path(best).name).is_file():
            return path / "checkpoints" / Path(best).name
    found = sorted(p for p in (path / "checkpoints").glob("*.ckpt") if p.name != "last.ckpt")
    if len(found) == 1:
        return found[0]
    raise AttnclfError(
        f"{path} is a folder without one best checkpoint (found {len(found)} besides last.ckpt in checkpoints/); "
        "give the .ckpt file"
    )


def run_dir_of(ckpt: Path) -> Path:
    """runs/<run>/checkpoints/x.ckpt -> runs/<run>; a folder (an exported model) is its own."""
    if ckpt.is_dir():
        return ckpt
    return ckpt.parent.parent if ckpt.parent.name == "checkpoints" else ckpt.parent


def _finished(run: Path) -> str | None:
    m = run / "metrics.json"
    return f"run {run} is finished (its results are in {m}); nothing to resume" if m.is_file() else None


def find_resume(ckpt_path: str, runs_root: Path, here: Path | None = None, matches=None) -> Path:
    """The checkpoint to resume from.

    `last`: the newest unfinished run (a checkpoints/last.ckpt, no metrics.json) among this command's own
    run folder `here` and the runs under `runs_root` whose hyperparameters pass `matches`; a run folder:
    its checkpoints/last.ckpt; a .ckpt file: itself. A finished run is refused: resuming it would only
    repeat its test, and its results stay as they are.
    """
    if ckpt_path == "last":
        runs = {p.parent.parent.resolve() for p in runs_root.glob("*/checkpoints/last.ckpt")}
        if here is not None and (here / "checkpoints" / "last.ckpt").is_file():
            runs.add(here.resolve())
        runs = [r for r in runs if not (r / "metrics.json").exists()]
        if not runs:
            raise AttnclfError(f"ckpt_path=last: no unfinished run with checkpoints/last.ckpt under {runs_root}")
        fitting = [
            r
            for r in runs
            if matches is None or matches(load_checkpoint(r / "checkpoints" / "last.ckpt").get("hyper_parameters", {}))
        ]
        if not fitting:
            raise AttnclfError(
                f"ckpt_path=last: none of the {len(runs)} unfinished run(s) under {runs_root} has this command's "
                "attention, model, optimizer and regularizer settings; give the run folder: ckpt_path=<run>"
            )
        newest = max(fitting, key=lambda r: (r / "checkpoints" / "last.ckpt").stat().st_mtime)
        return newest / "checkpoints" / "last.ckpt"
    path = Path(ckpt_path).expanduser()
    if path.is_dir():
        path = path / "checkpoints" / "last.ckpt"
    if not path.is_file():
        raise AttnclfError(f"ckpt_path={ckpt_path!r}: {path} does not exist (give last, a run folder or a .ckpt file)")
    finished = _finished(run_dir_of(path))
    if finished:
        raise AttnclfError(f"ckpt_path={ckpt_path!r}: {finished}")
    return path
