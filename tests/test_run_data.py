"""A run remembers its data (data.json in its folder): attnclf eval and attnclf faithfulness with no data.* read the
run's own test rows (its own columns, the rows it carved, its fold), a data.* key given wins and the log
says which data was used, and an ensemble of runs that read other rows is refused."""

import json
import logging
import sys

import pytest
from helpers.config import compose_cfg, fit, tiny_overrides
from helpers.own_data import examples, write

from attnclf.commands.eval import evaluate
from attnclf.errors import AttnclfError


def columns(rows: dict) -> dict:
    """The same rows under other column names: the defaults (text, label) would not find them."""
    return {"body": rows["text"], "y": rows["label"]}


def evaluated(run, *over, out):
    return evaluate(compose_cfg(config_name="eval", overrides=[f"ckpt={run}", f"output={out}", *over]))


def test_eval_with_no_data_reads_the_runs_own_carved_test_rows(tmp_path, caplog):
    data = write(tmp_path / "tickets.csv", columns(examples(200, 2, 0, names=["neg", "pos"])), "csv")
    run = tmp_path / "run"
    m = fit(data, run, "logger=none", "seed=7", "data.text_column=body", "data.label_column=y")
    record = json.loads((run / "data.json").read_text())
    assert record["data"]["path"] == str(data) and record["data"]["text_column"] == "body"
    assert record["seed"] == 7 and record["carved"]["test_size"] == 0.1 and record["carved"]["rows"] == 200
    assert "batch_size" not in record["data"] and "cache_dir" not in record["data"]  # (how it ran, not what it read)
    caplog.set_level(logging.INFO, logger="attnclf")
    result = evaluated(run, out=tmp_path / "e.json")
    assert result["reviews"] == 20 and result["confusion_matrix"] == m["test/confusion_matrix"]
    assert result["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6) and result["data"] == str(data)
    assert f"data: {data} (the run's own ({run / 'data.json'}))" in caplog.text
    # a data.* key given wins, and the log says so: every row of another file
    other = write(tmp_path / "other.csv", columns(examples(150, 2, 1, names=["neg", "pos"])), "csv")
    caplog.clear()
    result = evaluated(run, f"data.path={other}", "data.split=train", out=tmp_path / "o.json")
    assert result["reviews"] == 150 and result["data"] == str(other)
    assert f"data: {other} (data.path='{other}' given; the rest the run's own" in caplog.text


def test_eval_and_faithfulness_with_no_data_read_the_runs_fold(tmp_path):
    data = write(tmp_path / "reviews.jsonl", examples(150, 2, 0, names=["neg", "pos"]), "jsonl")
    run = tmp_path / "run"
    m = fit(data, run, "logger=none", "seed=5", "data.folds=3", "data.fold=1")
    result = evaluated(run, out=tmp_path / "e.json")
    assert result["reviews"] == 50 and result["confusion_matrix"] == m["test/confusion_matrix"]
    assert result["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6)
    from attnclf.commands.faithfulness import faithfulness

    over = [f"ckpt={run}", "reviews=50", "max_tokens=64", "permutations=2", f"output={tmp_path / 'f'}"]
    faith = faithfulness(compose_cfg(config_name="faithfulness", overrides=over))
    assert faith["data"] == str(data) and faith["reviews"] == 50  # every row of the fold: the same accuracy
    assert faith["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6)


def test_an_ensemble_of_runs_that_read_other_rows_is_refused(tmp_path):
    rows = examples(200, 2, 0, names=["neg", "pos"])
    a = write(tmp_path / "a.csv", rows, "csv")
    one = ["logger=none", "trainer.max_epochs=1"]
    fit(a, tmp_path / "a1", *one, "seed=1")
    fit(a, tmp_path / "a1b", *one, "seed=1", "model.hidden_dim=8")
    fit(a, tmp_path / "a2", *one, "seed=2")  # (another seed: other rows carved off as its test split)
    both = evaluated(f"[{tmp_path / 'a1'},{tmp_path / 'a1b'}]", out=tmp_path / "ens.json")
    assert both["reviews"] == 20 and len(both["members"]) == 2
    with pytest.raises(AttnclfError, match=r"^ckpt: .*a2.* was trained on other data than .*a1.*; an ensemble needs"):
        evaluated(f"[{tmp_path / 'a1'},{tmp_path / 'a2'}]", out=tmp_path / "e.json")


def test_a_run_from_before_data_json_evaluates_from_its_vocabulary_record_and_gets_one_when_resumed(tmp_path):
    """Run folders written before data.json: the carving its vocab.json saved, the data given; resumed,
    the run writes its record, and attnclf eval needs no data.* for it after that."""
    data = write(tmp_path / "reviews.csv", examples(200, 2, 0, names=["neg", "pos"]), "csv")
    run = tmp_path / "run"
    m = fit(data, run, "logger=none", "seed=3")
    (run / "data.json").unlink()
    result = evaluated(run, f"data.path={data}", out=tmp_path / "e.json")
    assert result["reviews"] == 20 and result["accuracy"] == pytest.approx(m["test/acc"], abs=1e-6)
    (run / "metrics.json").unlink()  # (unfinished: its last.ckpt resumes, for its test)
    resumed = fit(data, run, "logger=none", "seed=3", f"ckpt_path={run}")
    assert resumed["epochs"] == m["epochs"] and json.loads((run / "data.json").read_text())["carved"]["rows"] == 200
    again = evaluated(run, out=tmp_path / "again.json")
    assert again["reviews"] == 20 and again["accuracy"] == pytest.approx(resumed["test/acc"], abs=1e-6)


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_resumed_run_reads_its_own_data_and_refuses_other_data(tmp_path, monkeypatch, capsys, in_process):
    """`attnclf train ckpt_path=<run>` with no data.* key continues on the run's own file and columns (not
    the default, IMDb from the Hub); a data.* key or another setting given that differs from the run's is
    refused in one line before any work, and the run is left as it was."""
    from attnclf.commands import main

    data = write(tmp_path / "tickets.csv", columns(examples(200, 2, 0, names=["neg", "pos"])), "csv")
    run = tmp_path / "run"
    fit(data, run, "logger=none", "seed=3", "data.text_column=body", "data.label_column=y")
    (run / "metrics.json").unlink()  # (unfinished: its last.ckpt resumes)
    same = [o for o in tiny_overrides(data, run) if not o.startswith(("data.", "paths.output_dir"))]
    command = [
        "train",
        *same,
        "trainer.max_epochs=4",
        "optimizer.lr=1e-2",
        "logger=none",
        "seed=3",
        "callbacks.rich_progress_bar=null",
        "callbacks.attention_maps=null",
        f"ckpt_path={run}",
        f"hydra.run.dir={tmp_path / 'fresh'}",
    ]
    refused = {
        "data.max_length=32": f"error: data.max_length=32: the run resumed was trained with data.max_length=64 "
        f"({run / 'data.json'}); leave data.max_length out to resume on the run's own data",
        "trainer.max_epochs=5": f"error: trainer.max_epochs=5: the run resumed was trained with trainer.max_epochs=4 "
        f"({run / '.hydra' / 'config.yaml'}); leave trainer.max_epochs out to resume with "
        "the run's own settings",
        # a group's choice: the keys its file sets
        "attention=additive": f"error: attention='additive': the run resumed was trained with attention='dot' "
        f"({run / '.hydra' / 'config.yaml'}); leave attention out to resume with the run's "
        "own settings",
    }
    # (main() sets sys.argv for Hydra: put back after the test)
    monkeypatch.setattr("sys.argv", list(sys.argv))
    for given, line in refused.items():
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            main([*command, given])
        assert stop.value.code == 2 and not (tmp_path / "fresh").exists() and not (run / "metrics.json").exists()
        assert capsys.readouterr().err.strip() == line
    # the same values, and keys that cannot change a result (threads, where the cache is): the command's
    main(
        [
            *command,
            "data.label_column=y",
            "data.batch_size=16",
            "num_threads=1",
            f"paths.cache_dir={tmp_path / 'another_cache'}",
        ]
    )
    resumed = json.loads((run / "metrics.json").read_text())
    assert resumed["epochs"] == 4 and resumed["test/confusion_matrix"] is not None
    # its checkpoints and logs went on in its own folder: the one Hydra made for the command is gone
    assert not (tmp_path / "fresh").exists() and len(list((run / "checkpoints").glob("*.ckpt"))) >= 2
    assert resumed["splits"]["test"].startswith("carved from train")
    assert json.loads((run / "data.json").read_text())["data"]["text_column"] == "body"


def test_a_run_trained_on_a_relative_path_evaluates_from_another_folder_and_a_moved_file_is_one_line(
    tmp_path, monkeypatch
):
    """data.path=reviews.csv typed in the data's folder is recorded as an absolute path: eval from elsewhere
    reads the same rows; where the file has gone, one line names it and the run (not a Hub error)."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir(), elsewhere.mkdir()
    write(here / "reviews.csv", examples(200, 2, 0, names=["neg", "pos"]), "csv")
    monkeypatch.chdir(here)
    run = tmp_path / "run"
    m = fit("reviews.csv", run, "logger=none")
    assert json.loads((run / "data.json").read_text())["data"]["path"] == str(here / "reviews.csv")
    monkeypatch.chdir(elsewhere)
    result = evaluated(run, out=tmp_path / "e.json")
    assert result["confusion_matrix"] == m["test/confusion_matrix"] and result["data"] == str(here / "reviews.csv")
    (here / "reviews.csv").rename(here / "moved.csv")
    with pytest.raises(AttnclfError) as e:
        evaluated(run, out=tmp_path / "e2.json")
    assert str(e.value) == (
        f"data.path={str(here / 'reviews.csv')!r}: the run {run} was trained on it, and it is not there (looked for "
        f"from {elsewhere}); give data.path=<where it is now>"
    )
    # a record from before paths were recorded whole: the relative path named, not the Hub
    record = json.loads((run / "data.json").read_text())
    record["data"]["path"] = "reviews.csv"
    (run / "data.json").write_text(json.dumps(record))
    with pytest.raises(AttnclfError, match=r"^data.path='reviews.csv': the run .* is not there \(looked for from"):
        evaluated(run, out=tmp_path / "e3.json")
    assert evaluated(run, f"data.path={here / 'moved.csv'}", out=tmp_path / "e4.json")["reviews"] == 20
