"""Mechanisms compared across datasets: Friedman's test and Nemenyi's critical difference (by their definitions
below autorank's 5 datasets, autorank's from 5 on), baycomp's Bayesian signed-rank test, and `attnclf report`
on a folder of several datasets' runs (the diagram and the Bayesian table beside report.md)."""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
from scipy import stats

from attnclf.analysis.across_datasets import bayes_pairs, mean_ranks, nemenyi_cd, rank
from attnclf.commands import main

NAMES = ["dot", "additive", "general"]


def test_mean_ranks_friedman_and_the_critical_difference_by_hand():
    scores = np.array([[0.80, 0.82, 0.79], [0.70, 0.71, 0.71], [0.90, 0.93, 0.88]])
    # ranks 1 the best, a tie shares its mean rank: (2, 1, 3), (3, 1.5, 1.5), (2, 1, 3)
    assert mean_ranks(scores).tolist() == pytest.approx([7 / 3, 3.5 / 3, 7.5 / 3])
    r = rank(scores, NAMES, ["a", "b", "c"])
    assert r.friedman_p == pytest.approx(stats.friedmanchisquare(*scores.T).pvalue)
    # Demšar (2006): q_0.05 for k = 3 is 2.343; CD = 2.343 sqrt(3 * 4 / (6 * 3))
    assert nemenyi_cd(3, 3, 0.05) == pytest.approx(2.343 * math.sqrt(12 / 18), abs=1e-3)
    assert r.autorank is None and r.cd == pytest.approx(nemenyi_cd(3, 3, 0.05))


def test_from_five_datasets_autorank_ranks_with_the_same_figures():
    rng = np.random.default_rng(0)
    scores = rng.random((6, 3)) * 0.05 + np.array([0.80, 0.82, 0.79])
    r = rank(scores, NAMES, [f"d{i}" for i in range(6)])
    assert r.autorank is not None
    assert r.friedman_p == pytest.approx(stats.friedmanchisquare(*scores.T).pvalue)
    assert r.cd == pytest.approx(nemenyi_cd(3, 6, 0.05), rel=1e-3)
    assert r.mean_ranks == pytest.approx(dict(zip(NAMES, mean_ranks(scores), strict=True)))


def test_bayes_pairs_say_which_is_better_the_way_round_they_are_named():
    y = np.array([0.80, 0.70, 0.90, 0.85, 0.60])
    scores = np.stack([y + 0.05, y, y + 0.0001], axis=1)
    got = {(p.a, p.b): p for p in bayes_pairs(scores, NAMES, rope=0.01)}
    assert got[("dot", "additive")].p_a > 0.95
    assert got[("additive", "general")].p_equivalent > 0.95
    assert got[("dot", "general")].p_b < 0.05


def write_run(root, data, attention, seed, acc):
    run = root / data / f"{attention}_s{seed}"
    (run / ".hydra").mkdir(parents=True)
    config = {"attention": attention, "seed": seed, "data": {"path": f"/data/{data}", "name": None}}
    (run / ".hydra" / "config.yaml").write_text(json.dumps(config))
    (run / ".hydra" / "overrides.yaml").write_text(f"- data.path=/data/{data}\n- attention={attention}\n")
    metrics = {"attention": attention, "seed": seed, "val/acc": acc, "test/acc": acc, "test/loss": 1 - acc}
    metrics.update(epochs=1, fit_seconds=1.0, train_tokens_per_sec=1.0)
    (run / "metrics.json").write_text(json.dumps(metrics))


@pytest.mark.parametrize("datasets", [2, 6])
def test_report_ranks_the_attentions_over_the_datasets(tmp_path, datasets):
    base = {"dot": 0.80, "additive": 0.82, "general": 0.78}
    for d in range(datasets):
        for attention, acc in base.items():
            for seed in (1, 2):
                write_run(tmp_path, f"set{d}", attention, seed, acc + d / 100 + seed / 1000)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["report", str(tmp_path)]) == 0, err.getvalue()
    text = (tmp_path / "report.md").read_text()
    section = text.split("## Across datasets")[1].split("## Data:")[0]
    assert f"Friedman's test over the {datasets} datasets: p = " in section
    assert "| set0 | 80.15 | 82.15 | 78.15 |" in section
    assert "| mean rank | 2.00 | 1.00 | 3.00 |" in section
    # additive ahead everywhere by 2 points: P(additive better) high against both
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in section.splitlines()}
    p_b = float(rows[("dot", "additive")].strip("|").split("|")[4])
    assert p_b > (0.7 if datasets == 2 else 0.95)
    for name in ("critical_difference.png", "bayes_across_datasets.png"):
        assert (tmp_path / name).stat().st_size > 5_000 and f"]({name})" in section


def test_the_same_files_with_classes_mapped_otherwise_are_another_dataset(tmp_path):
    """Binary SST is SST-5's files with a label_map: its runs are never paired or pooled with SST-5's."""
    for name, label_map, acc in (("sst5", None, 0.42), ("sst_binary", {"0": "negative", "4": "positive"}, 0.82)):
        for attention in ("dot", "additive"):
            write_run(tmp_path, name, attention, 1, acc)
            record = {"data": {"path": "/data/sst5", "name": None, "train_file": None, "fold": None}}
            record["data"]["label_map"] = label_map
            (tmp_path / name / f"{attention}_s1" / "data.json").write_text(json.dumps(record))
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["report", str(tmp_path)]) == 0
    assert "4 runs of 2 datasets" in out.getvalue()
    assert "| sst5 | 42.00 | 42.00 |" in (tmp_path / "report.md").read_text()


def test_the_faithfulness_taus_are_judged_review_by_review(tmp_path):
    """Where faithfulness ran on every run (the same seeded sample of reviews), the report judges which
    mechanism's maps agree more: additive's taus 0.2 above dot's on every review, 3 seeds: settled."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(6, 400, 300).tolist()
    for seed in (1, 2, 3):
        for attention, shift in (("dot", 0.0), ("additive", 0.2)):
            write_run(tmp_path, "imdb", attention, seed, 0.9)
            tau = np.clip(rng.normal(0.2 + shift, 0.1, 300), -1, 1)
            per_review = {"kendall_tau_gradient": tau.tolist(), "kendall_tau_loo": tau.tolist(), "tokens": tokens}
            where = tmp_path / "imdb" / f"{attention}_s{seed}" / "faithfulness_test"
            where.mkdir()
            (where / "faithfulness.json").write_text(json.dumps({"per_review": per_review}))
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["report", str(tmp_path)]) == 0
    text = (tmp_path / "report.md").read_text()
    for said in ("|gradient x input|", "leave-one-out"):
        table = text.split(f"Kendall tau of the attention against {said}")[1].split("\n\n")[1]
        row = next(line for line in table.splitlines() if line.startswith("| dot | additive | 3 | examples |"))
        assert "additive better by 0.20 tau" in row and "settled" in row, row
