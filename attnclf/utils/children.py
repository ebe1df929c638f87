"""Processes a command starts to do its work (a study's or compare-datasets' `attnclf train` multiruns, the
tokenising workers a run forks): each is told to stop when the process that started it dies, so that a killed
command leaves nothing running on (light: no torch)."""

from __future__ import annotations

import os
import signal
import sys

# linux/prctl.h
PR_SET_PDEATHSIG = 1


def stops_with_this_process() -> dict:
    """Popen's keyword arguments for a child that gets SIGTERM when this process dies, by SIGKILL or SIGTERM or
    otherwise (Linux's parent-death signal; `attnclf train` takes SIGTERM as a stop: it checkpoints the step in
    flight and exits 143). Elsewhere nothing is set."""
    if not sys.platform.startswith("linux"):
        return {}
    parent = os.getpid()
    return {"preexec_fn": lambda: die_with(parent, signal.SIGTERM)}


def die_with(parent: int, sig: signal.Signals) -> None:
    """Called in a child (`parent`: the pid that started it): Linux sends it `sig` when that process's
    thread that forked it ends; a parent already gone ends it now. Nothing elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    # the parent died before the signal was asked for: stop now
    if os.getppid() != parent:
        os._exit(128 + sig)
