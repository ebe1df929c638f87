"""Shared fixtures: a tiny IMDb-like dataset written to disk, and configs composed through Hydra."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

# pytest runs the tests on two workers (pyproject: -n 2), the machine's two cores: one torch thread each,
# set before torch is imported so that the processes a test starts take it too. Two threads a worker ran
# the tests 2x slower than one worker (4 threads on 2 cores), one thread a worker 1.25x faster.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"

import datasets  # noqa: E402
import pytest  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

CONF = str(Path(__file__).resolve().parents[1] / "conf")
ROOT = Path(__file__).resolve().parents[1]

POS = ["great", "wonderful", "superb", "loved", "brilliant", "moving"]
NEG = ["awful", "boring", "terrible", "hated", "dull", "waste"]
FILLER = ["the", "film", "movie", "plot", "actor", "scene", "was", "and", "a", "story", "it", "this"]


def make_reviews(n: int, seed: int) -> dict:
    """Reviews whose label shows in a few sentiment words among filler, plus the awkward cases."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = [rng.choice(FILLER) for _ in range(rng.randint(5, 60))]
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(POS if label else NEG))
        texts.append(" ".join(words) + rng.choice([".", "!", " <br /><br /> The end."]))
        labels.append(label)
    # empty, whitespace-only, a 120k-character review, non-ASCII text, a 1 MB review
    texts[:5] = [
        "",
        "   \n\t ",
        "great " * 20000,
        "Ein großartiger Film! 素晴らしい映画 — très émouvant ❤",
        "awful boring " * 80000,
    ]
    return {"text": texts, "label": labels}


@pytest.fixture(scope="session")
def tiny_imdb(tmp_path_factory) -> Path:
    """A folder laid out like stanfordnlp/imdb (train and test parquet files) that load_dataset reads."""
    root = tmp_path_factory.mktemp("tiny_imdb")
    for split, n, seed in (("train", 240, 0), ("test", 80, 1)):
        datasets.Dataset.from_dict(make_reviews(n, seed)).to_parquet(str(root / f"{split}.parquet"))
    return root


TEST_ONLY, UNLABELED_ONLY = "zzqtestword", "zzqunlabeledword"  # words only in those splits


@pytest.fixture(scope="session")
def with_unlabeled(tmp_path_factory) -> Path:
    """train / test / unsupervised, laid out like the Hub's files; one word only in test, one only unlabeled."""
    root = tmp_path_factory.mktemp("imdb_unlabeled")
    (root / "data").mkdir()
    for split, n, seed in (("train", 160, 0), ("test", 60, 1), ("unsupervised", 80, 2)):
        reviews = make_reviews(n, seed)
        extra = {"test": TEST_ONLY, "unsupervised": UNLABELED_ONLY}.get(split)
        if extra:
            reviews["text"] = [f"{t} {extra} {extra}" for t in reviews["text"]]
        if split == "unsupervised":
            reviews["label"] = [-1] * n
        datasets.Dataset.from_dict(reviews).to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))
    return root


def strict_json(path: Path):
    """A JSON file read as a strict parser (JavaScript's JSON.parse, jq) reads it: NaN or Infinity fails."""

    def refuse(name):
        raise ValueError(f"{path} holds {name}, which is not JSON")

    return json.loads(Path(path).read_text(), parse_constant=refuse)


def tiny_overrides(data_path: Path, out: Path) -> list[str]:
    return [
        f"data.path={data_path}",
        f"paths.output_dir={out}",
        f"paths.cache_dir={out / 'cache'}",
        "data.batch_size=16",
        "data.eval_batch_size=32",
        "data.vocab_size=200",
        "data.max_length=64",
        "data.val_size=0.25",
        "model.embed_dim=16",
        "model.hidden_dim=16",
        "trainer.accelerator=cpu",
        "trainer.enable_model_summary=false",
        "trainer.log_every_n_steps=1",
    ]


def make_datamodule(path: str | None = "stanfordnlp/imdb", seed: int = 42, vocab_path: str | None = None, **data):
    """A TextDataModule of data.* settings given as keywords, checked as train.py checks them."""
    from attnclf.data.datamodule import TextDataModule
    from attnclf.settings.data import data_config

    return TextDataModule(data_config({"path": path, **data}), seed, vocab_path)


def compose_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="train", overrides=overrides)


def train_tiny(tiny_imdb: Path, out: Path, attention: str) -> Path:
    """A finished short training run on the tiny data: its folder (checkpoints/, vocab.json, metrics.json)."""
    from attnclf.commands.train import train

    train(
        compose_cfg(
            [
                f"attention={attention}",
                "experiment=smoke",
                "trainer.max_epochs=3",
                "optimizer.lr=1e-2",
                "logger=none",
                "callbacks.rich_progress_bar=null",
                "callbacks.attention_maps=null",
                *tiny_overrides(tiny_imdb, out),
            ]
        )
    )
    return out


@pytest.fixture(scope="session")
def tiny_run(tiny_imdb, tmp_path_factory) -> Path:
    return train_tiny(tiny_imdb, tmp_path_factory.mktemp("tiny_run"), "dot")


@pytest.fixture(scope="session")
def tiny_run_additive(tiny_imdb, tmp_path_factory) -> Path:
    return train_tiny(tiny_imdb, tmp_path_factory.mktemp("tiny_run_additive"), "additive")


@pytest.fixture
def in_process():
    """For a test that calls an entry point's Hydra main itself: the logging Hydra sets up (console handlers
    on pytest's captured streams, log files in the run folder) taken down again after it."""
    import logging

    loggers = [logging.getLogger(), logging.getLogger("gensim")]
    saved = [(lg, lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    yield
    for logger, handlers, level, propagate in saved:
        for h in logger.handlers:
            if h not in handlers:
                h.close()
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
