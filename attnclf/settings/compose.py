"""A command's config composed from conf/ outside its own entry point: `model.init_from=pretrain` composes
pretrain.yaml from within train.py, as `attnclf pretrain <overrides>` would."""

from __future__ import annotations

from importlib.resources import files

from omegaconf import DictConfig

# the configs: the checkout's conf/ (an editable install), or the copy an installed wheel holds (attnclf.conf)
CONF = files("attnclf.conf")


def compose_config(name: str, overrides: list[str]) -> DictConfig:
    """conf/<name>.yaml with `overrides`, without Hydra's own node (Hydra raises on a bad override)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():  # within an entry point: its search path is conf/
        return compose(config_name=name, overrides=overrides)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name=name, overrides=overrides)
