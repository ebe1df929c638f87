"""Each command's settings whole, typed and checked once, at its entry point, before any data work:
`train_settings(cfg)` (train.py), `pretrain_settings(cfg)` (pretrain.py), `eval_settings(cfg)`,
`faithfulness_settings(cfg)` and `predict_settings(argv)`. Each check fails in one line naming the value
and what is allowed (AttnclfError)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict

from attnclf.errors import AttnclfError
from attnclf.settings.compose import compose_config
from attnclf.settings.data import DataConfig, Word2VecConfig
from attnclf.settings.lm import LMConfig
from attnclf.settings.model import INIT_FROM_PRETRAIN, ClassifierConfig, ModelConfig, classifier_config
from attnclf.settings.run import PathsConfig, RunConfig, SearchConfig, TrainerConfig, TrainRunConfig
from attnclf.settings.typed import register, typed
from attnclf.utils.checks import number, one_of, positive_int, positive_number, repeated, shown
from attnclf.utils.files import check_writable_file


def data_config(node) -> DataConfig:
    """A data group as a DataConfig, checked."""
    if isinstance(node, DictConfig):
        node = OmegaConf.to_container(node, resolve=True)
    node = dict(node or {})
    if isinstance(node.get("label_map"), dict):  # labels as the data has them, whole numbers or names: as text
        node["label_map"] = {str(k): v for k, v in node["label_map"].items()}
    config = typed(DataConfig, node, "data")
    config.check()
    return config


@dataclass
class TrainSettings:
    """train.py's settings: built by train_settings(cfg), handed down whole."""

    run: TrainRunConfig
    paths: PathsConfig
    trainer: TrainerConfig
    data: DataConfig
    classifier: ClassifierConfig
    word2vec: Word2VecConfig
    # model.init_from=pretrain: the settings of the pretraining of this run's data (pretraining_config)
    pretraining: PretrainSettings | None = None
    search: SearchConfig = field(default_factory=SearchConfig)  # pruning, in an Optuna search


def run_paths_trainer(cfg: DictConfig, run_config: type[RunConfig]) -> tuple:
    """(the top-level values as `run_config`, PathsConfig, TrainerConfig) of a command that trains, each checked."""
    run = run_config.of(cfg)
    run.check()
    paths = typed(PathsConfig, cfg.get("paths"), "paths")
    paths.check()
    trainer = TrainerConfig.of(cfg.get("trainer"))
    trainer.check()
    return run, paths, trainer


def train_settings(cfg: DictConfig) -> TrainSettings:
    """A composed train.yaml config as typed settings, each checked: one line for the first bad value."""
    run, paths, trainer = run_paths_trainer(cfg, TrainRunConfig)
    data = data_config(cfg.get("data"))
    # attention, model.*, optimizer.*, regularizer.*: typed and their ranges checked (settings/model.py)
    classifier = classifier_config(cfg)
    classifier.model.check_embeddings_file()
    settings = TrainSettings(run, paths, trainer, data, classifier, word2vec_config(cfg, classifier.model))
    settings.search = SearchConfig.of(cfg.get("hparams_search"))
    settings.search.check_set_by_the_sweeper()
    if classifier.model.init_from == INIT_FROM_PRETRAIN:
        settings.pretraining = pretraining_config(cfg, run, classifier.model)
    return settings


def word2vec_config(cfg: DictConfig, model: ModelConfig) -> Word2VecConfig:
    """The word2vec group as a Word2VecConfig, checked where model.embeddings=word2vec uses it."""
    word2vec = typed(Word2VecConfig, cfg.get("word2vec"), "word2vec")
    if model.embeddings == "word2vec":
        word2vec.check()
    return word2vec


# what the pretraining of model.init_from=pretrain takes from the run itself, never from `pretraining`
RUNS_OWN = ("data", "model.embed_dim", "model.hidden_dim", "num_threads", "paths", "ckpt_path", "hydra")


