"""End to end through the real Hydra config, Lightning and TensorBoard, on tiny data."""

import json
import subprocess
import sys

import pytest
import pytorch_lightning as L
import torch
from conftest import ROOT, compose_cfg, tiny_overrides
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from attnclf.data import IMDBDataModule
from attnclf.module import AttnClassifierModule
from attnclf.train import train

TAGS = {"train/loss", "train/acc", "val/loss", "val/acc", "test/acc", "train/samples_per_sec", "train/tokens_per_sec"}


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_short_run_writes_tensorboard_metrics_and_checkpoint(attention, tiny_imdb, tmp_path):
    cfg = compose_cfg(
        [
            f"attention={attention}",
            "experiment=smoke",
            "trainer.limit_train_batches=3",
            *tiny_overrides(tiny_imdb, tmp_path),
        ]
    )
    value = train(cfg)

    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert value == metrics["val/acc"] and 0 <= value <= 1
    for key in (
        "attention",
        "seed",
        "val/acc",
        "test/acc",
        "test/loss",
        "epochs",
        "fit_seconds",
        "train_tokens_per_sec",
        "best_checkpoint",
        "vocab",
    ):
        assert key in metrics, key
    assert metrics["attention"] == attention and metrics["epochs"] == 1 and metrics["train_tokens_per_sec"] > 0
    assert 50 < metrics["peak_rss_mb"] < 64_000  # MB, this process's own

    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    assert TAGS <= set(tags["scalars"]), TAGS - set(tags["scalars"])
    assert {f"attention/review_{i}" for i in range(4)} <= set(tags["images"])
    assert any(t.startswith("attention/review_0") for t in tags["tensors"])  # the marked text
    assert "_hparams_/session_start_info" in events.PluginTagToContent("hparams")  # the HParams dashboard

    # the best checkpoint loads with nothing else, and predicts
    model = AttnClassifierModule.load_from_checkpoint(metrics["best_checkpoint"], map_location="cpu")
    assert model.hparams.attention == attention
    logits, weights = model.eval()(torch.tensor([[5, 6, 7]]), torch.tensor([3]))
    assert logits.shape == (1, 2) and weights.shape == (1, 3)


class FirstBatches(L.Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == 0:
            self.seen.append(batch[0].tolist())


def test_each_epoch_reshuffles_through_lightning(tiny_imdb, tmp_path):
    """Lightning's set_epoch must reach the bucketing sampler, or every epoch repeats the same batches."""
    cfg = compose_cfg(["trainer.max_epochs=3", "logger=none", "callbacks=none", *tiny_overrides(tiny_imdb, tmp_path)])
    datamodule = IMDBDataModule(**cfg.data, seed=cfg.seed)
    datamodule.setup()
    model = AttnClassifierModule(vocab_size=len(datamodule.vocab), **cfg.model, **cfg.optimizer)
    record = FirstBatches()
    trainer = L.Trainer(
        max_epochs=3,
        limit_val_batches=0,
        callbacks=[record],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, datamodule=datamodule)
    assert len(record.seen) == 3 and len({str(b) for b in record.seen}) == 3


def test_fast_dev_run(tiny_imdb, tmp_path):
    cfg = compose_cfg(["trainer.fast_dev_run=true", *tiny_overrides(tiny_imdb, tmp_path)])
    train(cfg)
    assert json.loads((tmp_path / "metrics.json").read_text())["steps"] == 1


def test_model_learns_the_tiny_task(tiny_imdb, tmp_path):
    cfg = compose_cfg(
        [
            "trainer.max_epochs=10",
            "optimizer.lr=1e-2",
            "logger=none",
            "callbacks=none",
            *tiny_overrides(tiny_imdb, tmp_path),
        ]
    )
    assert train(cfg) >= 0.85  # chance is 0.5


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "train.py", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_unknown_attention_exits_nonzero_naming_the_choices():
    r = run_cli("attention=foo")
    assert r.returncode != 0
    assert "attention" in r.stderr and "dot" in r.stderr and "additive" in r.stderr


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.hidden_dim=0", "error: model.hidden_dim=0 must be a positive integer"),
        ("optimizer.lr=-1", "error: optimizer.lr=-1 must be a number > 0"),
        ("data.path=./no/such/dir", "error: data.path './no/such/dir' does not exist"),
    ],
)
def test_bad_values_one_line_and_exit_2(override, message, tmp_path):
    r = run_cli(override, f"hydra.run.dir={tmp_path}/run")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith(message), r.stderr


def test_smoke_run_shows_its_loss_curve_and_no_warnings_a_user_cannot_act_on(tiny_imdb, tmp_path):
    tiny = [o for o in tiny_overrides(tiny_imdb, tmp_path) if not o.startswith("trainer.log_every_n_steps")]
    r = run_cli("experiment=smoke", *tiny)
    assert r.returncode == 0, r.stderr[-2000:]
    for noise in ("LeafSpec", "multiple `ModelCheckpoint`", "smaller than the logging interval", "Traceback"):
        assert noise not in r.stderr, noise
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert len(events.Scalars("train/loss")) >= 2  # a curve (experiment=smoke logs every 5 of its steps)
