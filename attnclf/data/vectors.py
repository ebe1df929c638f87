"""Word vectors for the embedding layer: trained with gensim's word2vec on the training and unlabeled
texts (never the test split), or read from a vectors file.

Trained vectors are cached under `<cache_dir>/word2vec/`, keyed by the texts' `datasets` fingerprints,
the tokenizer version and the word2vec settings: every run and seed on the same data shares one
training. The cache file is in word2vec's binary format, so it also works as `model.embeddings=<path>`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path

import numpy as np
from filelock import FileLock

from attnclf.data.encoding import Encoded
from attnclf.data.text import TOKENIZER_VERSION, Vocab
from attnclf.errors import AttnclfError
from attnclf.models.names import PAD_ID
from attnclf.settings.data import Word2VecConfig
from attnclf.settings.model import ModelConfig
from attnclf.utils.files import write_atomic
from attnclf.utils.progress import stage

log = logging.getLogger(__name__)


# word2vec.epochs=auto: as many passes as reading AUTO_WORDS words takes, AUTO_EPOCHS[0] at the least (IMDb's
# 25,000 reviews, 5.9 million words: 5) and AUTO_EPOCHS[1] at the most. Vectors from a few thousand short texts
# need many passes: on MR (182,000 words a pass) 30 instead of 5 gained 3 points of 10-fold CV accuracy, and
# 100 lost 0.7 of them again (docs/results.md, "Beyond IMDb")
AUTO_WORDS = 25_000_000
AUTO_EPOCHS = (5, 30)


def passes_to_read_auto_words(words: int) -> int:
    """How many passes over texts of `words` words read AUTO_WORDS words."""
    return -(-AUTO_WORDS // max(words, 1))


def auto_epochs(words: int) -> int:
    """The passes word2vec.epochs=auto chooses for texts of `words` words."""
    low, high = AUTO_EPOCHS
    return min(high, max(low, passes_to_read_auto_words(words)))


# tokenised splits and the rows of each to read
Texts = list[tuple[Encoded, np.ndarray]]


class Sentences:
    """The texts' rows as lists of tokens, re-iterable (word2vec reads them once for its vocabulary, then
    once per epoch)."""

    def __init__(self, texts: Texts):
        self.texts = texts

    def __iter__(self):
        for enc, rows in self.texts:
            table = np.asarray(enc.table, dtype=object)
            for r in rows:
                a, b = enc.offsets[r], enc.offsets[r + 1]
                if b > a:
                    yield table[enc.ids[a:b]].tolist()


def train_word2vec(texts: Texts, dim: int, settings: dict, quiet: bool = False):
    """gensim KeyedVectors of `dim` dimensions trained on the texts. One worker gives the same vectors from
    the same texts and seed every time; more are faster but vary with thread timing. On a terminal a bar
    counts the epochs (`quiet`: none)."""
    from gensim.models import Word2Vec
    from gensim.models.callbacks import CallbackAny2Vec

    class EpochCounted(CallbackAny2Vec):
        def __init__(self, advance):
            self.advance = advance

        def on_epoch_end(self, model):
            self.advance(1)

    # checked with the settings: Word2VecConfig
    algorithm = settings.get("algorithm", "skipgram")
    epochs = int(settings.get("epochs", AUTO_EPOCHS[0]))
    t = time.perf_counter()
    with stage("word2vec", epochs, "epochs", quiet) as advance:
        model = Word2Vec(
            Sentences(texts),
            vector_size=dim,
            sg=int(algorithm == "skipgram"),
            window=int(settings.get("window", 5)),
            min_count=int(settings.get("min_count", 2)),
            negative=int(settings.get("negative", 5)),
            epochs=epochs,
            workers=int(settings.get("workers") or max(1, min(4, os.cpu_count() or 1))),
            seed=int(settings.get("seed", 0)),
            callbacks=[EpochCounted(advance)],
        )
    log.info("word2vec: %d words x %d dims in %.0f s", len(model.wv), dim, time.perf_counter() - t)
    return model.wv


def cached_word2vec(
    texts: Texts, fingerprints: list[str], dim: int, settings: dict, cache_dir: str | None, quiet: bool = False
):
    """Trained vectors from the cache, or trained now (`quiet`: without a progress display) and cached."""
    from gensim.models import KeyedVectors

    key = hashlib.sha1(
        f"{'|'.join(fingerprints)}|{TOKENIZER_VERSION}|{dim}|{sorted(settings.items())}".encode()
    ).hexdigest()[:16]
    path = Path(cache_dir) / "word2vec" / f"{key}.bin" if cache_dir else None
    if path is None:
        return _train_logged(texts, dim, settings, quiet), None

    def cached():
        """The cached vectors, or None where the file cannot be read (cut short, or not ours): then it goes,
        and they are trained again."""
        try:
            wv = KeyedVectors.load_word2vec_format(str(path), binary=True)
        # gensim raises EOFError, ValueError, UnicodeDecodeError, ...
        except Exception as e:
            log.warning(
                "word-vector cache %s cannot be read (%s: %s); training the vectors again", path, type(e).__name__, e
            )
            path.unlink(missing_ok=True)
            return None
        log.info("word2vec: vectors from the cache %s", path)
        return wv, path

    if path.is_file() and (found := cached()) is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    # runs started together (a parallel sweep) train the vectors once: the others wait for the file
    with FileLock(str(path.with_name(f".{path.name}.lock"))):
        if path.is_file() and (found := cached()) is not None:
            return found
        wv = _train_logged(texts, dim, settings, quiet)
        # whole, or no file
        write_atomic(path, lambda tmp: wv.save_word2vec_format(str(tmp), binary=True))
    log.info("word2vec: cached as %s", path)
    return wv, path


def _train_logged(texts: Texts, dim: int, settings: dict, quiet: bool):
    n = sum(len(rows) for _, rows in texts)
    parts = "the training split's rows (validation rows carved from them included; never test)"
    if len(texts) > 1:
        parts += f" and {sum(len(rows) for _, rows in texts[1:])} unlabeled"
    log.info("word2vec: training %d-dim vectors on %d texts: %d of %s", dim, n, len(texts[0][1]), parts)
    return train_word2vec(texts, dim, settings, quiet)


def read_vectors(path: str, dim: int):
    """KeyedVectors from a vectors file: word2vec's binary (.bin) or text format (.txt, .vec), or GloVe's text."""
    from gensim.models import KeyedVectors

    header = ModelConfig(embed_dim=dim, embeddings=str(path)).check_embeddings_file()
    try:
        wv = KeyedVectors.load_word2vec_format(str(path), binary=Path(path).suffix == ".bin", no_header=not header)
    except (ValueError, UnicodeDecodeError, EOFError) as e:
        ragged = None if Path(path).suffix == ".bin" or isinstance(e, UnicodeDecodeError) else ragged_line(path, header)
        if ragged:
            line, found, expected = ragged
            raise AttnclfError(
                f"model.embeddings={path!r}: line {line} has {found} numbers after its word, the "
                f"vectors {expected}; every line is a word and {expected} numbers"
            ) from e
        raise AttnclfError(f"model.embeddings={path!r} is not a word2vec vectors file: {e}") from e
    return wv


def ragged_line(path: str, header: bool) -> tuple[int, int, int] | None:
    """The first line of a text vectors file whose count of numbers differs from the vectors' size (the
    header's, or the first vector's): (line number, numbers found, numbers expected); None: none does."""
    expected = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if number == 1 and header:
                expected = int(parts[1])
                continue
            if not line.strip():
                continue
            expected = len(parts) - 1 if expected is None else expected
            if len(parts) - 1 != expected:
                return number, len(parts) - 1, expected
    return None


def embedding_matrix(wv, vocab: Vocab, seed: int = 0) -> tuple[np.ndarray, float]:
    """(vocabulary size, dim) rows: each word's vector; words without one get random vectors of the same
    scale; padding is 0. Also the share of the vocabulary (past padding and <unk>) that had a vector."""
    vectors = wv.vectors
    scale = float(vectors.std()) if len(vectors) else 0.1
    rng = np.random.default_rng(seed)
    out = rng.normal(0.0, scale, size=(len(vocab), wv.vector_size)).astype(np.float32)
    found = 0
    for i, word in enumerate(vocab.itos):
        j = wv.key_to_index.get(word)
        if j is not None:
            out[i] = vectors[j]
            found += 1
    out[PAD_ID] = 0.0
    return out, found / max(1, len(vocab) - 2)


def initial_embeddings(
    source: str, datamodule, dim: int, settings: Word2VecConfig, cache_dir: str | None, quiet: bool = False
) -> tuple[np.ndarray, dict]:
    """(the embedding matrix for the datamodule's vocabulary, its summary for metrics.json); `quiet`: no
    progress display while word2vec trains."""
    if source == "word2vec":
        texts, key = datamodule.word_vector_texts(settings.unlabeled_split, settings.max_texts)
        # (which texts they learn from is in the key, by fingerprint and rows)
        train_settings = settings.training()
        words = sum(int((enc.offsets[rows + 1] - enc.offsets[rows]).sum()) for enc, rows in texts)
        if train_settings.get("epochs", "auto") == "auto":
            train_settings["epochs"] = epochs = auto_epochs(words)
            needed = passes_to_read_auto_words(words)
            bound = "" if epochs == needed else f", {epochs} at the {'least' if epochs > needed else 'most'}"
            log.info(
                "word2vec.epochs=auto: %d (%d words a pass: %d million words take %d passes%s)",
                epochs,
                words,
                AUTO_WORDS // 10**6,
                needed,
                bound,
            )
        wv, path = cached_word2vec(texts, key, dim, train_settings, cache_dir, quiet)
        summary = {
            "texts": int(sum(len(rows) for _, rows in texts)),
            "words": words,
            "epochs": train_settings["epochs"],
            "vectors_file": str(path) if path else None,
        }
    else:
        wv = read_vectors(source, dim)
        # (recorded whole: the run's start.json and metrics.json name the file from any folder)
        source = str(Path(source).expanduser().resolve())
        summary = {"vectors_file": source}
    matrix, coverage = embedding_matrix(wv, datamodule.vocab)
    log.info("embeddings from %s: %.1f%% of the vocabulary has a vector", source, 100 * coverage)
    return matrix, {"source": source, "coverage": coverage, **summary}