def pretraining_keys() -> list[str]:
    """The groups and top-level keys of conf/pretrain.yaml that a run's `pretraining` may set (not its own)."""
    pcfg = compose_config("pretrain", [])
    return sorted(f"{k}.*" if isinstance(pcfg.get(k), DictConfig) else k for k in pcfg if k not in RUNS_OWN)


def pretraining_config(cfg: DictConfig, run: TrainRunConfig, model: ModelConfig) -> PretrainSettings:
    """model.init_from=pretrain: conf/pretrain.yaml with `pretraining`'s overrides, as `attnclf pretrain
    <them>` composes it, but with the run's data, embedding and GRU sizes, threads and cache folder: its
    settings, typed and checked whole (pretrain_settings) before any data work, then used as they are. Its
    folder (paths.output_dir) and, for carved test rows, its seed are set where the texts are known
    (attnclf/training/init_from.py)."""
    for item in run.pretraining:
        key = item.split("=", 1)[0].lstrip("+~")
        if "=" not in item:
            raise AttnclfError(
                f"pretraining: {item!r} is not key=value (pretrain.py's settings, e.g. trainer.max_epochs=2)"
            )
        if any(key == own or key.startswith(own + ".") for own in RUNS_OWN):
            raise AttnclfError(
                f"pretraining: {item!r} is the run's own (the pretraining reads this run's data, model sizes, "
                "threads and cache folder); set it on the run"
            )
    try:
        pcfg = compose_config("pretrain", list(run.pretraining))
    except HydraException as e:
        raise AttnclfError(f"pretraining={list(run.pretraining)}: {str(e).splitlines()[0]}; the settings it takes: "
                           f"{', '.join(pretraining_keys())} (attnclf pretrain --help)") from None  # fmt: skip
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
class PretrainSettings:
    run: RunConfig
    paths: PathsConfig
    trainer: TrainerConfig
    data: DataConfig
    model: ModelConfig  # its embed_dim and hidden_dim: the classifier's to be; embeddings: the LMs' start
    lm: LMConfig
    word2vec: Word2VecConfig  # model.embeddings=word2vec: the vectors the LMs' embedding starts from
    # pretrain.yaml as composed: the Trainer, its callbacks and loggers are instantiated from its groups
    composed: DictConfig | None = field(default=None, repr=False)


def pretrain_settings(cfg: DictConfig) -> PretrainSettings:
    run, paths, trainer = run_paths_trainer(cfg, RunConfig)
    model = typed(ModelConfig, cfg.get("model"), "model")
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
    return PretrainSettings(run, paths, trainer, data, model, lm, word2vec_config(cfg, model), composed=cfg)


def check_device(device: str) -> None:
    """A device torch knows and this machine has, refused in one line before any checkpoint is read."""
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as e:
        raise AttnclfError(f"device={device!r} is not a device; allowed: cpu, cuda, cuda:N") from e
    if kind == "cuda" and not torch.cuda.is_available():
        raise AttnclfError(f"device={device!r}: no GPU found (CUDA is not available here); use device=cpu")
    if kind not in ("cpu", "cuda", "mps"):
        raise AttnclfError(f"device={device!r}; allowed: cpu, cuda, cuda:N")


def checkpoints_given(ckpt, what: str) -> list[str]:
    """ckpt= as a list of checkpoints or run folders (one, or an ensemble's)."""
    if not ckpt:
        raise AttnclfError(f"give the checkpoint to {what}: ckpt=<path to .ckpt or a run folder>")
    return [str(ckpt)] if isinstance(ckpt, (str, Path)) else [str(c) for c in ckpt]


@dataclass
class EvalConfig:
    """eval.py's settings (conf/eval.yaml). `data`: the data.* keys given, each over the run's own (data.json)."""

    ckpt: Any = None  # a checkpoint or run folder, or a list of them (an ensemble)
    output: str | None = None
    batch_size: int = 256
    device: str = "cpu"
    num_threads: int | None = None  # torch CPU threads, as train.py's; None: PyTorch's default
    split: str = "test"  # (data.split on the command line)
    data: dict = field(default_factory=dict)

    def normalize(self) -> None:
        self.ckpt = checkpoints_given(self.ckpt, "evaluate")

    def check(self) -> None:
        positive_int("batch_size", self.batch_size)
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        check_device(self.device)


