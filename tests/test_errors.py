"""Bad input: one clear line naming the value and what is allowed, and no lost work."""

import os
import subprocess
import sys

import datasets
import pytest
import pytorch_lightning as L
import torch
from conftest import ROOT, compose_cfg, make_reviews, tiny_overrides

from attnclf.checkpoint import load_checkpoint
from attnclf.errors import AttnclfError
from attnclf.train import train


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.embed_dim=-4", "model.embed_dim=-4 must be a positive integer"),
        ("data.batch_size=0", "data.batch_size=0 must be a positive integer"),
        ("data.max_length=0", "data.max_length=0 must be a positive integer"),
        ("optimizer.lr=0", "optimizer.lr=0 must be a number > 0"),
        ("data.val_size=1.5", "data.val_size=1.5 must be a fraction in (0, 1) or a row count"),
        ("data.val_size=0", "data.val_size=0 must be a fraction"),
        ("data.truncation=middle", "data.truncation='middle'; allowed: head, tail, head_tail"),
        ("optimized_metric=test/f1", "optimized_metric='test/f1'; allowed"),
    ],
)
def test_bad_values(override, message, tiny_imdb, tmp_path):
    with pytest.raises(AttnclfError) as e:
        train(compose_cfg([*tiny_overrides(tiny_imdb, tmp_path), "experiment=smoke", "logger=none", override]))
    assert message in str(e.value) and "\n" not in str(e.value)


def write_split(root, **columns):
    root.mkdir()
    for split in ("train", "test"):
        datasets.Dataset.from_dict(columns).to_parquet(str(root / f"{split}.parquet"))
    return root


def test_dataset_without_text_or_label_columns(tmp_path):
    data = write_split(tmp_path / "d", review=["good", "bad"], stars=[1, 0])
    with pytest.raises(
        AttnclfError, match=r"lacks column\(s\) \['text', 'label'\]; columns found: \['review', 'stars'\]"
    ):
        train(compose_cfg(tiny_overrides(data, tmp_path / "o")))


def test_labels_out_of_range(tmp_path):
    reviews = make_reviews(40, 0)
    reviews["label"][5] = 3
    data = write_split(tmp_path / "d", **reviews)
    with pytest.raises(AttnclfError, match=r"has label 3; labels must be in 0..1"):
        train(compose_cfg(tiny_overrides(data, tmp_path / "o")))


def test_hub_unreachable_says_how_to_use_a_local_folder(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            "data.path=stanfordnlp/imdb",
            f"hydra.run.dir={tmp_path}",
            f"paths.cache_dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert "stanfordnlp/imdb" in last and "Hub" in last and "data.path=" in last, last


class Poison(L.Callback):
    """Diverge on purpose: a weight becomes NaN after optimizer step `step`."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, *args):
        if trainer.global_step == self.step:
            with torch.no_grad():
                pl_module.model.fc.weight[0, 0] = float("nan")


@pytest.mark.parametrize("lr", [1e30, 2e-3])  # diverging for real, and a NaN planted after step 5
def test_divergence_stops_and_keeps_the_last_good_checkpoint(lr, tiny_imdb, tmp_path):
    overrides = [
        *tiny_overrides(tiny_imdb, tmp_path),
        "logger=none",
        "callbacks.rich_progress_bar=null",
        "callbacks.attention_maps=null",
        "callbacks.step_checkpoint.every_n_train_steps=1",
        "trainer.max_epochs=3",
        f"optimizer.lr={lr}",
        "optimizer.schedule=constant",
    ]
    if lr < 1:
        overrides += ["+callbacks.poison._target_=test_errors.Poison", "+callbacks.poison.step=5"]
    with pytest.raises(
        AttnclfError, match=r"(train/loss|parameter \S+) became (nan|inf|nan/inf) (at|by) step \d+; stop"
    ):
        train(compose_cfg(overrides))
    checkpoints = tmp_path / "checkpoints"
    assert not list(checkpoints.glob(".*tmp*"))
    last = load_checkpoint(checkpoints / "last.ckpt")  # intact, and from before the divergence
    weights = {k: t for k, t in last["state_dict"].items() if k.startswith("model.")}
    assert weights and all(t.isfinite().all() for t in weights.values())
    if lr < 1:
        assert last["global_step"] == 4
