"""`attnclf <command> ...` run in this process, through the command table: for what a test checks of a
command's answer, not of a process of its own (a process costs seconds of imports a call)."""

from __future__ import annotations

import subprocess
import sys

from attnclf.commands import main


def attnclf_in_process(argv: list[str], monkeypatch) -> int:
    """`attnclf *argv`'s exit status; a Hydra app's GlobalHydra cleared after it, for the next compose."""
    from hydra.core.global_hydra import GlobalHydra

    # (a Hydra app reads its arguments from sys.argv, which main() sets)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    GlobalHydra.instance().clear()
    return 0 if status is None else status


def attnclf_finished(argv: list[str], monkeypatch, capfd) -> subprocess.CompletedProcess:
    """`attnclf *argv` in this process, as a finished process holds it: its exit status, and what it (and any
    process it started) wrote to stdout and stderr."""
    capfd.readouterr()
    status = attnclf_in_process(argv, monkeypatch)
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(["attnclf", *argv], status, out, err)
