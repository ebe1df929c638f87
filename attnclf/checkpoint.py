"""Checkpoints: written atomically, loaded without unpickling code, found for resuming."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO

from attnclf.errors import AttnclfError


class AtomicCheckpointIO(TorchCheckpointIO):
    """torch.save to a temporary file beside the target, fsync, then rename over it.

    A kill at any moment leaves either the old file or the new one, never a torn
    one (Lightning's own save goes through a temporary file that may sit on
    another file system, where the final move is a copy).
    """

    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        try:
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def load_checkpoint(self, path, map_location=None, weights_only=True):
        return load_checkpoint(path, map_location or "cpu")


def load_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """torch.load(weights_only=True) with one-line errors for missing, truncated or foreign files."""
    path = Path(path)
    if not path.is_file():
        raise AttnclfError(f"checkpoint not found: {path}")
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
        raise AttnclfError(f"{path} is not a readable checkpoint (truncated or another format): {e}") from e
    except Exception as e:  # pickle.UnpicklingError for non-weights content: refuse, don't execute
        raise AttnclfError(f"{path} is not a plain checkpoint (refused to unpickle it): {type(e).__name__}") from e
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise AttnclfError(f"{path} is not a Lightning checkpoint of this project (no state_dict)")
    hp = ckpt.get("hyper_parameters")
    if isinstance(hp, dict) and "pack" in hp:  # checkpoints from before model.gru_kernel
        hp["gru_kernel"] = {True: "packed", False: "padded"}.get(hp.pop("pack"), "auto")
    return ckpt


def run_dir_of(ckpt: Path) -> Path:
    """runs/<run>/checkpoints/x.ckpt -> runs/<run>."""
    return ckpt.parent.parent if ckpt.parent.name == "checkpoints" else ckpt.parent


def find_resume(ckpt_path: str, runs_root: Path) -> Path:
    """The checkpoint to resume from.

    `last`: the newest unfinished run (no metrics.json) under `runs_root` that has a
    checkpoints/last.ckpt; a run folder: its checkpoints/last.ckpt; a .ckpt file: itself.
    """
    if ckpt_path == "last":
        runs = [p.parent.parent for p in runs_root.glob("*/checkpoints/last.ckpt")]
        runs = [r for r in runs if not (r / "metrics.json").exists()]
        if not runs:
            raise AttnclfError(f"ckpt_path=last: no unfinished run with checkpoints/last.ckpt under {runs_root}")
        return max(runs, key=lambda r: (r / "checkpoints" / "last.ckpt").stat().st_mtime) / "checkpoints" / "last.ckpt"
    path = Path(ckpt_path).expanduser()
    if path.is_dir():
        path = path / "checkpoints" / "last.ckpt"
    if not path.is_file():
        raise AttnclfError(f"ckpt_path={ckpt_path!r}: {path} does not exist (give last, a run folder or a .ckpt file)")
    return path
