"""Processes a command starts to do its work (a study's or compare-datasets' `attnclf train` multiruns): each
is told to stop when the command that started it dies, so that a killed command leaves no training running on
(light: no torch)."""

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

    def before_exec() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        # the parent died before the signal was asked for: stop now
        if os.getppid() != parent:
            os._exit(143)

    return {"preexec_fn": before_exec}
