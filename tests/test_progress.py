"""Progress displays of the long stages outside training (word2vec, eval): a bar with counts and the time
left on a terminal, nothing where the output is a file or a pipe, or where the command asked for quiet."""

import io
import re

import numpy as np
import pytest
import pytorch_lightning as L
from helpers.config import compose_cfg
from rich.console import Console

from attnclf.commands.eval import evaluate
from attnclf.data.encoding import encode_texts
from attnclf.data.vectors import train_word2vec
from attnclf.training.trainer import quiet
from attnclf.utils import progress


@pytest.fixture
def terminal(monkeypatch):
    """The displays' console as a terminal writing into a buffer; the buffer."""
    screen = io.StringIO()
    monkeypatch.setattr(progress, "console", lambda: Console(file=screen, force_terminal=True, width=120))
    return screen


def plain(screen: io.StringIO) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())  # (the terminal's control codes gone)


def test_a_stage_shows_its_counts_and_the_time_left_on_a_terminal_only(terminal, monkeypatch):
    with progress.stage("eval test", 40, "reviews") as advance:
        for _ in range(4):
            advance(10)
    shown = plain(terminal)
    assert "eval test" in shown and "40/40 reviews" in shown and "left" in shown
    with progress.stage("eval test", 40, "reviews", quiet=True) as advance:  # asked for quiet: nothing
        advance(40)
    assert plain(terminal) == shown
    file = io.StringIO()  # a file or a pipe: nothing
    monkeypatch.setattr(progress, "console", lambda: Console(file=file))
    with progress.stage("eval test", 40, "reviews") as advance:
        advance(40)
    assert file.getvalue() == ""


def test_word2vec_counts_its_epochs_on_the_display(terminal):
    texts = [" ".join(t) for t in [["good", "film", "great"], ["bad", "film", "awful"]] * 20]
    rows = [(encode_texts(texts, [0, 1] * 20), np.arange(len(texts)))]  # (an encoded split and its rows)
    settings = {"epochs": 3, "min_count": 1, "workers": 1}
    train_word2vec(rows, 8, settings, quiet=False)
    assert "word2vec" in plain(terminal) and "3/3 epochs" in plain(terminal)
    before = plain(terminal)
    train_word2vec(rows, 8, settings, quiet=True)
    assert plain(terminal) == before


def test_eval_shows_the_reviews_it_has_read(tiny_run, tmp_path, terminal):
    result = evaluate(compose_cfg(config_name="eval", overrides=[f"ckpt={tiny_run}", f"output={tmp_path / 'e.json'}"]))
    assert f"{result['reviews']}/{result['reviews']} reviews" in plain(terminal) and "eval test" in plain(terminal)


@pytest.mark.parametrize("logger,bar,is_quiet", [(True, True, False), (False, True, True), (True, False, True)])
def test_a_run_without_a_logger_or_a_progress_bar_is_quiet(logger, bar, is_quiet, tmp_path):
    trainer = L.Trainer(logger=logger, enable_progress_bar=bar, default_root_dir=tmp_path, enable_model_summary=False)
    assert quiet(trainer) is is_quiet
