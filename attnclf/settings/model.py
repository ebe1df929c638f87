"""The classifier's settings as typed objects, handed down whole: `ClassifierConfig` (attention, model,
optimizer, regularizer) is what the LightningModule receives and saves in its checkpoint, nested, and
what a resumed run compares with it.

The config groups `model`, `optimizer` and `regularizer` (conf/) are read into these dataclasses:
OmegaConf checks each value's type, and each dataclass's `check()` holds the ranges of its values, in
one place. Both fail in one line naming the value (AttnclfError).

Checkpoints written before these objects held the same settings flat (`lr`, `regularizer_epsilon`, ...);
attnclf/training/checkpoint.py reads every form written as today's.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.models.names import (
    NORMALIZERS,
    QUERIES,
    check_hidden_states,
    check_rnn,
    check_rnn_kernel,
)
from attnclf.settings.attention import DEFAULT_ATTENTION, AttentionConfig
from attnclf.settings.typed import typed
from attnclf.utils.checks import fraction, number, one_of, positive_int, positive_number, shown

SCHEDULES = ("cosine", "constant")
REGULARIZERS = ("none", "adversarial", "virtual_adversarial")
# or a path to a vectors file
EMBEDDINGS = ("random", "word2vec")
# model.init_from=pretrain: the pretraining of the run's own data, made once and cached (`pretraining`: its settings)
INIT_FROM_PRETRAIN = "pretrain"
# a classifier checkpoint's hyper_parameters["kind"] (language models: theirs)
CLASSIFIER = "classifier"

log = logging.getLogger(__name__)


@dataclass
class ModelConfig:
    """embedding -> BiRNN (GRU or LSTM) -> attention pooling -> dropout -> linear (conf/model/bigru.yaml, which
    takes these defaults and writes only what differs)."""

    embed_dim: int = 128
    # per direction: the encoder outputs 2 * hidden_dim
    hidden_dim: int = 128
    num_layers: int = 1
    # before the classifier (and between the encoder's layers)
    dropout: float = 0.4
    embed_dropout: float = 0.2
    # the attention's inner size, each mechanism's own default where None (docs/configuration.md): dot the
    # size of the q/k projections (None: 2 * hidden_dim); additive its tanh layer (None: the mean of the
    # query's and keys' sizes). With query=learned, None is Jain & Wallace's forms: dot without projections,
    # additive's tanh layer hidden_dim
    attention_dim: int | None = None
    # the attention's query: final (the encoder's final states, per review) or learned (one vector for every
    # review, as Jain & Wallace pool)
    query: str = "final"
    # the recurrent cell: gru, or lstm (Jain & Wallace's encoder); every rnn_kernel computes either
    rnn: str = "gru"
    # how the encoder is computed, not what it computes (a resumed run may change it): auto (CPU: concurrent
    # with 2+ threads and batches of 100+ tokens, else padded; CUDA: packed), concurrent (both directions at
    # once on two threads), padded (PyTorch's GRU or LSTM, one direction after the other), packed (PyTorch's
    # on packed input)
    rnn_kernel: str = "auto"
    # plain; orthogonal (each state made orthogonal to the mean of the earlier ones, stepped by hand: slower)
    # or diversity (the states' conicity penalised in the loss): Mohankumar et al. (2020)'s remedies
    hidden_states: str = "plain"
    # hidden_states=diversity: the conicity penalty's weight in the loss (theirs)
    diversity_weight: float = 0.5
    # softmax, sparsemax or entmax15 (sparse: some tokens weigh exactly 0; the entmax package)
    attention_normalizer: str = "softmax"
    # the initial embedding: word2vec (trained here, once, on the training texts, never test; settings:
    # word2vec.*), random, or a vectors file (word2vec .bin or text .txt/.vec, GloVe .txt) of embed_dim dims
    embeddings: str = "word2vec"
    # keep the embedding as initialised
    freeze_embeddings: bool = False
    # a pretrain run's checkpoint or folder, latest, or pretrain (made of this run's data with the settings
    # `pretraining`, once, cached): the encoder (num_layers 1) and the embedding start from its language models
    init_from: str | None = None

    def check(self) -> None:
        for key in ("embed_dim", "hidden_dim", "num_layers"):
            positive_int(f"model.{key}", getattr(self, key))
        positive_int("model.attention_dim", self.attention_dim, "the default size")
        fraction("model.dropout", self.dropout)
        fraction("model.embed_dropout", self.embed_dropout)
        one_of("model.query", self.query, QUERIES)
        check_rnn_kernel(self.rnn_kernel)
        check_rnn(self.rnn)
        check_hidden_states(self.hidden_states, self.rnn_kernel)
        one_of("model.attention_normalizer", self.attention_normalizer, NORMALIZERS)
        if not (number(self.diversity_weight) and 0 <= self.diversity_weight < math.inf):
            raise AttnclfError(f"model.diversity_weight={self.diversity_weight!r} must be a number >= 0")
        # the language models are GRUs
        if self.init_from and self.rnn != "gru":
            raise AttnclfError(f"model.init_from needs model.rnn=gru (the language models are GRUs), got {self.rnn}")
        # a run given by name, latest, or pretrain
        if self.init_from and self.num_layers != 1:
            raise AttnclfError(
                f"model.init_from needs model.num_layers=1 (the language models have one layer), got {self.num_layers}"
            )

    def check_embeddings_file(self) -> bool:
        """model.embeddings is random, word2vec, or a vectors file of embed_dim dims: word2vec's binary (.bin) or
        text format, whose first line is `<words> <dims>`, or GloVe's text format, without that line (each line
        a word and its numbers). Only the first line is read, so a large file is checked at once and read in
        full once, when it is used. True where the file has the `<words> <dims>` line. (Not part of check(): a
        checkpoint records the file it started from, which need not be there where the checkpoint is used.)"""
        path = self.embeddings
        if path in EMBEDDINGS:
            return True
        p = Path(path)
        if p.is_dir():
            raise AttnclfError(
                f"model.embeddings={path!r} is a folder; allowed: {', '.join(EMBEDDINGS)} or a vectors file"
            )
        if not p.is_file():
            raise AttnclfError(
                f"model.embeddings={path!r}: no such file; allowed: {', '.join(EMBEDDINGS)} or a vectors file"
            )
        with open(p, "rb") as f:
            # a GloVe line of 300 dims is about 3 KB
            first = f.readline(1 << 20).split()
        header = len(first) == 2 and all(x.isdigit() for x in first)
        if header:
            found = int(first[1])
        elif p.suffix != ".bin" and len(first) > 2 and all(_is_number(x) for x in first[1:]):
            # GloVe: a word, then its vector
            found = len(first) - 1
        else:
            raise AttnclfError(
                f"model.embeddings={path!r} is not a vectors file: its first line is neither '<words> <dims>' "
                "(word2vec .bin or text) nor a word and its numbers (GloVe text)"
            )
        if found != self.embed_dim:
            raise AttnclfError(
                f"model.embeddings={path!r} has {found}-dim vectors, model.embed_dim={self.embed_dim}; "
                f"set model.embed_dim={found}"
            )
        return header


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


CLASS_WEIGHTS = ("none", "balanced")


@dataclass
class OptimizerConfig:
    """AdamW with linear warm-up, then cosine decay (conf/optimizer/adamw.yaml, which takes these defaults)."""

    lr: float = 2e-3
    weight_decay: float = 0.01
    # cosine (after linear warm-up) or constant
    schedule: str = "cosine"
    warmup_ratio: float = 0.05
    # a pretrained start (model.init_from): the embedding's and encoder's rate as a share of lr
    # (discriminative rates), and the epochs they stay frozen while the attention and the output layer learn
    encoder_lr_scale: float = 1.0
    freeze_encoder_epochs: int = 0
    # the cross-entropy's weight per class: none, or balanced (n / (classes x the class's training rows),
    # so that a rare class weighs as much in the loss as a common one)
    class_weights: str = "none"

    def check(self) -> None:
        positive_number("optimizer.lr", self.lr)
        one_of("optimizer.class_weights", self.class_weights, CLASS_WEIGHTS)
        if not 0 < self.encoder_lr_scale <= 1:
            raise AttnclfError(f"optimizer.encoder_lr_scale={shown(self.encoder_lr_scale)} must be in (0, 1]")
        if self.freeze_encoder_epochs < 0:
            raise AttnclfError(
                f"optimizer.freeze_encoder_epochs={self.freeze_encoder_epochs!r} must be a whole number >= 0"
            )
        if not 0 <= self.weight_decay < math.inf:
            raise AttnclfError(f"optimizer.weight_decay={shown(self.weight_decay)} must be a number >= 0")
        one_of("optimizer.schedule", self.schedule, SCHEDULES)
        fraction("optimizer.warmup_ratio", self.warmup_ratio)


@dataclass
class RegularizerConfig:
    """What perturbs the embedded review while the classifier trains (conf/regularizer/)."""

    name: str = "none"
    # the step's norm, relative to the norm of the review's embeddings
    epsilon: float = 0.02
    # of the regulariser's loss, added to the cross-entropy
    weight: float = 1.0
    # virtual_adversarial: the power iteration's probe, relative likewise
    xi: float = 1e-3
    # virtual_adversarial's unlabeled batches: where they come from and how many (data, not the loss)
    unlabeled_split: str | None = "unsupervised"
    unlabeled_batch_size: int = 64

    def check(self) -> None:
        one_of("regularizer", self.name, REGULARIZERS)
        for key in ("epsilon", "xi", "weight"):
            positive_number(f"regularizer.{key}", getattr(self, key))
        if self.name == "virtual_adversarial":
            positive_int("regularizer.unlabeled_batch_size", self.unlabeled_batch_size)


@dataclass
class ClassifierConfig:
    """Everything the classifier's LightningModule is built from but the data's vocabulary and classes."""

    # (or the name of one of the package's mechanisms: its YAML's settings)
    attention: AttentionConfig = field(default_factory=lambda: AttentionConfig.named(DEFAULT_ATTENTION))
    model: ModelConfig = field(default_factory=ModelConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    regularizer: RegularizerConfig = field(default_factory=RegularizerConfig)

    def __post_init__(self):
        if isinstance(self.attention, str):
            self.attention = AttentionConfig.named(self.attention)

    def check(self) -> None:
        self.model.check()
        self.optimizer.check()
        self.regularizer.check()
        # last: the mechanism's keys are its class's, imported with torch (the checks above are at once)
        self.attention.check()
        # built once, on the meta device (no memory, no draw from the seeded generator): a mechanism's own
        # checks of its keys against these sizes (heads that do not divide the size), before any data work
        import torch

        from attnclf.models.classifier import ClassifierNet

        with torch.device("meta"):
            ClassifierNet(2, 2, self.attention, self.model)

    def as_dict(self) -> dict:
        """As a checkpoint saves it: the attention by its name, class and keys, the rest nested."""
        a = self.attention
        rest = {k: v for k, v in asdict(self).items() if k != "attention"}
        return {"attention": a.name, "attention_class": a.target, "attention_keys": dict(a.keys), **rest}


# settings that do not change what a run learns: a resumed run may differ in them
RUNTIME_ONLY = ("model.rnn_kernel", "regularizer.unlabeled_split", "regularizer.unlabeled_batch_size")


def classifier_config(cfg: DictConfig) -> ClassifierConfig:
    """The classifier's settings from a composed train.yaml config, typed and checked (one line where not)."""
    model, moved = renamed_keys(cfg.get("model"))
    attention = AttentionConfig.from_node(cfg.get("attention"))
    attention.keys.update(moved)
    config = ClassifierConfig(
        attention=attention,
        model=typed(ModelConfig, model, "model"),
        optimizer=typed(OptimizerConfig, cfg.get("optimizer"), "optimizer"),
        regularizer=typed(RegularizerConfig, cfg.get("regularizer"), "regularizer"),
    )
    config.check()
    return config


