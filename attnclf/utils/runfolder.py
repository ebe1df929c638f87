"""A run folder's own files, and taking down one that a failed start left (light: no torch, no Lightning, so
that a command's one-line refusal does not wait for them)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

# in the run folder: where the weights started (the embedding's source, init_from)
START = "start.json"
# in the run folder: {"data": DataConfig.recorded(), "seed": ..., "carved": carving()}
RECORD = "data.json"


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