def on_a_run(cls, cfg: DictConfig, key: str, **typed_apart):
    """An eval or faithfulness config as `cls`, checked: its top-level values, data.split as `split`, and
    the other data.* keys given (null: the run's own) as `data`, their types checked (checked whole once
    merged with the run's data.json); `typed_apart`: groups already read into their own dataclass."""
    node = OmegaConf.to_container(cfg.get("data") or {}, resolve=True)
    data = {k: v for k, v in node.items() if v is not None}
    split = data.pop("split", "test")
    if not isinstance(split, str):
        raise AttnclfError(f"data.split={split!r} must be a split's name, e.g. data.split=test")
    typed(DataConfig, data, "data")
    apart = ("split", "data", *typed_apart)
    values = {f.name: cfg.get(f.name) for f in fields(cls) if f.name not in apart and f.name in cfg}
    config = typed(cls, {**values, "split": split, "data": data}, key)
    for name, value in typed_apart.items():
        setattr(config, name, value)
    config.normalize()
    config.check()
    return config


def eval_settings(cfg: DictConfig) -> EvalConfig:
    return on_a_run(EvalConfig, cfg, "eval")


RATIONALE_FILES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")


@dataclass
class RationalesConfig:
    """Human rationales to score the importance sources against (faithfulness.py's `rationales.*`): an
    ERASER folder (docs/ and <split>.jsonl) or one file with a text, a label and a marked-spans column."""

    path: str | None = None
    split: str = "test"
    text_column: str = "text"
    label_column: str = "label"
    spans_column: str = "rationale"
    labels: dict | None = None  # the set's label -> the classifier's class name (None: by name)

    def normalize(self) -> None:
        self.labels = {str(k): str(v) for k, v in (self.labels or {}).items()}

    def check(self) -> None:
        """The folder or file is there and of a kind that is read, before any checkpoint or data is."""
        if self.path is None:
            return
        p = Path(self.path).expanduser()
        if not p.exists():
            raise AttnclfError(f"rationales.path={self.path!r} does not exist (an ERASER folder, or a .jsonl/.csv)")
        if p.is_dir():
            if not (p / "docs").is_dir():
                raise AttnclfError(
                    f"rationales.path={self.path!r}: an ERASER folder holds docs/ (one text per file); not found"
                )
            if not (p / f"{self.split}.jsonl").is_file():
                found = sorted(f.stem for f in p.glob("*.jsonl"))
                raise AttnclfError(f"rationales.split={self.split!r}: no {self.split}.jsonl in {p}; allowed: {found}")
        elif p.suffix.lower() not in RATIONALE_FILES:
            raise AttnclfError(
                f"rationales.path={self.path!r}: unknown file type {p.suffix!r}; allowed: an ERASER folder or a "
                f"file {', '.join(RATIONALE_FILES)}"
            )


