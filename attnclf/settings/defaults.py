"""Each default of the classifier's groups written once, in its dataclass: conf/model/bigru.yaml,
conf/optimizer/adamw.yaml and conf/regularizer/*.yaml start from a node of their dataclass's defaults
(`/attnclf_defaults/<group>` in their defaults list) and write only what differs. Hydra finds the nodes in its
ConfigStore, which `register_defaults()` fills when attnclf.settings is imported. The values are plain (not
the dataclass itself), so that a value of the wrong type reaches typed() and its one-line error."""

from __future__ import annotations

from dataclasses import asdict

from attnclf.settings.model import ModelConfig, OptimizerConfig, RegularizerConfig

# the group and the dataclass whose defaults it starts from
GROUP_DEFAULTS = {"model": ModelConfig, "optimizer": OptimizerConfig, "regularizer": RegularizerConfig}


def register_defaults() -> None:
    """Store each group's dataclass defaults as `attnclf_defaults/<group>` (again: the same nodes)."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for group, cls in GROUP_DEFAULTS.items():
        store.store(group="attnclf_defaults", name=group, node=asdict(cls()))
