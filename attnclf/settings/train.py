"""attnclf train's settings: `TrainConfig`, built and checked once by `train_settings(cfg)`, then handed down
whole. Nothing here imports torch or Lightning: a bad value is refused at once."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import DictConfig

from attnclf.settings.data import DataConfig, Word2VecConfig, data_config, word2vec_config
from attnclf.settings.lm import PretrainConfig, pretraining_config
from attnclf.settings.model import INIT_FROM_PRETRAIN, ClassifierConfig, classifier_config
from attnclf.settings.run import PathsConfig, SearchConfig, TrainerConfig, TrainRunConfig, run_paths_trainer


@dataclass
class TrainConfig:
    """train.py's settings: built by train_settings(cfg), handed down whole."""

    run: TrainRunConfig
    paths: PathsConfig
    trainer: TrainerConfig
    data: DataConfig
    classifier: ClassifierConfig
    word2vec: Word2VecConfig
    # model.init_from=pretrain: the settings of the pretraining of this run's data (pretraining_config)
    pretraining: PretrainConfig | None = None
    # pruning, in an Optuna search
    search: SearchConfig = field(default_factory=SearchConfig)


def train_settings(cfg: DictConfig) -> TrainConfig:
    """A composed train.yaml config as typed settings, each checked: one line for the first bad value."""
    run, paths, trainer = run_paths_trainer(cfg, TrainRunConfig)
    data = data_config(cfg.get("data"))
    # attention, model.*, optimizer.*, regularizer.*: typed and their ranges checked (settings/model.py)
    classifier = classifier_config(cfg)
    classifier.model.check_embeddings_file()
    settings = TrainConfig(run, paths, trainer, data, classifier, word2vec_config(cfg, classifier.model))
    settings.search = SearchConfig.of(cfg.get("hparams_search"))
    settings.search.check_set_by_the_sweeper()
    if classifier.model.init_from == INIT_FROM_PRETRAIN:
        settings.pretraining = pretraining_config(cfg, run, classifier.model)
    return settings