@dataclass
class FaithfulnessConfig:
    """faithfulness.py's settings (conf/faithfulness.yaml says each)."""

    ckpt: Any = None
    reviews: int = 1000
    max_tokens: int = 256
    min_tokens: int = 1
    seed: int = 0
    ks: Any = field(default_factory=lambda: [1, 3, 5, 0.1])
    permutations: int = 100
    adversarial: float | None = None  # Jain & Wallace's adversarial attention search, with this epsilon
    sources: list[str] = field(default_factory=list)  # Captum's importance sources beside the built-in ones
    batch_tokens: int = 8192
    device: str = "cpu"
    num_threads: int | None = None  # torch CPU threads, as train.py's; None: PyTorch's default
    output: str | None = None
    split: str = "test"
    data: dict = field(default_factory=dict)
    rationales: RationalesConfig = field(default_factory=RationalesConfig)

    def normalize(self) -> None:
        self.ckpt = checkpoints_given(self.ckpt, "examine")[0]
        self.ks = erasure_sizes(self.ks)
        self.rationales.normalize()

    def check(self) -> None:
        self.rationales.check()
        positive_int("reviews", self.reviews)
        if self.max_tokens < 2:
            raise AttnclfError(f"max_tokens={self.max_tokens!r}; allowed: a whole number >= 2")
        if not 1 <= self.min_tokens <= self.max_tokens:
            raise AttnclfError(f"min_tokens={self.min_tokens!r}; allowed: a whole number from 1 to max_tokens "
                               f"({self.max_tokens})")  # fmt: skip
        positive_int("permutations", self.permutations)
        for source in self.sources:
            one_of("sources", source, ATTRIBUTION_SOURCES)
        twice = repeated(self.sources)
        if twice:
            raise AttnclfError(f"sources: {twice[0]} is given twice; give each source once")
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        if self.adversarial is not None and not 0 < self.adversarial < 1:
            raise AttnclfError(f"adversarial={self.adversarial!r}: the output's allowed change (total variation) "
                               "must be in (0, 1), e.g. adversarial=0.01; null: no search")  # fmt: skip
        positive_int("batch_tokens", self.batch_tokens)
        check_device(self.device)


# faithfulness.py's importance sources from Captum (attnclf.analysis.attribution), beside the built-in ones
ATTRIBUTION_SOURCES = ("integrated_gradients", "feature_ablation")


def erasure_sizes(ks) -> list[float]:
    """Erasure sizes: whole numbers >= 1 (tokens) or fractions in (0, 1) of the review's length."""
    if not isinstance(ks, (list, tuple)) or not ks:
        raise AttnclfError(f"ks={ks!r}; give a list of token counts (>= 1) or fractions in (0, 1), e.g. [1,3,5,0.1]")
    for k in ks:
        if not number(k) or not (0 < k < 1 or (k >= 1 and k == int(k))):
            raise AttnclfError(f"ks: {k!r} is out of range; allowed: whole numbers >= 1 or fractions in (0, 1)")
    return [float(k) for k in ks]


def faithfulness_settings(cfg: DictConfig) -> FaithfulnessConfig:
    rationales = typed(RationalesConfig, cfg.get("rationales"), "rationales")
    return on_a_run(FaithfulnessConfig, cfg, "faithfulness", rationales=rationales)


ATTENTION_TESTS = ("diagnostic", "adversarial")


@dataclass
class AttentionTestsConfig:
    """attention_tests.py's settings (conf/attention_tests.yaml says each): Wiegreffe & Pinter's tests of a run."""

    ckpt: Any = None
    test: str = "diagnostic"
    epochs: int = 8
    batch_size: int = 32
    lr: float = 1e-3
    lambdas: Any = field(default_factory=lambda: [0.001, 0.01, 0.1, 1.0])
    hidden_dim: int = 128
    reviews: int | None = 1000
    train_reviews: int | None = 2000
    seed: int = 0
    num_threads: int | None = None
    output: str | None = None
    cache_dir: str | None = None

    def normalize(self) -> None:
        self.ckpt = checkpoints_given(self.ckpt, "test")[0]
        lambdas = self.lambdas if isinstance(self.lambdas, (list, tuple)) else [self.lambdas]
        self.lambdas = [float(x) if number(x) else x for x in lambdas]

    def check(self) -> None:
        one_of("test", self.test, ATTENTION_TESTS)
        for key in ("epochs", "batch_size", "hidden_dim"):
            positive_int(key, getattr(self, key))
        for key in ("reviews", "train_reviews"):
            positive_int(key, getattr(self, key), "all")
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        positive_number("lr", self.lr)
        if not self.lambdas:
            raise AttnclfError("lambdas=[]: give at least one weight, e.g. lambdas=[0.001,0.01,0.1]")
        for lam in self.lambdas:
            if not number(lam) or not 0 <= lam < float("inf"):
                raise AttnclfError(f"lambdas: {shown(lam)}; allowed: numbers >= 0 (the weight of the attention's "
                                   "divergence from the base's), e.g. lambdas=[0.001,0.01,0.1]")  # fmt: skip


