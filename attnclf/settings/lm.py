"""The language models `attnclf pretrain` trains (`lm.*`, conf/pretrain.yaml): their settings and defaults,
in one place; the LightningModule takes them whole (attnclf/training/lm_module.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict

from attnclf.errors import AttnclfError
from attnclf.settings.compose import compose_config
from attnclf.settings.data import DataConfig, Word2VecConfig, word2vec_config
from attnclf.settings.model import ModelConfig, renamed_keys
from attnclf.settings.run import PathsConfig, RunConfig, TrainerConfig, TrainRunConfig, run_paths_trainer
from attnclf.settings.typed import typed
from attnclf.utils.checks import fraction, one_of, positive_int, positive_number

# pretraining's output layer (attnclf/models/language_model.py)
SOFTMAXES = ("adaptive", "sampled")


@dataclass
class LMConfig:
    """The language models `attnclf pretrain` trains (pretrain.yaml's `lm`)."""

    # on the embeddings and on the states before the output layer
    dropout: float = 0.2
    # the output layer: sampled (a full softmax trained on `samples` words a batch: 2.4x the tokens/s of
    # adaptive, and a better start; docs/archive/experiment-log.md), or adaptive (cutoffs)
    softmax: str = "sampled"
    # sampled: words drawn a batch, log-uniformly by frequency rank
    samples: int = 512
    # softmax=adaptive: the 2,000 most frequent words in the head, then two tail clusters
    cutoffs: list[int] = field(default_factory=lambda: [2000, 10000])
    # each tail cluster's projection is this many times smaller than the one before
    div_value: float = 4.0
    lr: float = 2e-3
    weight_decay: float = 0.0
    warmup_ratio: float = 0.02
    # texts held out (seeded) for val/loss and val/ppl
    val_texts: int = 1000
    # read too where the data has it; test never is
    unlabeled_split: str | None = "unsupervised"

    def check(self, vocab_size: int) -> None:
        positive_number("lm.lr", self.lr)
        one_of("lm.softmax", self.softmax, SOFTMAXES)
        positive_int("lm.samples", self.samples)
        if self.softmax == "adaptive":
            self.check_cutoffs(vocab_size)
        fraction("lm.dropout", self.dropout)
        positive_number("lm.div_value", self.div_value)
        fraction("lm.warmup_ratio", self.warmup_ratio)
        if not 0 <= self.weight_decay:
            raise AttnclfError(f"lm.weight_decay={self.weight_decay!r} must be a number >= 0")
        positive_int("lm.val_texts", self.val_texts)

    def check_cutoffs(self, vocab_size: int) -> None:
        if not self.cutoffs or not all(c > 0 for c in self.cutoffs):
            raise AttnclfError(f"lm.cutoffs={self.cutoffs!r}; allowed: a list of positive integers, e.g. [2000,10000]")
        if any(c >= vocab_size - 1 for c in self.cutoffs):
            raise AttnclfError(
                f"lm.cutoffs={list(self.cutoffs)}: each must be below data.vocab_size={vocab_size} less 1 (the words "
                "before the first cutoff are the adaptive softmax's head, the rest its tail clusters)"
            )

    def model_keys(self) -> dict:
        """The settings the module is built and optimised with (its checkpoints' hyperparameters): not which
        texts it reads (val_texts, unlabeled_split: the data's)."""
        return {k: v for k, v in asdict(self).items() if k not in ("val_texts", "unlabeled_split")}


# what the pretraining of model.init_from=pretrain takes from the run itself, never from `pretraining`
RUNS_OWN = ("data", "model.embed_dim", "model.hidden_dim", "num_threads", "paths", "ckpt_path", "hydra")


def pretraining_keys() -> list[str]:
    """The groups and top-level keys of conf/pretrain.yaml that a run's `pretraining` may set (not its own)."""
    pcfg = compose_config("pretrain", [])
    return sorted(f"{k}.*" if isinstance(pcfg.get(k), DictConfig) else k for k in pcfg if k not in RUNS_OWN)


def pretraining_config(cfg: DictConfig, run: TrainRunConfig, model: ModelConfig) -> PretrainConfig:
    """model.init_from=pretrain: conf/pretrain.yaml with `pretraining`'s overrides, as `attnclf pretrain
    <them>` composes it, but with the run's data, embedding and GRU sizes, threads and cache folder: its
    settings, typed and checked whole (pretrain_settings) before any data work, then used as they are. Its
    folder (paths.output_dir) and, for carved test rows, its seed are set where the texts are known
    (attnclf/training/init_from.py)."""
    for item in run.pretraining:
        key = item.split("=", 1)[0].lstrip("+~")
        if "=" not in item:
            raise AttnclfError(
                f"pretraining: {item!r} is not key=value (attnclf pretrain's settings, e.g. trainer.max_epochs=2)"
            )
        if any(key == own or key.startswith(own + ".") for own in RUNS_OWN):
            raise AttnclfError(
                f"pretraining: {item!r} is the run's own (the pretraining reads this run's data, model sizes, "
                "threads and cache folder); set it on the run"
            )
    try:
        pcfg = compose_config("pretrain", list(run.pretraining))
    except HydraException as e:
        raise AttnclfError(
            f"pretraining={list(run.pretraining)}: {str(e).splitlines()[0]}; the settings it takes: "
            f"{', '.join(pretraining_keys())} (attnclf pretrain --help)"
        ) from None
    folder = str(Path(cfg.paths.cache_dir) / "pretrain")
    with open_dict(pcfg):
        pcfg.data = OmegaConf.to_container(cfg.data, resolve=True)
        pcfg.model.embed_dim, pcfg.model.hidden_dim = model.embed_dim, model.hidden_dim
        pcfg.num_threads = run.num_threads
        pcfg.ckpt_path = None
        pcfg.paths.cache_dir = cfg.paths.cache_dir
        pcfg.paths.output_dir = pcfg.paths.runs_dir = folder
    try:
        return pretrain_settings(pcfg)
    except AttnclfError as e:
        raise AttnclfError(f"pretraining: {e}") from None


@dataclass
class PretrainConfig:
    run: RunConfig
    paths: PathsConfig
    trainer: TrainerConfig
    data: DataConfig
    # its embed_dim and hidden_dim: the classifier's to be; embeddings: the LMs' start
    model: ModelConfig
    lm: LMConfig
    # model.embeddings=word2vec: the vectors the LMs' embedding starts from
    word2vec: Word2VecConfig
    # pretrain.yaml as composed: the Trainer, its callbacks and loggers are instantiated from its groups
    composed: DictConfig | None = field(default=None, repr=False)


def pretrain_settings(cfg: DictConfig) -> PretrainConfig:
    run, paths, trainer = run_paths_trainer(cfg, RunConfig)
    model = typed(ModelConfig, renamed_keys(cfg.get("model"))[0], "model")
    for key in ("embed_dim", "hidden_dim"):
        positive_int(f"model.{key}", getattr(model, key))
    if model.num_layers != 1:
        raise AttnclfError(f"model.num_layers={model.num_layers!r}; pretraining has one layer per direction: 1")
    model.check_embeddings_file()
    if model.freeze_embeddings and model.embeddings == "random":
        raise AttnclfError(
            "model.freeze_embeddings=true with model.embeddings=random would keep a random embedding; "
            "allowed: model.embeddings=word2vec or a vectors file"
        )
    lm = typed(LMConfig, cfg.get("lm"), "lm")
    data = typed(DataConfig, cfg.get("data"), "data")
    lm.check(data.vocab_size)
    data.check()
    return PretrainConfig(run, paths, trainer, data, model, lm, word2vec_config(cfg, model), composed=cfg)
