"""Libraries' log lines a user of this tool cannot act on, held back while inside."""

from __future__ import annotations

import logging
from contextlib import contextmanager


@contextmanager
def logs_at_least(level: int, *names: str):
    """The loggers `names` say only what is at `level` or above while inside."""
    loggers = [logging.getLogger(n) for n in names]
    before = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(max(level, lg.getEffectiveLevel()))
    try:
        yield
    finally:
        for lg, was in zip(loggers, before, strict=True):
            lg.setLevel(was)
