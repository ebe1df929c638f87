"""Every config in conf/ composes, and the keys users rely on exist."""

from pathlib import Path

import pytest
from conftest import CONF, compose_cfg
from omegaconf import OmegaConf

OPTIONS = sorted((p.parent.name, p.stem) for p in Path(CONF).glob("*/*.yaml") if p.parent.name != "hydra")


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_config_composes(group, option):
    cfg = compose_cfg([f"{group}={option}", "paths.output_dir=/tmp/x"])
    OmegaConf.to_container(cfg, resolve=True)


def test_documented_keys_exist():
    cfg = compose_cfg(["paths.output_dir=/tmp/x"])
    for key in (
        "attention",
        "data.path",
        "data.max_length",
        "data.batch_size",
        "data.vocab_size",
        "data.val_size",
        "model.embed_dim",
        "model.hidden_dim",
        "model.dropout",
        "optimizer.lr",
        "seed",
        "trainer.max_epochs",
        "trainer.accelerator",
        "trainer.devices",
        "trainer.precision",
        "trainer.limit_train_batches",
    ):
        assert OmegaConf.select(cfg, key, default="MISSING") != "MISSING", key
    assert cfg.attention == "dot" and cfg.data.path == "stanfordnlp/imdb"
    assert compose_cfg(["attention=additive", "paths.output_dir=/tmp/x"]).attention == "additive"


def test_eval_config_composes():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="eval", overrides=["ckpt=x.ckpt", "paths.output_dir=/tmp/x"])
    assert cfg.data.split == "test" and cfg.data.path == "stanfordnlp/imdb"
