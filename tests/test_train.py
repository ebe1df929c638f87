"""End to end through the real Hydra config, Lightning and TensorBoard, on tiny data."""

import re
import subprocess
import sys
import time

import pytest
import pytorch_lightning as L
import torch
from helpers.classifier import classifier_settings
from helpers.config import ROOT, compose_cfg, tiny_overrides
from helpers.data import make_datamodule
from helpers.files import strict_json
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from attnclf.commands.train import train
from attnclf.errors import AttnclfError
from attnclf.settings.model import classifier_config
from attnclf.training.module import ClassifierModule

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

    metrics = strict_json(tmp_path / "metrics.json")
    logged = EventAccumulator(str(tmp_path / "tensorboard"))
    logged.Reload()
    best_logged = max(e.value for e in logged.Scalars("val/acc"))
    assert value == metrics["val/acc"] == pytest.approx(best_logged, abs=1e-6) and 0 <= value <= 1
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
    assert metrics["peak_gpu_mb"] is None  # (not measured off a GPU: null, as strict JSON has no NaN)

    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    assert TAGS <= set(tags["scalars"]), TAGS - set(tags["scalars"])
    assert {f"attention/review_{i}" for i in range(4)} <= set(tags["images"])
    assert {f"attention/importance_{i}" for i in range(4)} <= set(tags["images"])  # attention, gradient, LOO
    # the marked text: title with the true and predicted labels, the review's words, its top-5 in bold
    text_tag = next(t for t in tags["tensors"] if t.startswith("attention/review_0"))
    text = events.Tensors(text_tag)[-1].tensor_proto.string_val[0].decode()
    assert re.match(rf"\*\*{attention} attention \| true: [01] \| predicted: [01] \(p=0\.\d\d\)\*\*", text), text
    bold = re.findall(r"\*\*(\S+?)\*\*\((0\.\d\d)\)", text)
    assert len(bold) == 5
    plain = [w for w in text.split("\n\n", 1)[1].split() if not w.startswith("**")]
    shown = [float(v) for _, v in bold]
    assert min(shown) >= 0 and len(plain) + 5 >= 30  # the callback picks reviews of 30+ tokens
    assert "_hparams_/session_start_info" in events.PluginTagToContent("hparams")  # the HParams dashboard

    # the best checkpoint loads with nothing else, and predicts
    model = ClassifierModule.load_from_checkpoint(metrics["best_checkpoint"], map_location="cpu")
    assert model.hparams.attention == attention and model.hparams.kind == "classifier"  # (it says its kind)
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
    datamodule = make_datamodule(**cfg.data, seed=cfg.seed)
    datamodule.setup()
    model = ClassifierModule(len(datamodule.vocab), datamodule.num_classes, classifier_config(cfg))
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
    assert strict_json(tmp_path / "metrics.json")["steps"] == 1


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
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


def test_unknown_attention_is_refused_naming_the_choices():
    with pytest.raises(Exception) as e:  # (Hydra's own error: on the command line, its message and exit 1)
        compose_cfg(["attention=foo"])
    assert "attention/foo" in str(e.value) and "dot" in str(e.value) and "additive" in str(e.value)


