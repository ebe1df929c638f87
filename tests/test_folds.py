"""k-fold cross-validation for data without a test split: data.folds=K data.fold=I."""

import json

import numpy as np
import pytest
from helpers.commands import attnclf_in_process
from helpers.config import compose_cfg, fit
from helpers.own_data import examples, write

from attnclf.data.splits import carve_splits, fold_rows
from attnclf.errors import AttnclfError


@pytest.mark.parametrize("folds", [2, 3, 10])
def test_folds_are_disjoint_stratified_seeded_and_cover_every_row(folds):
    rng = np.random.default_rng(0)
    labels = rng.choice(3, size=517, p=[0.6, 0.3, 0.1])  # (imbalanced classes)
    parts = [fold_rows(labels, folds, i, seed=7) for i in range(folds)]
    every = np.concatenate(parts)
    assert len(every) == len(labels) and sorted(every.tolist()) == list(range(len(labels)))  # disjoint, cover
    for c in range(3):  # each fold holds its share of each class, to one row
        counts = [int((labels[p] == c).sum()) for p in parts]
        assert max(counts) - min(counts) <= 1, (c, counts)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # and of the rows
    assert all(np.array_equal(p, fold_rows(labels, folds, i, seed=7)) for i, p in enumerate(parts))  # seeded
    assert not all(np.array_equal(p, fold_rows(labels, folds, i, seed=8)) for i, p in enumerate(parts))


def test_validation_comes_from_the_training_folds_never_the_test_fold():
    labels = np.arange(200) % 2
    for fold in range(5):
        rows, train, val, test = carve_splits(200, 3, 0.1, 0.1, folds=5, fold=fold, labels=labels)
        assert np.array_equal(test, fold_rows(labels, 5, fold, 3)) and len(test) == 40
        assert not set(val) & set(test) and not set(train) & set(test) and not set(train) & set(val)
        assert sorted([*train, *val, *test]) == list(range(200)) and len(val) == 16  # 10% of the 160 left


@pytest.mark.parametrize(
    "override,message",
    [
        ("data.folds=1", "data.folds=1 must be a whole number >= 2 (or null: no cross-validation)"),
        ("data.fold=2", "data.fold=2 needs data.folds (how many folds), e.g. data.folds=10"),
        ("data.folds=5", "data.fold=None must be one of 0..4 with data.folds=5"),
    ],
)
def test_bad_fold_values_are_one_line(override, message, tmp_path):
    data = write(tmp_path / "r.csv", examples(60, 2, 0, names=["neg", "pos"]), "csv")
    with pytest.raises(AttnclfError) as e:
        fit(data, tmp_path / "run", override)
    assert message in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(AttnclfError, match=r"^data.fold=5 must be one of 0..4 with data.folds=5 \(all of them: "):
        fit(data, tmp_path / "run", "data.folds=5", "data.fold=5")


def test_more_folds_than_the_smallest_class_has_rows_are_refused_before_any_work(tmp_path):
    rows = examples(60, 2, 0, names=["neg", "pos"])
    rows["label"] = ["pos"] * 55 + ["neg"] * 5
    data = write(tmp_path / "r.csv", rows, "csv")
    with pytest.raises(AttnclfError) as e:
        fit(data, tmp_path / "run", "data.folds=6", "data.fold=0")
    assert (
        str(e.value) == "data.folds=6 is more than the 5 rows of the smallest class (of 60 rows, 2 classes); "
        "give data.folds=5 or fewer"
    )
    assert not (tmp_path / "run" / "checkpoints").exists()
    assert len(fold_rows(np.array(rows["label"]) == "neg", 5, 4, seed=1)) == 12  # (5 folds: one row of neg each)


def test_folds_on_data_with_its_own_test_split_are_refused(tiny_imdb, tmp_path):
    with pytest.raises(AttnclfError, match=r"data.folds=3: .* has a 'test' split of its own; k-fold cross-validation"):
        fit(tiny_imdb, tmp_path / "run", "data.folds=3", "data.fold=0")


def test_a_fold_trains_tests_on_its_rows_and_eval_rebuilds_them(tmp_path):
    data = write(tmp_path / "reviews.csv", examples(150, 2, 0, names=["neg", "pos"]), "csv")
    m = fit(data, tmp_path / "run", "logger=none", "seed=5", "data.folds=3", "data.fold=2")
    assert m["splits"]["test"] == "fold 2 of 3 of train (stratified by label, seed 5)"
    assert np.asarray(m["test/confusion_matrix"]).sum() == 50

    from attnclf.commands.eval import evaluate

    cfg = compose_cfg(
        config_name="eval", overrides=[f"ckpt={tmp_path / 'run'}", f"data.path={data}", f"output={tmp_path / 'e.json'}"]
    )
    result = evaluate(cfg)
    assert result["reviews"] == 50 and result["confusion_matrix"] == m["test/confusion_matrix"]
    assert result["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6)


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_cross_validation_sweep_and_its_report_pair_dot_and_additive_by_fold(
    tmp_path, monkeypatch, capfd, in_process
):
    data = write(tmp_path / "reviews.csv", examples(90, 2, 0, names=["neg", "pos"]), "csv")
    sweep = tmp_path / "sweep"
    # (in this process: Hydra's basic launcher runs the jobs one after another in the process that started it)
    argv = [
        "train",
        "-m",
        f"data.path={data}",
        "data.folds=3",
        "data.fold=range(3)",
        "attention=dot,additive",
        "experiment=smoke",
        "logger=none",
        "callbacks.rich_progress_bar=null",
        "model.embed_dim=16",
        "model.hidden_dim=16",
        "data.batch_size=16",
        f"paths.cache_dir={tmp_path / 'c'}",
        f"hydra.sweep.dir={sweep}",
    ]
    assert attnclf_in_process(argv, monkeypatch) == 0, capfd.readouterr().err[-3000:]
    metrics = [json.loads(p.read_text()) for p in sweep.rglob("metrics.json")]
    tests = sorted((m["attention"], m["splits"]["test"]) for m in metrics)
    assert len(tests) == 6 and len({t for _, t in tests}) == 3  # both attentions on each of the 3 folds
    assert attnclf_in_process(["report", str(sweep)], monkeypatch) == 0, capfd.readouterr().err[-2000:]
    text = (sweep / "report.md").read_text()
    assert "(3 pairs over 1 setting(s), paired t-test)" in text and "42 (3 folds)" in text
