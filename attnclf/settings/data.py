"""Which data a run reads and how (`data`, conf/data/), and the word vectors learnt from it (`word2vec`).

`DataConfig` is what the DataModule is built from, and what a run folder records of its data (data.json:
`RECORDED`), so that attnclf eval and attnclf faithfulness read the run's own test rows without being told again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.settings.model import ModelConfig
from attnclf.settings.typed import typed
from attnclf.utils.checks import at_least, one_of, positive_int, positive_int_or_auto

TRUNCATIONS = ("head", "tail", "head_tail")


@dataclass
class DataConfig:
    """Any text-classification dataset: a Hub id, a local folder or one file (conf/data/ holds ready choices)."""

    # a Hub id, a local folder in any layout `datasets` reads, or one .csv/.tsv/.json/.jsonl/.parquet/.txt file
    path: str | None = "stanfordnlp/imdb"
    # the dataset's configuration on the Hub (e.g. data.path=glue data.name=sst2)
    name: str | None = None
    # or the splits as files (then path is not read)
    train_file: str | None = None
    validation_file: str | None = None
    test_file: str | None = None
    train_split: str = "train"
    test_split: str = "test"
    # absent: the one of text, sentence, review, content, question there is
    text_column: str = "text"
    # labels: a ClassLabel, whole numbers (remapped to 0..C-1) or strings (sorted)
    label_column: str = "label"
    # {a label as the data has it: the class it becomes}: classes merged, rows of a label not named dropped
    # (SST-5 as binary SST: {0: negative, 1: negative, 3: positive, 4: positive}); null: the labels as they are
    label_map: dict[str, str] | None = None
    # tokens kept per review in training
    max_length: int = 400
    # and in validation, test, eval and predict (at least max_length; null: whole reviews)
    eval_max_length: int | None = 1000
    # head, tail, or head_tail (the first and last max_length/2 tokens)
    truncation: str = "head_tail"
    # or a whole number; auto: halved from the largest of AUTO_BATCH_SIZES while an epoch would be fewer than
    # AUTO_STEPS batches (small data; attnclf/data/datamodule.py)
    batch_size: int | str = "auto"
    eval_batch_size: int = 256
    # including <pad> and <unk>; counted on the training rows only
    vocab_size: int = 30000
    min_freq: int = 2
    # without a validation split: the fraction of train (or a row count) held out; test is never used
    val_size: int | float = 0.1
    # without a test split: the fraction of train (or a row count) carved off, seeded, and said so
    test_size: int | float = 0.1
    # k-fold cross-validation of data without a test split: test on fold `fold` of `folds` (stratified,
    # seeded): attnclf train -m data.folds=10 'data.fold=range(10)'
    folds: int | None = None
    fold: int | None = None
    # None: all training rows; a fraction or a row count trains on a fixed subset
    train_size: int | float | None = None
    # batches sorted by length together before the batch order is shuffled
    bucket_pool: int = 50
    num_workers: int = 0
    # the tokenised-data cache (conf/data/imdb.yaml: paths.cache_dir)
    cache_dir: str | None = None

    def check(self) -> None:
        if not self.path and not self.train_file:
            raise AttnclfError(
                "data.path is required here: give the data's file, folder or Hub id, e.g. data.path=my.csv"
            )
        positive_int_or_auto("data.batch_size", self.batch_size)
        for key in ("max_length", "eval_batch_size", "vocab_size", "min_freq", "bucket_pool"):
            positive_int(f"data.{key}", getattr(self, key))
        positive_int("data.eval_max_length", self.eval_max_length, "whole")
        at_least("data.num_workers", self.num_workers, 0)
        if self.vocab_size < 3:
            raise AttnclfError(f"data.vocab_size={self.vocab_size!r} must be at least 3 (<pad>, <unk> and a word)")
        one_of("data.truncation", self.truncation, TRUNCATIONS)
        self.check_folds()
        if self.text_column == self.label_column:
            raise AttnclfError(
                f"data.label_column={self.label_column!r} is data.text_column too; the labels need a column of "
                "their own"
            )
        if self.label_map is not None and len(set(self.label_map.values())) < 2:
            raise AttnclfError(f"data.label_map={self.label_map!r} must map the labels to at least 2 classes")
        for key in ("val_size", "test_size"):
            size = getattr(self, key)
            if not (0 < size < 1 or (size >= 1 and float(size).is_integer())):
                raise AttnclfError(f"data.{key}={size!r} must be a fraction in (0, 1) or a row count >= 1")
        size = self.train_size
        if size is not None and not (0 < size < 1 if isinstance(size, float) else size >= 1):
            raise AttnclfError(
                f"data.train_size={size!r} must be a share in (0, 1) (a number with a point), a "
                "whole number of rows, or null (all training rows)"
            )

    def check_folds(self) -> None:
        """data.folds (k-fold cross-validation: null, or 2 or more) and data.fold (0..folds-1), in one line."""
        folds, fold = self.folds, self.fold
        if folds is None:
            if fold is not None:
                raise AttnclfError(f"data.fold={fold!r} needs data.folds (how many folds), e.g. data.folds=10")
            return
        if folds < 2:
            raise AttnclfError(f"data.folds={folds!r} must be a whole number >= 2 (or null: no cross-validation)")
        if fold is None or not 0 <= fold < folds:
            raise AttnclfError(
                f"data.fold={fold!r} must be one of 0..{folds - 1} with data.folds={folds} "
                f"(all of them: attnclf train -m data.folds={folds} 'data.fold=range({folds})')"
            )

    def recorded(self) -> dict:
        """What a run folder records of its data (data.json): what decides which rows it read and how; a
        local path as an absolute one (as_recorded)."""
        return {k: as_recorded(v) if k in PATH_KEYS else v for k, v in asdict(self).items() if k in RECORDED}


# the data keys that may name a local file or folder
PATH_KEYS = ("path", "train_file", "validation_file", "test_file")


def as_recorded(value):
    """A data path as a run records it: absolute where it names a local file or folder, so that the run is
    evaluated from any folder; a Hub id, or a path not found here, as given."""
    if isinstance(value, str) and value and Path(value).expanduser().exists():
        return str(Path(value).expanduser().resolve())
    return value


# how a run reads its data, not which data it reads: neither recorded nor taken from a run's record
RUNTIME_ONLY = ("batch_size", "eval_batch_size", "bucket_pool", "num_workers", "cache_dir")
RECORDED = tuple(f.name for f in fields(DataConfig) if f.name not in RUNTIME_ONLY)

ALGORITHMS = ("skipgram", "cbow")


@dataclass
class Word2VecConfig:
    """gensim word2vec vectors for model.embeddings=word2vec, trained once per data and settings and cached."""

    # or skipgram (cbow: 175 s on IMDb's 75,000 texts here, docs/archive/experiment-log.md, "Using IMDb's
    # 50,000 unlabeled reviews")
    algorithm: str = "cbow"
    window: int = 5
    min_count: int = 2
    negative: int = 5
    # or a whole number; auto: passes enough to read 25 million words, 5 to 30 (IMDb: 5; 10,000 short texts: 30)
    epochs: int | str = field(default="auto", metadata={"wanted": "a positive integer or auto"})
    seed: int = 0
    # gensim threads: 1 gives the same vectors every time; null: up to 4, faster, not repeatable
    workers: int | None = field(default=1, metadata={"wanted": "a positive integer or null (up to 4 threads)"})
    # also read this split where the data has it (experiment=pretrained: IMDb's 50,000 unlabeled reviews); test
    # never is
    unlabeled_split: str | None = None
    # learn from at most this many texts (a seeded subset, training rows first); null: all (experiment=smoke: 2000)
    max_texts: int | None = None

    def check(self) -> None:
        one_of("word2vec.algorithm", self.algorithm, ALGORITHMS)
        for key in ("window", "min_count", "negative"):
            positive_int(f"word2vec.{key}", getattr(self, key))
        positive_int_or_auto("word2vec.epochs", self.epochs)
        positive_int("word2vec.workers", self.workers, "up to 4 threads")
        positive_int("word2vec.max_texts", self.max_texts, "all of them")

    def training(self) -> dict:
        """The settings gensim trains with (the cache key's part for them): which texts it reads is the data's."""
        return {k: v for k, v in asdict(self).items() if k not in ("unlabeled_split", "max_texts")}


def data_config(node) -> DataConfig:
    """A data group as a DataConfig, checked."""
    if isinstance(node, DictConfig):
        node = OmegaConf.to_container(node, resolve=True)
    node = dict(node or {})
    # labels as the data has them, whole numbers or names: as text
    if isinstance(node.get("label_map"), dict):
        node["label_map"] = {str(k): v for k, v in node["label_map"].items()}
    config = typed(DataConfig, node, "data")
    config.check()
    return config


def word2vec_config(cfg: DictConfig, model: ModelConfig) -> Word2VecConfig:
    """The word2vec group as a Word2VecConfig, checked where model.embeddings=word2vec uses it."""
    word2vec = typed(Word2VecConfig, cfg.get("word2vec"), "word2vec")
    if model.embeddings == "word2vec":
        word2vec.check()
    return word2vec


RATIONALE_FILES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")


@dataclass
class RationalesConfig:
    """Human rationales to score the importance sources against (attnclf faithfulness's `rationales.*`): an
    ERASER folder (docs/ and <split>.jsonl) or one file with a text, a label and a marked-spans column."""

    # an ERASER folder (docs/ + train/val/test.jsonl), or a .jsonl/.csv file of marked spans
    path: str | None = None
    # an ERASER folder's annotation file: train, val or test
    split: str = "test"
    # a file's columns: the text, its label, and its marked spans (a list of [start, end] character offsets,
    # end exclusive)
    text_column: str = "text"
    label_column: str = "label"
    spans_column: str = "rationale"
    # the set's labels as the classifier's classes, e.g. {NEG: neg, POS: pos} (None: by name)
    labels: dict | None = None

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
