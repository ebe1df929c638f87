"""Each default written once, in its dataclass. A config group's file (conf/model/bigru.yaml, data/imdb.yaml,
...) and a command's own config (conf/train.yaml, eval.yaml, ...) start from a node of their dataclass's
defaults (`/attnclf_defaults/<name>` in their defaults list) and write only what differs, or what only a
config can say (an interpolation such as ${paths.cache_dir}).

Hydra finds the nodes in its ConfigStore: `register_defaults()` stores the settings' own when
attnclf.settings is imported; a command whose dataclass lives in its own module (attnclf/commands/) stores its
node there, with `store_defaults`. The values are plain (not the dataclass itself), so that a value of the
wrong type reaches typed() and its one-line error."""

from __future__ import annotations

from dataclasses import asdict

from attnclf.settings.data import DataConfig, Word2VecConfig
from attnclf.settings.lm import LMConfig
from attnclf.settings.model import ModelConfig, OptimizerConfig, RegularizerConfig
from attnclf.settings.run import PathsConfig, RunConfig, TrainRunConfig
from attnclf.settings.serve import ServeConfig

# the group's option (or the command's config) and the dataclass whose defaults it starts from
DEFAULTS = {
    "model": ModelConfig,
    "optimizer": OptimizerConfig,
    "regularizer": RegularizerConfig,
    "data": DataConfig,
    "word2vec": Word2VecConfig,
    "paths": PathsConfig,
    # pretrain.yaml's `lm` node
    "lm": LMConfig,
    # the top-level keys of train.yaml and pretrain.yaml
    "train": TrainRunConfig,
    "pretrain": RunConfig,
    "serve": ServeConfig,
}
GROUP = "attnclf_defaults"


def defaults_of(cls, apart: tuple[str, ...] = ()) -> dict:
    """`cls`'s defaults as plain values, without the keys in `apart` (a command reads those on its own)."""
    return {key: value for key, value in asdict(cls()).items() if key not in apart}


def store_defaults(name: str, node: dict) -> None:
    """`node` as `/attnclf_defaults/<name>` (again: the same node)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group=GROUP, name=name, node=node)


# the data.* keys a command that reads a trained run takes over the run's own record (data.json)
RUN_DATA_KEYS = (
    "path",
    "name",
    "train_file",
    "validation_file",
    "test_file",
    "train_split",
    "test_split",
    "text_column",
    "label_column",
)


def store_run_reader_defaults(name: str, cls) -> None:
    """The node of a command that reads a trained run (eval, faithfulness): `cls`'s defaults, its `split` as
    data.split, and the data.* keys it may be given, each null (the run's own) until given."""
    data = {"split": cls().split, **dict.fromkeys(RUN_DATA_KEYS)}
    store_defaults(name, {**defaults_of(cls, ("split", "data")), "data": data})


def stored_defaults(name: str) -> dict:
    """The node stored as `/attnclf_defaults/<name>`."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    return OmegaConf.to_container(ConfigStore.instance().load(f"{GROUP}/{name}.yaml").node)


def register_defaults() -> None:
    for name, cls in DEFAULTS.items():
        store_defaults(name, defaults_of(cls))
