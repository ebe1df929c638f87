"""A run killed with SIGKILL mid-epoch, then resumed, ends as if never interrupted."""

import json
import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, compose_cfg, tiny_overrides
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from attnclf.checkpoint import load_checkpoint
from attnclf.train import train

KILLER = '''
import os, signal
import pytorch_lightning as L

class KillAt(L.Callback):
    """SIGKILL this process right after optimizer step `step` (no clean-up of any kind)."""
    def __init__(self, step):
        self.step = step
    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)
'''

# 12 batches an epoch, 3 epochs, a step checkpoint every 5 steps; killed at step 17 (epoch 1, batch 5),
# so the resume starts from the step-15 checkpoint, mid-epoch.
RUN = [
    "trainer.max_epochs=3",
    "callbacks.step_checkpoint.every_n_train_steps=5",
    "trainer.deterministic=true",
    "callbacks.rich_progress_bar=null",
    "callbacks.attention_maps=null",
    "seed=7",
]


def cli(args, tmp_path, env=None):
    return subprocess.run(
        [sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )


@pytest.mark.parametrize(
    "precision,how",
    [("32-true", "run folder"), ("bf16-mixed", "last, in the same hydra.run.dir")],
)
def test_killed_run_resumes_to_the_same_result(tiny_imdb, tmp_path, precision, how):
    base = tiny_overrides(tiny_imdb, tmp_path / "x")[2:]  # all but output and cache dirs
    common = [
        f"data.path={tiny_imdb}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.runs_dir={tmp_path / 'elsewhere'}",
        f"trainer.precision={precision}",
        *base,
        *RUN,
    ]

    (tmp_path / "killer.py").write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = tmp_path / "run"
    killed = cli(
        [*common, f"hydra.run.dir={run}", "+callbacks.killer._target_=killer.KillAt", "+callbacks.killer.step=17"],
        tmp_path,
        env,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not (run / "metrics.json").exists()
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 15
    assert not list((run / "checkpoints").glob(".*tmp*"))  # no stray temporary files

    if how == "run folder":  # from a new command, whose own fresh folder is not left behind
        resumed = cli([*common, f"hydra.run.dir={tmp_path / 'fresh'}", f"ckpt_path={run}"], tmp_path)
        assert not (tmp_path / "fresh").exists()
    else:  # the same command again with ckpt_path=last: the run is in its own hydra.run.dir
        resumed = cli([*common, f"hydra.run.dir={run}", "ckpt_path=last"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming" in (run / "train.log").read_text()  # the resumed part logs into the run's own log
    after = json.loads((run / "metrics.json").read_text())

    cfg = compose_cfg([*common, f"paths.output_dir={tmp_path / 'straight'}"])
    train(cfg)
    straight = json.loads((tmp_path / "straight" / "metrics.json").read_text())

    assert after["steps"] == straight["steps"] == 36
    for key in ("val/acc", "test/acc", "test/loss"):
        assert after[key] == straight[key], key  # identical on CPU: same data order, RNG and optimizer state
    lasts = [load_checkpoint(d / "checkpoints" / "last.ckpt") for d in (run, tmp_path / "straight")]
    # last.ckpt is the end of training in both, whether or not the last epoch improved val/acc
    assert [c["global_step"] for c in lasts] == [36, 36]
    final = [c["state_dict"] for c in lasts]
    for name, tensor in final[0].items():
        torch.testing.assert_close(tensor, final[1][name], rtol=0, atol=0, msg=name)

    # TensorBoard continues the same curve: one train/loss point per logged step, none twice
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    steps = [e.step for e in events.Scalars("train/loss")]
    assert steps == sorted(set(steps)) and steps[-1] == 35


def test_resume_errors_are_one_line(tmp_path):
    r = cli([f"ckpt_path={tmp_path / 'nothing'}", f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert r.returncode == 2 and "does not exist" in r.stderr.strip().splitlines()[-1]
