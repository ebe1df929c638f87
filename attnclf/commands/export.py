"""`attnclf export ckpt=<run> out=<folder>`: a trained model in the Hugging Face Hub's layout (config.json,
model.safetensors, vocab.json, README.md: the model card), which predict, eval, serve and faithfulness read as
they read a run folder, and `TrainedClassifier.from_pretrained` reads in Python. `push=<repo id>` uploads it
with huggingface_hub (the folder is written first, so a Hub that cannot be reached loses nothing)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from attnclf.errors import AttnclfError
from attnclf.settings.hub_licenses import check_license
from attnclf.settings.run import checkpoints_given

HELP = """usage: attnclf export ckpt=<.ckpt or run folder> out=<folder> [license=ID] [push=<repo id>]

  ckpt=PATH      a checkpoint, or a run folder (its best checkpoint)
  out=FOLDER     where the model goes (a new or empty folder): config.json, model.safetensors,
                 vocab.json, data.json and README.md (the model card)
  license=ID     the card's license, one of the Hub's identifiers, e.g. mit or apache-2.0 (default: none said)
  push=REPO_ID   upload the folder to the Hugging Face Hub as REPO_ID (needs the Hub and a token)"""


@dataclass
class ExportConfig:
    ckpt: str | None = None
    out: str | None = None
    license: str | None = None
    push: str | None = None

    def check(self) -> None:
        if self.ckpt is None or self.out is None:
            raise AttnclfError("give the run and the folder: attnclf export ckpt=<run> out=<folder>")
        checkpoints_given(self.ckpt, "export")
        out = Path(self.out)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise AttnclfError(f"out={self.out!r} exists and is not an empty folder; give a new one")
        if self.license is not None:
            check_license(self.license)
        if self.push is not None and self.push.count("/") != 1:
            raise AttnclfError(f"push={self.push!r} is not a repo id; give <user or org>/<name>")


def export_settings(argv: list[str]) -> ExportConfig:
    keys = [f.name for f in fields(ExportConfig)]
    args = {}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq or key not in keys:
            raise AttnclfError(f"unknown argument {a!r}; give key=value with key one of: {', '.join(keys)}")
        args[key] = value
    config = ExportConfig(**args)
    config.check()
    return config


def export(argv: list[str]) -> Path:
    if any(a in ("-h", "--help") for a in argv):
        print(HELP)
        raise SystemExit(0)
    s = export_settings(argv)
    from attnclf.inference.card import model_card
    from attnclf.inference.pretrained import export_folder
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.training.checkpoint import best_checkpoint

    checkpoint = best_checkpoint(s.ckpt)
    clf = TrainedClassifier.from_checkpoint(checkpoint)
    out = Path(s.out)
    config = export_folder(clf, checkpoint, out)
    model_card(config, clf.run, checkpoint, s.license).save(out / "README.md")
    same_modes(out)
    print(f"exported {checkpoint} to {out}/ (config.json, model.safetensors, vocab.json, README.md)")
    if s.push:
        push(out, s.push)
    return out


def same_modes(folder: Path) -> None:
    """Every file of `folder` given the mode a new file gets here (0644 under the usual umask): safetensors
    writes its file 0600, and the copied vocabulary keeps the run's."""
    umask = os.umask(0)
    os.umask(umask)
    for path in folder.iterdir():
        path.chmod(0o666 & ~umask)


def push(folder: Path, repo_id: str) -> None:
    """Upload `folder` to the Hub as `repo_id`; a Hub that cannot be reached is one line (the folder stays)."""
    from huggingface_hub import HfApi

    try:
        api = HfApi()
        api.create_repo(repo_id, exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=str(folder))
    # whatever the upload meets (no network, no token, a refusal), said in one line: the work is on disk
    except Exception as e:
        raise AttnclfError(
            f"push={repo_id}: the Hub did not take it ({str(e).splitlines()[0]}); {folder} is kept"
        ) from None
    print(f"pushed to https://huggingface.co/{repo_id}")


# what `attnclf export key=value ...` calls with its arguments (attnclf/commands/__init__.py)
command = export