def test_a_bad_value_is_one_line_on_stderr_and_exit_2(tmp_path, capsys):
    from attnclf.commands.user_errors import one_line

    with pytest.raises(SystemExit) as e:
        one_line(train, compose_cfg(["data.path=./no/such/dir", f"paths.output_dir={tmp_path / 'run'}"]))
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: data.path './no/such/dir' does not exist"), err


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_smoke_run_shows_its_loss_curve_and_no_warnings_a_user_cannot_act_on(tiny_imdb, tmp_path):
    tiny = [o for o in tiny_overrides(tiny_imdb, tmp_path) if not o.startswith("trainer.log_every_n_steps")]
    r = run_cli("experiment=smoke", *tiny, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr[-2000:]
    for noise in ("LeafSpec", "multiple `ModelCheckpoint`", "smaller than the logging interval", "Traceback"):
        assert noise not in r.stderr, noise
    # the word vectors: one line of ours on the console, gensim's own progress in train.log only
    assert "gensim" not in r.stdout + r.stderr and "word2vec: training" in r.stdout + r.stderr
    assert "gensim" in (tmp_path / "train.log").read_text()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert len(events.Scalars("train/loss")) >= 2  # a curve (experiment=smoke logs every 5 of its steps)


class Perturb(L.Callback):
    """After the last validation and checkpoint, scramble the weights in memory: only a test that restores
    the best checkpoint still gives that checkpoint's numbers."""

    def on_train_end(self, trainer, pl_module):
        with torch.no_grad():
            for p in pl_module.parameters():
                p.add_(torch.randn_like(p))


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_the_best_checkpoint_is_tested_and_the_run_counts_useful_tokens(tiny_imdb, tmp_path):
    cfg = compose_cfg(
        [
            *tiny_overrides(tiny_imdb, tmp_path),
            "trainer.max_epochs=2",
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            "+callbacks.perturb._target_=test_train.Perturb",
        ]
    )
    start = time.perf_counter()
    train(cfg)
    elapsed = time.perf_counter() - start
    m = strict_json(tmp_path / "metrics.json")
    assert 0 < m["train_seconds"] < m["fit_seconds"] < elapsed  # (the test's checkpoint does not add its time)
    # tokens/s over the training time alone (validation excluded): every throughput figure in the docs is this
    assert m["train_tokens_per_sec"] == pytest.approx(m["train_tokens"] / m["train_seconds"], rel=1e-9)
    assert m["train_tokens_per_sec"] > m["train_tokens"] / m["fit_seconds"]
    datamodule = make_datamodule(**cfg.data, seed=cfg.seed)
    model = ClassifierModule.load_from_checkpoint(m["best_checkpoint"], map_location="cpu", weights_only=True)
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    again = trainer.test(model, datamodule=datamodule, verbose=False)[0]
    assert m["test/loss"] == pytest.approx(again["test/loss"], abs=1e-6)
    assert m["test/acc"] == pytest.approx(again["test/acc"], abs=1e-6)
    # useful tokens: the reviews' (truncated) lengths, no padding, in each of the 2 epochs
    assert m["train_tokens"] == 2 * int(datamodule.train_set.lengths.sum())
    assert m["eval_reviews"] == 2 * len(datamodule.val_set)


def test_sweep_fast_early_stopping_stops_a_run_that_does_not_improve(tiny_imdb, tmp_path):
    cfg = compose_cfg(
        [
            *tiny_overrides(tiny_imdb, tmp_path),
            "experiment=sweep_fast",
            "data.train_size=null",  # (the tiny data has 180 training rows)
            "optimizer.lr=1e-9",  # val/acc never changes: no validation improves on the first
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            "test=false",
        ]
    )
    assert cfg.trainer.max_epochs == 2 and cfg.trainer.val_check_interval == 0.25
    train(cfg)
    m = strict_json(tmp_path / "metrics.json")
    # 12 steps an epoch, validated every 3: the first validation and 3 without improvement, then stop
    assert m["steps"] == 12 < 24


def test_the_default_early_stopping_ends_a_run_three_epochs_after_its_best_and_says_so(tiny_imdb, tmp_path, caplog):
    """Validated once an epoch, a run whose val/acc does not better its first stops after epoch 4 of 8; the log
    says so. `callbacks.early_stopping=null` runs all 8, and so does a run without validation."""
    import logging

    caplog.set_level(logging.INFO)
    # (2 training steps an epoch: what is stopped on is the validation after each, over all its rows)
    base = [
        "trainer.max_epochs=8",
        "trainer.limit_train_batches=2",
        "optimizer.lr=1e-9",
        "logger=none",
        "callbacks.rich_progress_bar=null",
        "callbacks.attention_maps=null",
        "test=false",
        "model.embeddings=random",
    ]
    train(compose_cfg([*tiny_overrides(tiny_imdb, tmp_path), *base]))
    m = strict_json(tmp_path / "metrics.json")
    assert m["epochs"] == 4 and m["steps"] == 4 * 2
    assert "early stopping: val/acc has not bettered its best" in caplog.text
    assert "in 3 validations: stopped after 4 of 8 epochs" in caplog.text
    caplog.clear()
    train(compose_cfg([*tiny_overrides(tiny_imdb, tmp_path / "all"), *base, "callbacks.early_stopping=null"]))
    assert strict_json(tmp_path / "all" / "metrics.json")["epochs"] == 8
    assert "early stopping" not in caplog.text
    # without validation there is nothing to stop on: the run trains all its epochs
    train(
        compose_cfg(
            [
                *tiny_overrides(tiny_imdb, tmp_path / "noval"),
                *base,
                "trainer.limit_val_batches=0",
                "trainer.num_sanity_val_steps=0",
            ]
        )
    )
    assert strict_json(tmp_path / "noval" / "metrics.json")["epochs"] == 8


def test_min_steps_trains_small_data_for_more_epochs_and_says_so(tiny_imdb, tmp_path, caplog):
    """180 training reviews in batches of 16 are 12 steps an epoch: min_steps=30 makes 3 epochs of 1, and the
    log says why."""
    import logging

    caplog.set_level(logging.INFO)
    cfg = compose_cfg(
        [
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            "trainer.max_epochs=1",
            "min_steps=30",
            "model.embeddings=random",
            *tiny_overrides(tiny_imdb, tmp_path),
        ]
    )
    train(cfg)
    m = strict_json(tmp_path / "metrics.json")
    assert m["epochs"] == 3 and m["steps"] == 36
    assert "trainer.max_epochs 1 -> 3: 12 optimizer steps an epoch, and min_steps=30" in caplog.text
    with pytest.raises(AttnclfError, match=r"min_steps=0 must be a positive integer or null"):
        train(compose_cfg([*tiny_overrides(tiny_imdb, tmp_path / "x"), "min_steps=0"]))


def test_balanced_class_weights_weigh_the_training_loss_by_the_training_rows(tiny_imdb, tmp_path, caplog):
    """optimizer.class_weights=balanced: each class weighs n / (classes x its training rows) in the training
    loss (plain and adversarial), a class without training rows 0; the run logs the weights, and its
    checkpoint (the weights not in it) loads and evaluates as any other."""
    import logging
    import warnings

    import numpy as np
    import torch.nn.functional as F

    from attnclf.inference import TrainedClassifier
    from attnclf.training.regularizers import adversarial_losses

    module = ClassifierModule(30, 3, classifier_settings(class_weights="balanced"))
    weight = module.weigh_classes(np.array([0, 0, 0, 1, 0, 0, 1, 0]))
    assert weight.tolist() == pytest.approx([8 / (3 * 6), 8 / (3 * 2), 0.0])
    ids, lengths, y = torch.randint(2, 30, (4, 7)), torch.tensor([7, 5, 3, 2]), torch.tensor([0, 1, 1, 0])
    module.eval()  # (no dropout: the same logits twice)
    logits, _ = module(ids, lengths, lengths)
    expected = F.cross_entropy(logits, y, weight=weight)
    assert not torch.isclose(expected, F.cross_entropy(logits, y))  # (the weights change the loss here)
    with warnings.catch_warnings():  # (Lightning: self.log without a Trainer)
        warnings.simplefilter("ignore")
        assert torch.isclose(module.training_step((ids, lengths, y), 0), expected)
    _, clean, _, _ = adversarial_losses(module.model, ids, lengths, lengths, y, 0.02, weight=module.class_weight)
    assert torch.isclose(clean, expected)
    assert ClassifierModule(30, 3, classifier_settings()).weigh_classes(np.array([0, 1])) is None

    caplog.set_level(logging.INFO)
    cfg = compose_cfg(
        [
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            "trainer.max_epochs=1",
            "model.embeddings=random",
            "optimizer.class_weights=balanced",
            *tiny_overrides(tiny_imdb, tmp_path),
        ]
    )
    train(cfg)
    assert re.search(r"optimizer.class_weights=balanced: 0 [0-9.]+, 1 [0-9.]+ \(n / \(classes x", caplog.text)
    clf = TrainedClassifier.from_checkpoint(next((tmp_path / "checkpoints").glob("epoch*.ckpt")))
    assert clf.module.hparams.optimizer["class_weights"] == "balanced" and clf.module.class_weight is None


def test_min_epochs_auto_trains_small_data_of_many_classes_longer_and_says_so(tmp_path, caplog):
    """min_epochs=auto: 3 classes and 300 training rows train 10 epochs (the log says why); two classes, or
    20,000 rows, keep trainer.max_epochs; a number is a floor; a run capped by max_steps is left alone."""
    import json
    import logging

    from helpers.data import make_datamodule

    from attnclf.training.trainer import SMALL_DATA_ROWS, at_least_epochs

    rows = [{"text": f"{w} film {i}", "label": i % 3} for i, w in enumerate(["dull", "fine", "great"] * 100)]
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    three = make_datamodule(str(path), cache_dir=str(tmp_path / "c"))
    three.setup("fit")
    caplog.set_level(logging.INFO)

    def epochs(dm, min_epochs, **trainer):
        t = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False, **trainer)
        at_least_epochs(t, min_epochs, dm)
        return t.fit_loop.max_epochs

    assert three.num_classes == 3 and len(three.train_set) < SMALL_DATA_ROWS
    assert epochs(three, "auto") == 10
    assert re.search(r"trainer.max_epochs 3 -> 10: min_epochs=auto: 3 classes and \d+ training rows", caplog.text)
    assert epochs(three, None) == 3 and epochs(three, 5) == 5 and epochs(three, 2) == 3
    assert epochs(three, "auto", max_steps=50) == 3
    binary = [{"text": r["text"], "label": r["label"] % 2} for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in binary))
    two = make_datamodule(str(path), cache_dir=str(tmp_path / "c2"))
    two.setup("fit")
    assert two.num_classes == 2 and epochs(two, "auto") == 3
    many = [{"text": f"{w} film {i}", "label": i % 3} for i, w in enumerate(["dull", "fine", "great"] * 8000)]
    path.write_text("".join(json.dumps(r) + "\n" for r in many))
    large = make_datamodule(str(path), cache_dir=str(tmp_path / "c3"), test_size=0.05)
    large.setup("fit")
    assert len(large.train_set) >= SMALL_DATA_ROWS and epochs(large, "auto") == 3
    with pytest.raises(AttnclfError, match=r"min_epochs=0 must be a positive integer, auto or null"):
        train(compose_cfg(["data.path=/no/such/data", f"paths.output_dir={tmp_path}", "min_epochs=0"]))


