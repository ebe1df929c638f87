"""A command's config composed from conf/ outside its own entry point: `model.init_from=pretrain` composes
pretrain.yaml from within train.py, as `attnclf pretrain <overrides>` would."""

from __future__ import annotations

from omegaconf import DictConfig

# the configs, the package the entry points read too (pkg://attnclf.conf): the checkout's conf/ in an editable
# install, the copy an installed wheel holds otherwise
CONF_MODULE = "attnclf.conf"


def compose_config(name: str, overrides: list[str]) -> DictConfig:
    """conf/<name>.yaml with `overrides`, without Hydra's own node (Hydra raises on a bad override)."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    # within an entry point: its search path is conf/
    if GlobalHydra.instance().is_initialized():
        return compose(config_name=name, overrides=overrides)
    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        return compose(config_name=name, overrides=overrides)
