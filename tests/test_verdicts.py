"""`attnclf report`'s verdict of every pair, from real tiny runs: a crippled mechanism of the user's (its pooled
context zero) is settled worse than dot from 2 seeds; a twin of dot (the same computation under its own name)
with the same seeds is never called better; runs without predictions, or with predictions of other examples,
are judged on the seeds alone, with a line that says so."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers.commands import attnclf_finished
from helpers.config import compose_cfg, tiny_overrides
from helpers.crippled import BLIND

from attnclf.utils.predictions import PREDICTIONS, read_predictions, write_predictions

OWN = BLIND
CHOICE = {
    "dot": ["attention=dot"],
    "blind": ["attention=custom", "attention._target_=verdict_attention.Blind"],
    "twin": ["attention=custom", "attention._target_=verdict_attention.Twin"],
}


@pytest.fixture(scope="module")
def runs(tiny_imdb, tmp_path_factory):
    """{(name, seed): run folder}: dot, blind and twin, seeds 1 and 2, every test review tested."""
    from attnclf.commands.train import train

    own = tmp_path_factory.mktemp("own")
    (own / "verdict_attention.py").write_text(OWN)
    root = tmp_path_factory.mktemp("verdict_runs")
    folders = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(own))
        for name, choice in CHOICE.items():
            for seed in (1, 2):
                out = root / f"{name}_s{seed}"
                quiet = ["logger=none", "callbacks.rich_progress_bar=null", "callbacks.attention_maps=null"]
                extra = [*choice, f"seed={seed}", "trainer.max_epochs=3", "optimizer.lr=1e-2", *quiet]
                train(compose_cfg([*tiny_overrides(tiny_imdb, out), *extra]))
                folders[(name, seed)] = out
    return folders


def report_of(runs, names, tmp_path, monkeypatch, capfd, edit=None) -> str:
    """report.md of a folder holding the runs of `names` (seeds 1 and 2); `edit(folder)` first."""
    folder = tmp_path / "+".join(names)
    for (name, seed), run in runs.items():
        if name in names:
            shutil.copytree(run, folder / f"{name}_s{seed}")
    if edit:
        edit(folder)
    r = attnclf_finished(["report", f"path={folder}"], monkeypatch, capfd)
    assert r.returncode == 0, r.stderr
    return (folder / "report.md").read_text()


def pair_row(report: str, a: str, b: str) -> str:
    return next(line for line in report.splitlines() if line.startswith(f"| {a} | {b} | 2 |"))


def test_a_crippled_mechanism_is_settled_worse_from_two_seeds(runs, tmp_path, monkeypatch, capfd):
    row = pair_row(report_of(runs, ["dot", "blind"], tmp_path, monkeypatch, capfd), "dot", "blind")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "examples"
    assert cells[-1].startswith("dot better by") and cells[-1].endswith("settled"), row


def test_a_twin_with_the_same_seeds_is_never_better(runs, tmp_path, monkeypatch, capfd):
    # the same computation, the same seeds: the same predictions
    for seed in (1, 2):
        dot, twin = (read_predictions(runs[(n, seed)] / PREDICTIONS) for n in ("dot", "twin"))
        assert np.array_equal(dot.predicted, twin.predicted)
    row = pair_row(report_of(runs, ["dot", "twin"], tmp_path, monkeypatch, capfd), "dot", "twin")
    assert "better" not in row and "practically equivalent" in row, row


def test_runs_without_predictions_are_judged_on_the_seeds_with_one_line(runs, tmp_path, monkeypatch, capfd):
    def drop(folder):
        (folder / "blind_s1" / PREDICTIONS).unlink()

    report = report_of(runs, ["dot", "blind"], tmp_path, monkeypatch, capfd, drop)
    assert "1 of 4 runs kept no test predictions" in report
    assert "| seeds only |" in pair_row(report, "dot", "blind")


def test_predictions_of_other_examples_pair_at_the_seed_level_saying_why(runs, tmp_path, monkeypatch, capfd):
    def shift(folder):
        path = folder / "blind_s2" / PREDICTIONS
        p = read_predictions(path)
        p.rows = p.rows + 1000
        write_predictions(path, p)

    report = report_of(runs, ["dot", "blind"], tmp_path, monkeypatch, capfd, shift)
    assert "| seeds only |" in pair_row(report, "dot", "blind")
    assert "dot and blind: judged on the seeds' accuracies only: dot_s2 and blind_s2 predicted other test" in report


def test_three_mechanisms_get_a_verdict_for_every_pair(runs, tmp_path, monkeypatch, capfd):
    """Every two of three mechanisms judged from their predictions, each pair once."""
    report = report_of(runs, ["dot", "blind", "twin"], tmp_path, monkeypatch, capfd)
    verdicts = [ln for ln in report.splitlines() if " | 2 | examples |" in ln]
    pairs = sorted(tuple(sorted(c.strip() for c in ln.strip("|").split("|")[:2])) for ln in verdicts)
    assert pairs == [("blind", "dot"), ("blind", "twin"), ("dot", "twin")], "\n".join(verdicts)
