"""attnclf export: a run in the Hugging Face Hub's layout (config.json, model.safetensors, vocab.json, the model
card), read back without unpickling anything, to the same predictions as its checkpoint through
from_pretrained, predict, eval and serve."""

from __future__ import annotations

import json
import os
import pickle

import pytest
import torch
from huggingface_hub import ModelCard

from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier

TEXTS = ["A wonderful film, really moving! The plot was dull at times.", "awful boring waste " * 40, "superb"]


@pytest.fixture(scope="module")
def exported(tiny_run, tmp_path_factory):
    from attnclf.commands.export import export

    return export([f"ckpt={tiny_run}", f"out={tmp_path_factory.mktemp('exported') / 'model'}", "license=mit"])


def test_the_folder_has_the_hubs_layout_and_a_card_huggingface_hub_reads(exported, tiny_run):
    assert sorted(p.name for p in exported.iterdir()) == [
        "README.md",
        "config.json",
        "data.json",
        "model.safetensors",
        "vocab.json",
    ]
    config = json.loads((exported / "config.json").read_text())
    assert config["library_name"] == "attnclf" and config["hyper_parameters"]["attention"] == "dot"
    card = ModelCard.load(exported / "README.md")
    meta = card.data.to_dict()
    assert meta["library_name"] == "attnclf" and meta["license"] == "mit" and "attention" in meta["tags"]
    for section in ("## Data", "## Training", "## Evaluation", "## Limits", "dot attention over a BiGRU"):
        assert section in card.text
    assert "pooling (the class `attnclf.models.attention.DotAttention` with scale=true; normaliser" in card.text


def test_a_run_tested_on_part_of_its_split_is_said_so_and_not_claimed_as_the_split(exported, tiny_run):
    """The tiny run tested 2 batches of 32 of its 80 test reviews (experiment=smoke): the card says on how
    many, states the part's accuracy, and puts no test result in its model-index."""
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    assert (metrics["test/reviews"], metrics["test/split_reviews"]) == (64, 80)
    card = ModelCard.load(exported / "README.md")
    assert card.data.eval_results is None and "model-index" not in card.content.split("---")[1]
    assert "measured by the training run's test on 64 reviews of the test split's 80" in card.text
    assert f"| test/acc | {metrics['test/acc']:.4f} |" in card.text


def test_the_whole_splits_evaluation_is_the_cards_test_result(tiny_run, tmp_path, capsys, in_process):
    """After `attnclf eval` of the exported checkpoint (eval_test.json, all 80 reviews), the card states its
    figures, in the model-index as the test split's."""
    import shutil

    from attnclf.commands import main
    from attnclf.commands.export import export

    run = shutil.copytree(tiny_run, tmp_path / "run")
    main(["eval", f"ckpt={run}", f"hydra.run.dir={tmp_path / 'e'}"])
    evaluated = json.loads((run / "eval_test.json").read_text())
    assert evaluated["reviews"] == 80
    card = ModelCard.load(export([f"ckpt={run}", f"out={tmp_path / 'model'}"]) / "README.md")
    found = {r.metric_type: (r.dataset_split, r.metric_value) for r in card.data.eval_results}
    want = {"accuracy": evaluated["accuracy"], "f1": evaluated["macro_f1"]}
    assert found == {k: ("test", round(v, 4)) for k, v in want.items()}
    assert "measured by `attnclf eval` on the whole test split: 80 reviews" in card.text


def test_every_exported_file_has_the_mode_a_new_file_gets(exported):
    umask = os.umask(0)
    os.umask(umask)
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in exported.iterdir()} == {
        p.name: oct(0o666 & ~umask) for p in exported.iterdir()
    }


def test_the_class_is_named_plainly_with_its_keys_where_it_has_any():
    from attnclf.inference.card import class_named

    assert class_named({"attention_class": "my_attention.Cosine", "attention_keys": {}}) == (
        "the class `my_attention.Cosine`"
    )
    keys = {"scale": False, "heads": 4}
    named = class_named({"attention_class": "a.B", "attention_keys": keys})
    assert named == "the class `a.B` with scale=false, heads=4"