def attention_tests_settings(cfg: DictConfig) -> AttentionTestsConfig:
    values = {f.name: cfg.get(f.name) for f in fields(AttentionTestsConfig) if f.name in cfg}
    values = {k: OmegaConf.to_container(v) if OmegaConf.is_config(v) else v for k, v in values.items()}
    config = typed(AttentionTestsConfig, values, "")
    config.normalize()
    config.check()
    return config


PREDICT_INPUTS = (".txt", ".csv", ".jsonl", ".parquet")
PREDICT_OUTPUTS = (".csv", ".jsonl")


@dataclass
class PredictConfig:
    """predict.py's key=value arguments (taken literally: a review may hold any character)."""

    ckpt: str | None = None
    text: str | None = None
    input: str | None = None
    output: str | None = None
    html: str | None = None
    batch_size: int = 64
    top_k: int = 5
    device: str = "cpu"
    column: str = "text"
    label_column: str = "label"  # the true label's column of input=, shown on the html= page where present
    num_threads: int | None = None  # torch CPU threads, as train.py's; None: PyTorch's default

    def check(self) -> None:
        if self.ckpt is None:
            raise AttnclfError("give the checkpoint: ckpt=<path to .ckpt>")
        if (self.text is None) == (self.input is None):
            raise AttnclfError('give exactly one of text="a review" or input=<file>')
        if self.text is not None and not self.text.strip():
            raise AttnclfError('text= is empty; give a review: text="a wonderful film"')
        if self.input is not None and Path(self.input).is_dir():
            raise AttnclfError(f"input={self.input} is a folder; give a file ({', '.join(PREDICT_INPUTS)})")
        if self.output is not None:  # the files to write are checked before any work, not after it
            if Path(self.output).is_dir():
                raise AttnclfError(f"output={self.output} is a folder; give a file ({', '.join(PREDICT_OUTPUTS)})")
            suffix = Path(self.output).suffix.lower()
            if suffix not in PREDICT_OUTPUTS:
                raise AttnclfError(
                    f"output={self.output}: unknown file type {suffix!r}; allowed: {', '.join(PREDICT_OUTPUTS)}"
                )
            check_writable_file("output", self.output)
        if self.html is not None:
            check_writable_file("html", self.html)
        check_device(self.device)


def predict_settings(argv: list[str]) -> PredictConfig:
    """predict.py's arguments, key=value each, as a checked PredictConfig. The one command not read through
    Hydra and typed(): a review is taken as written, and Hydra's override grammar refuses quotes and brackets
    ("it's great (really)") while OmegaConf would resolve "${...}" in it. The numbers are checked here instead,
    as they were given."""
    keys = [f.name for f in fields(PredictConfig)]
    args: dict = {}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq or key not in keys:
            raise AttnclfError(f"unknown argument {a!r}; give key=value with key one of: {', '.join(sorted(keys))}")
        at = next((i for i, ch in enumerate(value) if "\udc80" <= ch <= "\udcff"), None)
        if at is not None:  # (sys.argv holds bytes that are not UTF-8 as surrogate escapes)
            raise AttnclfError(f"{key}= holds bytes that are not UTF-8 (at character {at + 1}); give UTF-8 text")
        args[key] = value
    for key in ("batch_size", "top_k", "num_threads"):
        if key in args:
            if not args[key].isdigit() or int(args[key]) <= 0:
                raise AttnclfError(f"{key}={args[key]!r} must be a positive integer")
            args[key] = int(args[key])
    config = PredictConfig(**args)
    config.check()
    return config


register(eval=EvalConfig, faithfulness=FaithfulnessConfig)
