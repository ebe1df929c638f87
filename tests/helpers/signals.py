"""A callback that signals its own process at a chosen step, for the kill-and-resume tests, and the
environment that lets a run started as a process of its own import it."""

from __future__ import annotations

import os

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


def signaller_env(tmp_path, armed=True):
    """The environment of a run that may name signaller.SignalAt as a callback (`armed`: it signals)."""
    (tmp_path / "signaller.py").write_text(SIGNALLER)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("SIGNALLER_ARMED", None)
    return {**env, "SIGNALLER_ARMED": "1"} if armed else env
