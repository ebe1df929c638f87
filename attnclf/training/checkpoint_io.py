"""Checkpoints written atomically: Lightning's checkpoint writer, with a kill at any moment leaving a whole file."""

from __future__ import annotations

import os
from pathlib import Path

import torch
from pytorch_lightning.plugins.io import TorchCheckpointIO

from attnclf.training.checkpoint import load_checkpoint


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
