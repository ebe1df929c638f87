"""A user's own data: single files of every type, folders, string and remapped labels, 3 and 5 classes,
its own validation split, a carved test split, column names found, and the token cache repaired."""

import json
import multiprocessing

import datasets
import numpy as np
import pytest
from helpers.config import compose_cfg, fit
from helpers.own_data import examples, write
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from attnclf.commands.train import train
from attnclf.data.encoding import encode_split
from attnclf.errors import AttnclfError


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl", "parquet", "txt"])
def test_a_single_file_with_string_labels_trains_and_the_test_split_is_carved(tmp_path, kind):
    """One file (any of the five types), labels pos/neg: the test split is carved from it, seeded, and
    metrics.json says so; vocab.json holds the label names."""
    data = write(tmp_path / f"reviews.{kind}", examples(200, 2, 0, names=["neg", "pos"]), kind)
    m = fit(data, tmp_path / "run", "logger=none")
    assert m["num_classes"] == 2 and m["labels"] == ["neg", "pos"]
    assert m["text_lengths"]["p50"] <= m["text_lengths"]["p99"] <= 14 and m["text_lengths"]["kept_whole"] == 1.0
    assert m["splits"]["test"].startswith("carved from train (data.test_size=0.1, seed 42)")
    assert m["splits"]["val"].startswith("carved from train")
    assert m["test/acc"] >= 0.8  # (the class words are plain)
    assert json.loads((tmp_path / "run" / "vocab.json").read_text())["labels"] == ["neg", "pos"]


def test_a_folder_of_csv_files_with_string_labels(tmp_path):
    write(tmp_path / "d" / "train.csv", examples(200, 2, 0, names=["neg", "pos"]), "csv")
    write(tmp_path / "d" / "test.csv", examples(60, 2, 1, names=["neg", "pos"]), "csv")
    m = fit(tmp_path / "d", tmp_path / "run", "logger=none")
    assert m["labels"] == ["neg", "pos"] and m["splits"]["test"] == "test"


