"""A command stopped from outside, outside the fit (which Lightning stops itself): SIGTERM raises Terminated and
Ctrl-C KeyboardInterrupt where the command is, so that the stack unwinds (temporary files removed, workers
stopped) and the command says one line. Where an exception must not be raised (while workers are forked: a
fork hook drops it, and a pool half started is never shut down), the stop waits until the block is left."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from attnclf.errors import Terminated

# blocks inside held() now, and a stop asked meanwhile
_state = {"held": 0, "asked": None}


def _stop(signum, frame) -> None:
    if _state["held"]:
        _state["asked"] = signum
        return
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


@contextmanager
def raised_on_stop():
    """SIGTERM and Ctrl-C raise inside the block (the fit puts its own handlers in their place while it runs).
    Only in the main thread, where a handler can be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def held():
    """A stop asked inside the block raised when it is left, not inside it."""
    _state["held"] += 1
    try:
        yield
    finally:
        _state["held"] -= 1
        # (left by the outermost block only: an inner one keeps the stop for it)
        if not _state["held"] and _state["asked"] is not None:
            asked, _state["asked"] = _state["asked"], None
            _stop(asked, None)
