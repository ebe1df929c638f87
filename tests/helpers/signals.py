"""A callback that signals its own process at a chosen step, for the kill-and-resume tests; the
environment that lets a run started as a process of its own import it, armed; and the resume, a command
run in the test's process with the callback importable and not armed."""

from __future__ import annotations

import os
import time

from helpers.commands import attnclf_finished

SIGNALLER = '''
import os, signal
import pytorch_lightning as L

class SignalAt(L.Callback):
    """Send this process `sig` right after optimizer step `step`: SIGKILL (no clean-up of any kind), SIGTERM
    (as a scheduler stops a job) or SIGINT (Ctrl-C). Only where SIGNALLER_ARMED is set: the resume takes
    the run's own settings, this callback among them, and goes on unsignalled."""
    def __init__(self, step, sig="SIGKILL"):
        self.step, self.sig = step, getattr(signal, sig)
    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.step and os.environ.get("SIGNALLER_ARMED"):
            os.kill(os.getpid(), self.sig)
'''


def signaller_env(tmp_path):
    """The environment of a run, a process of its own, whose signaller.SignalAt callback signals."""
    (tmp_path / "signaller.py").write_text(SIGNALLER)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return {**env, "SIGNALLER_ARMED": "1"}


def resume_in_process(argv, tmp_path, monkeypatch, capfd) -> tuple[int, str]:
    """`attnclf *argv` in this process, as the command after a kill runs: the callback its run names (in
    `tmp_path`, from signaller_env) importable, not armed. Its exit status and what it wrote to stderr."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("SIGNALLER_ARMED", raising=False)
    # into the next second: TensorBoard reads a run's event files in the order of their names, whose first
    # field is the second each was opened in; a resume in the kill's second (here, not a user's process, which
    # takes seconds to start) would be ordered by process id
    time.sleep(1 - time.time() % 1)
    done = attnclf_finished(argv, monkeypatch, capfd)
    return done.returncode, done.stderr