def test_three_classes_with_their_own_validation_split_and_per_class_metrics(tmp_path):
    """Integer labels 10/20/30 are remapped to 0..2 (their values kept as names); the dataset's own
    validation split is used, not carved; macro-F1, per-class F1 and the confusion matrix are logged."""
    for split, n, seed in (("train", 210, 0), ("validation", 45, 1), ("test", 60, 2)):
        rows = examples(n, 3, seed)
        rows["label"] = [10 * (y + 1) for y in rows["label"]]
        write(tmp_path / "d" / f"{split}.jsonl", rows, "jsonl")
    m = fit(tmp_path / "d", tmp_path / "run", "callbacks.early_stopping=null", "data.batch_size=64")
    assert m["num_classes"] == 3 and m["labels"] == ["10", "20", "30"]
    assert m["splits"] == {"train": "train", "val": "validation", "test": "test"}
    # the validation split's 45 rows, each of 10 epochs: trainer.max_epochs=4, and min_epochs=auto's 10 for
    # data of more than 2 classes and few rows (early stopping, off here, would end it sooner)
    assert m["eval_reviews"] == 10 * 45 and m["epochs"] == 10
    # every one of the 210 training rows trains (batches of 64: 4 a epoch) and nothing is carved for validation
    assert m["steps"] == 10 * 4
    assert json.loads((tmp_path / "run" / "data.json").read_text())["carved"]["val_size"] is None
    assert set(m["test/f1"]) == {"10", "20", "30"} and 0 <= m["test/macro_f1"] <= 1
    assert np.isclose(m["test/macro_f1"], np.mean(list(m["test/f1"].values())), atol=1e-6)
    assert np.asarray(m["test/confusion_matrix"]).sum() == 60
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    tags = events.Tags()
    assert {"val/macro_f1", "val/f1/10", "val/f1/20", "val/f1/30", "test/macro_f1"} <= set(tags["scalars"])
    assert "val/confusion_matrix" in tags["images"]


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_five_classes_end_to_end_eval_and_predict_with_names(tmp_path, capsys):
    """A 5-class run with string labels (and the text in a 'sentence' column, found by its usual name):
    attnclf eval loads its checkpoint, attnclf predict prints the class names."""
    names = ["very negative", "negative", "neutral", "positive", "very positive"]
    for split, n, seed in (("train", 300, 0), ("test", 100, 1)):
        rows = examples(n, 5, seed, names=names)
        write(tmp_path / "d" / f"{split}.parquet", {"sentence": rows["text"], "label": rows["label"]}, "parquet")
    m = fit(tmp_path / "d", tmp_path / "run", "logger=none", "trainer.max_epochs=6")
    assert m["labels"] == sorted(names) and m["test/acc"] > 0.6  # chance: 0.2

    from attnclf.commands.eval import evaluate
    from attnclf.commands.predict import predict

    cfg = compose_cfg(
        config_name="eval",
        overrides=[f"ckpt={tmp_path / 'run'}", f"data.path={tmp_path / 'd'}", f"paths.output_dir={tmp_path}"],
    )
    result = evaluate(cfg)
    assert result == json.loads((tmp_path / "run" / "eval_test.json").read_text())
    assert result["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6) and len(result["f1"]) == 5
    assert "F1 per class: negative" in capsys.readouterr().out
    (pred,) = predict([f"ckpt={tmp_path / 'run'}", "text=a superb brilliant film"])
    assert pred.label_name == "very positive"
    assert capsys.readouterr().out.startswith("very positive\t")


def test_eval_rebuilds_a_carved_test_split(tmp_path):
    """One CSV, no test split of its own: attnclf eval data.split=test evaluates the rows the run carved off (the
    run's own test/acc, on the same number of reviews), data.split=validation those it validated on; data
    of another size is refused in one line."""
    data = write(tmp_path / "reviews.csv", examples(200, 2, 0, names=["neg", "pos"]), "csv")
    m = fit(data, tmp_path / "run", "logger=none", "seed=7", "trainer.max_epochs=1")

    from attnclf.commands.eval import evaluate

    def evaluated(split, path=data):
        over = [
            f"ckpt={tmp_path / 'run'}",
            f"data.path={path}",
            f"data.split={split}",
            f"output={tmp_path / split}.json",
        ]
        return evaluate(compose_cfg(over, "eval"))

    test = evaluated("test")
    assert test["reviews"] == 20 and np.asarray(test["confusion_matrix"]).sum() == 20  # data.test_size=0.1
    assert test["confusion_matrix"] == m["test/confusion_matrix"]
    assert test["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6)
    assert evaluated("validation")["reviews"] == 18  # data.val_size=0.1 of the 180 left
    other = write(tmp_path / "other.csv", examples(150, 2, 0, names=["neg", "pos"]), "csv")
    with pytest.raises(
        AttnclfError,
        match=r"^data.split='test': the run carved it from a 'train' split of 200 rows, "
        r".* has 150; give the data it was trained on \(or data.split=train for every row "
        r"of .*\)$",
    ):
        evaluated("test", other)
    with pytest.raises(
        AttnclfError,
        match=r"^data.split='unsupervised'; allowed for .*: train, test \(the rows the "
        r"run tested on\), validation \(the rows the run validated on\)$",
    ):
        evaluated("unsupervised")


def test_column_errors_list_what_is_there(tmp_path):
    write(tmp_path / "a.csv", {"body": ["a", "b"], "y": [0, 1]}, "csv")
    with pytest.raises(AttnclfError, match=r"has no text column 'text'; columns found: \['body', 'y'\]"):
        fit(tmp_path / "a.csv", tmp_path / "run")
    with pytest.raises(AttnclfError, match=r"data file not found: .*nope.csv"):
        fit(tmp_path / "a.csv", tmp_path / "run", f"data.train_file={tmp_path / 'nope.csv'}")


def test_labels_that_are_not_classes_are_refused(tmp_path):
    write(tmp_path / "r.jsonl", {"text": ["a", "b", "c"], "label": [0.5, 1.0, 2.0]}, "jsonl")
    with pytest.raises(AttnclfError, match=r"holds float values such as 0.5; labels must be class names"):
        fit(tmp_path / "r.jsonl", tmp_path / "run")


def test_a_cut_short_cache_file_is_rebuilt_with_a_warning(tiny_imdb, tmp_path, caplog):
    split = datasets.load_dataset(str(tiny_imdb))["train"]
    # (a copy: the cache's ids are mapped from the file cut below)
    first = np.array(encode_split(split, "text", "label", str(tmp_path)).ids)
    table = encode_split(split, "text", "label", str(tmp_path)).table
    (cache,) = tmp_path.glob("*/ids.int32")
    cache.write_bytes(cache.read_bytes()[:100])  # cut short on disk
    again = encode_split(split, "text", "label", str(tmp_path))
    assert "cannot be read" in caplog.text and "tokenising again" in caplog.text
    assert (again.ids == first).all() and again.table == table
    assert (encode_split(split, "text", "label", str(tmp_path)).ids == first).all()  # and rewritten whole


def _encode_into(path, cache, queue):
    split = datasets.load_dataset(path)["train"]
    queue.put(encode_split(split, "text", "label", cache).ids.sum())


def test_two_runs_writing_the_same_cache_at_once_do_not_corrupt_it(tiny_imdb, tmp_path):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_encode_into, args=(str(tiny_imdb), str(tmp_path), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    sums = [queue.get(timeout=5) for _ in procs]
    # one cache folder, no temporary one left
    (cache,) = [p for p in tmp_path.iterdir() if not p.name.endswith(".lock")]
    assert int(np.fromfile(cache / "ids.int32", dtype=np.int32).sum()) == sums[0] == sums[1]


def test_the_csv_preset_asks_for_its_file(tmp_path):
    with pytest.raises(AttnclfError, match=r"^data.path is required here: .* e.g. data.path=my.csv$"):
        train(compose_cfg(["data=csv", f"paths.output_dir={tmp_path}"]))


def test_label_map_merges_classes_and_drops_the_rest_as_binary_sst_is_made(tmp_path, capsys):
    """data=sst_binary: SST-5's labels 0-1 negative, 3-4 positive, 2 (neutral) dropped from every split; the run
    records the map (data.json), so attnclf eval reads the same two classes; a label the data lacks is one line."""
    from attnclf.commands.eval import evaluate
    from attnclf.settings.data import data_config

    folder = tmp_path / "sst5"
    for split, n, seed in (("train", 200, 0), ("validation", 50, 1), ("test", 50, 2)):
        write(folder / f"{split}.jsonl", examples(n, 5, seed), "jsonl")
    m = fit(folder, tmp_path / "run", "data=sst_binary", "trainer.max_epochs=1")
    assert m["num_classes"] == 2 and m["labels"] == ["negative", "positive"]
    assert sum(map(sum, m["test/confusion_matrix"])) == 40  # 4 of every 5 rows kept
    recorded = json.loads((tmp_path / "run" / "data.json").read_text())
    assert recorded["data"]["label_map"] == {"0": "negative", "1": "negative", "3": "positive", "4": "positive"}
    cfg = compose_cfg(
        config_name="eval",
        overrides=[
            f"ckpt={tmp_path / 'run'}",
            f"output={tmp_path / 'ev.json'}",
            f"paths.cache_dir={tmp_path / 'run' / 'cache'}",
        ],
    )
    ev = evaluate(cfg)
    assert ev["reviews"] == 40 and ev["accuracy"] == pytest.approx(m["test/acc"])
    assert data_config({"path": "x", "label_map": {0: "a", 1: "b"}}).label_map == {"0": "a", "1": "b"}
    with pytest.raises(AttnclfError, match=r"data.label_map=\{'0': 'a', '1': 'a'\} must map the labels to at least 2"):
        data_config({"path": "x", "label_map": {0: "a", 1: "a"}})
    with pytest.raises(AttnclfError, match=r"label_map names '7', not a label of .* \(its labels: 0, 1, 2, 3, 4\)"):
        fit(folder, tmp_path / "bad", "data=sst_binary", "+data.label_map.7=other")


def test_balanced_class_weights_count_the_training_rows_only(tmp_path, caplog):
    """optimizer.class_weights=balanced: n / (classes x the class's rows) over the rows trained on, not over the
    whole training split, on data whose carved validation and test rows shift the class mix."""
    import logging

    from attnclf.data.splits import split_rows

    rows = examples(300, 3, 0)
    keep = [i for i, y in enumerate(rows["label"]) if y != 2 or i % 2]  # 100 / 100 / 50 rows
    rows = {k: [v[i] for i in keep] for k, v in rows.items()}
    write(tmp_path / "d.csv", rows, "csv")
    with caplog.at_level(logging.INFO, logger="attnclf"):
        fit(
            tmp_path / "d.csv",
            tmp_path / "run",
            "optimizer.class_weights=balanced",
            "trainer.max_epochs=1",
            "min_epochs=1",
            "data.val_size=0.2",
            "data.test_size=0.2",
            "logger=none",
        )
    labels = np.array(rows["label"])
    carved = json.loads((tmp_path / "run" / "data.json").read_text())["carved"]
    _, trained, _, _ = split_rows(carved, labels)

    def balanced(y):
        return len(y) / (3 * np.bincount(y, minlength=3))

    want, whole = balanced(labels[trained]), balanced(labels)
    assert not np.allclose(want, whole, atol=5e-3)  # (the carved rows shift the mix: the two differ)
    said = ", ".join(f"{c} {w:.3g}" for c, w in zip(("0", "1", "2"), want, strict=True))
    assert f"optimizer.class_weights=balanced: {said} (n / (classes x the class's training rows))" in caplog.text


def test_min_epochs_auto_counts_the_rows_trained_on(tmp_path):
    """min_epochs=auto: 10 epochs for data of more than 2 classes and fewer than 20,000 training rows, counted
    after the carving: 21,000 rows of 3 classes leave 17,010 to train on (10% test, then 10% validation)."""
    import pytorch_lightning as L
    from helpers.data import make_datamodule

    from attnclf.training.trainer import at_least_epochs

    write(tmp_path / "big.csv", examples(21_000, 3, 0), "csv")
    dm = make_datamodule(str(tmp_path / "big.csv"), cache_dir=str(tmp_path / "cache"))
    dm.setup("fit")
    assert len(dm.train_set) == 17_010
    trainer = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    at_least_epochs(trainer, "auto", dm)
    assert trainer.fit_loop.max_epochs == 10