@pytest.mark.parametrize("rising,epochs", [(True, 8), (False, 4)])
def test_the_default_early_stopping_waits_while_val_acc_rises(tmp_path, rising, epochs):
    """callbacks.early_stopping as configured, in a real Trainer: a run whose val/acc rises every epoch trains
    all 8 epochs; one whose val/acc falls from its first stops 3 epochs after it (accuracy is better upward)."""
    from hydra.utils import instantiate

    class Scripted(L.LightningModule):  # val/acc set by the epoch; the training itself is beside the point
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def training_step(self, batch, batch_idx):
            return (self.w * batch[0]).sum()

        def validation_step(self, batch, batch_idx):
            step = 0.1 * self.current_epoch
            self.log("val/acc", 0.5 + step if rising else 0.9 - step)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 1)), batch_size=2)
    stop = instantiate(compose_cfg([f"paths.output_dir={tmp_path}"]).callbacks.early_stopping)
    trainer = L.Trainer(
        max_epochs=8,
        callbacks=[stop],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Scripted(), loader, loader)
    assert trainer.current_epoch == epochs


def test_small_data_logs_train_loss_a_few_times_an_epoch_and_says_so(tiny_imdb, tmp_path, caplog):
    """12 steps an epoch against trainer.log_every_n_steps=50 (the default): Lightning would log no
    train/loss at all; the run logs it every 3 steps (4 points an epoch) and the log says why."""
    import logging

    caplog.set_level(logging.INFO, logger="attnclf")
    overrides = [o for o in tiny_overrides(tiny_imdb, tmp_path) if not o.startswith("trainer.log_every_n_steps")]
    train(
        compose_cfg(
            [
                "trainer.max_epochs=2",
                "trainer.log_every_n_steps=50",
                "callbacks.rich_progress_bar=null",
                "callbacks.attention_maps=null",
                *overrides,
            ]
        )
    )
    logged = EventAccumulator(str(tmp_path / "tensorboard"))
    logged.Reload()
    steps = [e.step for e in logged.Scalars("train/loss")]
    assert steps == [2, 5, 8, 11, 14, 17, 20, 23], steps  # (Lightning logs after the step: global step 3, 6, ...)
    assert (
        "trainer.log_every_n_steps=50: 3, for 12 steps an epoch (train/loss at least 4 times an epoch)" in caplog.text
    )
