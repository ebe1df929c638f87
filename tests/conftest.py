"""The fixtures the tests share: tiny data written to disk once a session, and tiny runs trained on it. The
helpers they are made with are in tests/helpers/."""

from __future__ import annotations

import os
from pathlib import Path

# pytest runs the tests on two workers (pyproject: -n 2), the machine's two cores: one torch thread each,
# set before torch is imported so that the processes a test starts take it too. Two threads a worker ran
# the tests 2x slower than one worker (4 threads on 2 cores), one thread a worker 1.25x faster.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"

import pytest  # noqa: E402
from helpers.config import train_tiny  # noqa: E402
from helpers.data import write_tiny_imdb, write_with_unlabeled  # noqa: E402


@pytest.fixture(scope="session")
def tiny_imdb(tmp_path_factory) -> Path:
    """A folder laid out like stanfordnlp/imdb (train and test parquet files) that load_dataset reads."""
    return write_tiny_imdb(tmp_path_factory.mktemp("tiny_imdb"))


@pytest.fixture(scope="session")
def with_unlabeled(tmp_path_factory) -> Path:
    """train / test / unsupervised, laid out like the Hub's files; one word only in test, one only unlabeled."""
    return write_with_unlabeled(tmp_path_factory.mktemp("imdb_unlabeled"))


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
