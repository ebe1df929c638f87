"""Every run keeps its test predictions (predictions_test.parquet): one row per test example, its row, gold label,
predicted label and class probabilities, written by train and by eval, equal to what the checkpoint predicts."""

from __future__ import annotations

import json
import shutil

import datasets
import numpy as np
import pytest
from helpers.config import compose_cfg, tiny_overrides

from attnclf.inference.trained import TrainedClassifier
from attnclf.utils.predictions import PREDICTIONS, Predictions, read_predictions, write_predictions


def test_a_run_keeps_one_row_per_test_example_equal_to_its_checkpoint(tiny_run, tiny_imdb):
    p = read_predictions(tiny_run / PREDICTIONS)
    test = datasets.Dataset.from_parquet(str(tiny_imdb / "test.parquet"))
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    # the dataset's own test split: each row tested (experiment=smoke tests 2 batches of 32), each once, gold
    # labels as the data says
    assert len(p.rows) == len(set(p.rows.tolist())) == sum(map(sum, metrics["test/confusion_matrix"])) == 64
    assert set(p.rows.tolist()) <= set(range(len(test)))
    assert np.array_equal(p.labels, np.asarray(test["label"])[p.rows])
    assert p.correct.mean() == pytest.approx(metrics["test/acc"], abs=1e-6)
    assert p.names == metrics["labels"] and p.split == "test"
    # the best checkpoint's own probabilities, text by text
    clf = TrainedClassifier.from_checkpoint(tiny_run)
    texts = [test["text"][r] for r in p.rows]
    expected = np.array([q.probs for q in clf.predict(texts, allow_empty=True)])
    np.testing.assert_allclose(p.probs, expected, atol=1e-5)
    assert np.array_equal(p.predicted, expected.argmax(1))


def test_eval_writes_the_same_predictions_and_int8_apart(tiny_run, tmp_path, capsys, in_process):
    from attnclf.commands.eval import evaluate

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    (run / PREDICTIONS).unlink()
    overrides = [f"ckpt={run}", f"paths.cache_dir={tmp_path}", f"paths.output_dir={tmp_path}", "num_threads=1"]
    evaluate(compose_cfg(config_name="eval", overrides=overrides))
    ours, trained = read_predictions(run / PREDICTIONS), read_predictions(tiny_run / PREDICTIONS)
    # eval reads the whole split (80 reviews); training tested 64 of them: the same probabilities there
    assert np.array_equal(ours.rows, np.arange(80))
    np.testing.assert_allclose(ours.probs[trained.rows], trained.probs, atol=1e-5)
    assert np.array_equal(ours.labels[trained.rows], trained.labels)
    float_result = (run / "eval_test.json").read_text()
    # int8: its own files, and said
    evaluate(compose_cfg(config_name="eval", overrides=[*overrides, "quantize=int8"]))
    assert "int8 accuracy" in capsys.readouterr().out
    assert (run / "eval_test.json").read_text() == float_result
    int8 = json.loads((run / "eval_test_int8.json").read_text())
    assert int8["quantize"] == "int8"
    kept = read_predictions(run / "predictions_test_int8.parquet")
    assert kept.same_examples(ours) and kept.correct.mean() == pytest.approx(int8["accuracy"], abs=1e-6)
    # the int8 model's own probabilities: near the float model's, not equal to them
    assert np.abs(kept.probs - ours.probs).max() < 0.1 and not np.allclose(kept.probs, ours.probs, atol=1e-6)


def test_a_partial_test_keeps_only_the_examples_tested(tiny_imdb, tmp_path):
    from attnclf.commands.train import train

    out = tmp_path / "run"
    quiet = ["callbacks.rich_progress_bar=null", "callbacks.attention_maps=null", "logger=none"]
    extra = ["experiment=smoke", "trainer.max_epochs=1", "trainer.limit_test_batches=1", *quiet]
    train(compose_cfg([*tiny_overrides(tiny_imdb, out), *extra]))
    p = read_predictions(out / PREDICTIONS)
    metrics = json.loads((out / "metrics.json").read_text())
    # one batch of 32 of the 80 test reviews (the shortest: the loader sorts by length)
    assert len(p.rows) == 32 == sum(map(sum, metrics["test/confusion_matrix"]))
    assert len(set(p.rows.tolist())) == 32
    assert p.correct.mean() == pytest.approx(metrics["test/acc"], abs=1e-6)


def test_the_file_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=7)
    p = Predictions(np.array([4, 0, 9, 2, 3, 8, 1]), rng.integers(0, 3, 7), probs, ["a", "b", "c"], "test", "x.csv")
    write_predictions(tmp_path / "p.parquet", p)
    q = read_predictions(tmp_path / "p.parquet")
    assert np.array_equal(q.rows, p.rows) and np.array_equal(q.labels, p.labels)
    assert np.array_equal(q.predicted, probs.argmax(1))
    np.testing.assert_allclose(q.probs, probs, atol=1e-7)
    assert (q.names, q.split, q.data) == (["a", "b", "c"], "test", "x.csv")
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")]


def test_compare_attention_reads_the_runs_recorded_test_rows(tiny_run, tiny_run_additive, tmp_path, monkeypatch):
    """No data.path: the first run's own test rows (its data.json), as eval reads them; the Hub is never asked."""
    from helpers.commands import attnclf_in_process

    from attnclf.inference.as_trained import texts_as_trained

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "compare"
    argv = ["compare-attention", f"ckpt=[{tiny_run},{tiny_run_additive}]", "n=2", "min_tokens=1", f"out={out}"]
    assert attnclf_in_process(argv, monkeypatch) == 0
    page = (out / "compare.html").read_text()
    test, _ = texts_as_trained(TrainedClassifier.from_checkpoint(tiny_run), "test", {})
    assert page.count("<h3>review") == 2 and "<b>dot</b>" in page and "<b>additive</b>" in page
    # the first two test texts of 1 to 100 tokens, their words shaded in the page as written
    import re

    from attnclf.data.text import tokenize

    first = [t for t in test if 1 <= len(tokenize(t)) <= 100][:2]
    assert all(f">{w}<" in page for t in first for w in re.findall(r"\w+", t)[:3])
