"""Tiny data for tests: reviews whose label shows in a few sentiment words, written laid out as the Hub's
IMDb is, and a DataModule built from data.* settings."""

from __future__ import annotations

import random
from pathlib import Path

import datasets

from attnclf.settings.run import DEFAULT_SEED

POS = ["great", "wonderful", "superb", "loved", "brilliant", "moving"]
NEG = ["awful", "boring", "terrible", "hated", "dull", "waste"]
FILLER = ["the", "film", "movie", "plot", "actor", "scene", "was", "and", "a", "story", "it", "this"]
TEST_ONLY, UNLABELED_ONLY = "zzqtestword", "zzqunlabeledword"  # words only in those splits


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


def write_tiny_imdb(root: Path) -> Path:
    """A folder laid out like stanfordnlp/imdb (train and test parquet files) that load_dataset reads."""
    for split, n, seed in (("train", 240, 0), ("test", 80, 1)):
        datasets.Dataset.from_dict(make_reviews(n, seed)).to_parquet(str(root / f"{split}.parquet"))
    return root


def write_with_unlabeled(root: Path) -> Path:
    """train / test / unsupervised, laid out like the Hub's files; one word only in test, one only unlabeled."""
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


def make_datamodule(
    path: str | None = "stanfordnlp/imdb", seed: int = DEFAULT_SEED, vocab_path: str | None = None, **data
):
    """A TextDataModule of data.* settings given as keywords, checked as train.py checks them."""
    from attnclf.data.datamodule import TextDataModule
    from attnclf.settings.data import data_config

    return TextDataModule(data_config({"path": path, **data}), seed, vocab_path)