# model keys that were renamed: the old name is still read, with a note (configs of older runs hold it)
RENAMED = {"gru_kernel": "rnn_kernel"}
# model keys that are an attention's own now (dot's scale, additive's init): read as attention.<key>
MOVED_TO_ATTENTION = {"attention_scale": "scale", "attention_init": "init"}


def renamed_keys(model) -> tuple[dict, dict]:
    """The model group with each old key's value under its new name, and the attention's keys given under
    their old model.* names, said in one line each; the old keys stay in conf/model/bigru.yaml as null, so
    that a command line or a config of before may still set them."""
    node = dict(OmegaConf.to_container(model, resolve=True) if isinstance(model, DictConfig) else model or {})
    for old, new in RENAMED.items():
        value = node.pop(old, None)
        if value is not None:
            log.warning("model.%s is now model.%s: read as model.%s=%s", old, new, new, value)
            node[new] = value
    moved = {}
    for old, new in MOVED_TO_ATTENTION.items():
        value = node.pop(old, None)
        if value is not None:
            log.warning("model.%s is now attention.%s: read as attention.%s=%s", old, new, new, value)
            moved[new] = value
    return node, moved


def setting_differences(saved: dict, now: ClassifierConfig) -> dict[str, tuple]:
    """{config key: (the checkpoint's value, this command's)} for each setting a classifier checkpoint's
    hyperparameters (as load_checkpoint gives them: today's form) differ in from `now`, but those that only
    change how it runs."""
    current = now.as_dict()
    differ = {}
    # another mechanism: said by its name (by its class where two share a name); its keys are its own
    if saved["attention_class"] != current["attention_class"]:
        key = "attention" if saved["attention"] != current["attention"] else "attention_class"
        differ[key] = (saved[key], current[key])
    for key in sorted({*saved["attention_keys"], *current["attention_keys"]} if not differ else ()):
        old, new = saved["attention_keys"].get(key), current["attention_keys"].get(key)
        if old != new:
            differ[f"attention.{key}"] = (old, new)
    for section in ("model", "optimizer", "regularizer"):
        for key, value in current[section].items():
            name = f"{section}.{key}"
            old = saved[section][key]
            if name not in RUNTIME_ONLY and old != value:
                differ["regularizer" if name == "regularizer.name" else name] = (old, value)
    return differ
