"""Configs composed through Hydra from conf/, as the commands compose them, and a tiny run trained."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[2]
CONF = str(ROOT / "conf")


def compose_cfg(overrides: list[str], config_name: str = "train"):
    """A command's config (conf/<config_name>.yaml) with these overrides."""
    # the defaults the config starts from are stored on import: the settings' own by attnclf.settings, which
    # every command's module imports, and a command's own by its module
    importlib.import_module(f"attnclf.commands.{config_name}")
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name=config_name, overrides=overrides)


def tiny_overrides(data_path: Path, out: Path) -> list[str]:
    return [
        f"data.path={data_path}",
        f"paths.output_dir={out}",
        f"paths.cache_dir={out / 'cache'}",
        "data.batch_size=16",
        "data.eval_batch_size=32",
        "data.vocab_size=200",
        "data.max_length=64",
        "data.val_size=0.25",
        "model.embed_dim=16",
        "model.hidden_dim=16",
        "trainer.accelerator=cpu",
        "trainer.enable_model_summary=false",
        "trainer.log_every_n_steps=1",
    ]


def train_tiny(tiny_imdb: Path, out: Path, attention: str) -> Path:
    """A finished short training run on the tiny data: its folder (checkpoints/, vocab.json, metrics.json)."""
    from attnclf.commands.train import train

    train(
        compose_cfg(
            [
                f"attention={attention}",
                "experiment=smoke",
                "trainer.max_epochs=3",
                "optimizer.lr=1e-2",
                "logger=none",
                "callbacks.rich_progress_bar=null",
                "callbacks.attention_maps=null",
                *tiny_overrides(tiny_imdb, out),
            ]
        )
    )
    return out


def fit(data, out, *extra):
    """A short run on `data`; its metrics.json."""
    from attnclf.commands.train import train

    overrides = [o for o in tiny_overrides(data, out) if not o.startswith("data.val_size")]
    quiet = ["callbacks.rich_progress_bar=null", "callbacks.attention_maps=null"]
    train(compose_cfg([*overrides, "trainer.max_epochs=4", "optimizer.lr=1e-2", *quiet, *extra]))
    return json.loads((out / "metrics.json").read_text())