def test_it_reads_back_without_unpickling_to_the_checkpoints_predictions_exactly(exported, tiny_run, monkeypatch):
    want = TrainedClassifier.from_checkpoint(tiny_run).predict(TEXTS)

    def refused(*a, **k):
        raise AssertionError("something was unpickled")

    monkeypatch.setattr(torch, "load", refused)
    monkeypatch.setattr(pickle, "load", refused)
    monkeypatch.setattr(pickle, "loads", refused)
    for clf in (TrainedClassifier.from_pretrained(exported), TrainedClassifier.from_checkpoint(exported)):
        got = clf.predict(TEXTS)
        assert [g.probs for g in got] == [w.probs for w in want] and [g.weights for g in got] == [
            w.weights for w in want
        ]


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_predict_eval_and_serve_take_the_folder_as_a_run(exported, tiny_run, tmp_path, capsys, in_process):
    from fastapi.testclient import TestClient

    from attnclf.commands import main
    from attnclf.commands.serve import load_models
    from attnclf.serving.app import create_app
    from attnclf.settings.serve import ServeConfig

    outs = []
    for ckpt in (tiny_run, exported):
        main(["predict", f"ckpt={ckpt}", f"text={TEXTS[0]}"])
        outs.append(capsys.readouterr().out)
        main(["eval", f"ckpt={ckpt}", f"output={tmp_path / ckpt.name}.json", f"hydra.run.dir={tmp_path / 'e'}"])
        capsys.readouterr()
    assert outs[0] == outs[1]
    evals = [json.loads((tmp_path / f"{c.name}.json").read_text()) for c in (tiny_run, exported)]
    assert evals[0]["accuracy"] == evals[1]["accuracy"] and evals[0]["loss"] == evals[1]["loss"]
    answers = []
    for ckpt in (tiny_run, exported):
        s = ServeConfig(ckpt=[str(ckpt)])
        s.normalize()
        s.check()
        with TestClient(create_app(load_models(s), s)) as c:
            answers.append(c.post("/predict", json={"texts": TEXTS}).json())
    assert answers[0] == answers[1]
    measured = []
    for ckpt in (tiny_run, exported):
        out = tmp_path / f"faith_{ckpt.name}"
        main(
            [
                "faithfulness",
                f"ckpt={ckpt}",
                "reviews=10",
                "permutations=3",
                f"output={out}",
                f"hydra.run.dir={tmp_path / 'f'}",
            ]
        )
        measured.append(json.loads((out / "faithfulness.json").read_text())["agreement"])
    assert measured[0] == measured[1]


def test_a_mechanism_whose_module_is_missing_is_one_line(exported, tmp_path):
    import shutil

    moved = tmp_path / "moved"
    shutil.copytree(exported, moved)
    config = json.loads((moved / "config.json").read_text())
    config["hyper_parameters"] |= {"attention": "cosine", "attention_class": "my_missing_module.Cosine"}
    (moved / "config.json").write_text(json.dumps(config))
    with pytest.raises(AttnclfError) as e:
        TrainedClassifier.from_pretrained(moved)
    assert "\n" not in str(e.value) and "my_missing_module" in str(e.value)


@pytest.mark.parametrize(
    "args,words",
    [
        (["out=x"], "give the run and the folder"),
        (["ckpt=/no/such", "out=x"], "ckpt='/no/such': no such checkpoint or run folder"),
        (["ckpt=RUN", "out=FULL"], "exists and is not an empty folder"),
        (["ckpt=RUN", "out=x", "push=noslash"], "push='noslash' is not a repo id"),
        (["ckpt=RUN", "out=x", "license=not-a-license"], "license='not-a-license' is not a license identifier"),
        (["ckpt=RUN", "out=x", "license=apache2"], "(closest: apache-2.0"),
        (["ckpt=RUN", "nosuch=1"], "unknown argument 'nosuch=1'"),
    ],
)
def test_bad_arguments_are_one_line_exit_2_before_any_work(args, words, tiny_run, exported, tmp_path, capsys):
    from attnclf.commands import main

    args = [a.replace("RUN", str(tiny_run)).replace("FULL", str(exported)) for a in args]
    with pytest.raises(SystemExit) as e:
        main(["export", *[a if not a.startswith("out=x") else f"out={tmp_path / 'x'}" for a in args]])
    err = capsys.readouterr().err
    assert e.value.code == 2 and words in err and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()


def test_a_push_the_hub_does_not_take_is_one_line_and_the_folder_stays(tiny_run, tmp_path, monkeypatch, capsys):
    from attnclf.commands import main

    # a Hub that cannot be reached: a closed port on this machine
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(SystemExit) as e:
        main(["export", f"ckpt={tiny_run}", f"out={tmp_path / 'm'}", "push=me/model"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "push=me/model: the Hub did not take it" in err and err.count("\n") == 1, err
    assert (tmp_path / "m" / "model.safetensors").is_file()
