"""Evaluate and predict from a trained checkpoint, through the Python API and the command lines."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers.commands import attnclf_in_process
from helpers.config import ROOT, compose_cfg
from helpers.files import strict_json

from attnclf.commands.predict import predict, read_rows
from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier


def best(run):
    return json.loads((run / "metrics.json").read_text())["best_checkpoint"]


def cli(script, *args):
    return subprocess.run([sys.executable, script, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_classifier_api(tiny_run):
    clf = TrainedClassifier.from_checkpoint(best(tiny_run))
    texts = ["a great wonderful film", "awful boring waste", "zzq", "!", "great " * 200_000]  # the last: 1.2 MB
    preds = clf.predict(texts, batch_size=2)
    assert len(preds) == 5
    for p in preds:
        assert p.label in (0, 1) and p.label_name in ("0", "1") and 0.5 <= p.prob <= 1
        assert len(p.tokens) == len(p.weights) and abs(sum(p.weights) - 1) < 1e-5
    assert preds[0].tokens == ["a", "great", "wonderful", "film"]
    assert preds[2].tokens == ["zzq"]  # (a word the vocabulary lacks is read as <unk>, and shown as written)
    # the rule of attnclf predict's text=: an empty text is refused, not classified; a lone string is not a list
    with pytest.raises(AttnclfError, match=r"texts 1, 2: empty, nothing to classify"):
        clf.predict(["a film", "", "   "])
    with pytest.raises(TypeError, match=r"predict takes a list of texts; for one text: predict\(\[text\]\)\[0\]"):
        clf.predict("a great film")
    assert len(preds[4].tokens) == 1000  # truncated as the run's test split was (data.eval_max_length)
    # the same review alone and in a batch with others: the same answer (padding has no effect)
    alone = clf.predict(["a great wonderful film"])[0]
    assert alone.probs == pytest.approx(preds[0].probs, abs=1e-5)
    assert alone.weights == pytest.approx(preds[0].weights, abs=1e-5)
    # a run folder stands for its best checkpoint, as in every command
    assert TrainedClassifier.from_checkpoint(tiny_run).predict(["a great wonderful film"])[0].probs == alone.probs


def test_a_run_from_before_eval_max_length_is_read_as_it_was_trained(tiny_run, tmp_path):
    """Its vocabulary has no eval_max_length: eval and predict truncate to its max_length, as its test did."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    vocab = json.loads((run / "vocab.json").read_text())
    assert vocab.pop("eval_max_length") == 1000
    (run / "vocab.json").write_text(json.dumps(vocab))
    clf = TrainedClassifier.from_checkpoint(run / "checkpoints" / Path(best(tiny_run)).name)
    assert clf.max_length == 64 and len(clf.predict(["great " * 2000])[0].tokens) == 64


def test_eval_command_on_a_run_folder_against_an_independent_computation(tiny_run, tmp_path, capsys):
    """attnclf eval ckpt=<run folder>: the best checkpoint, the default output <run>/eval_<split>.json, and
    accuracy, loss, macro-F1 and the confusion matrix as computed here from the Python API's predictions.
    The split is imbalanced (60 positive, 20 negative), so macro-F1 differs from accuracy (micro-F1)."""
    import datasets
    import numpy as np
    from helpers.data import make_reviews

    data = tmp_path / "data"
    reviews = make_reviews(120, seed=5)
    keep = [i for i, y in enumerate(reviews["label"]) if y == 1][:60] + [
        i for i, y in enumerate(reviews["label"]) if y == 0
    ][:20]
    test = datasets.Dataset.from_dict({k: [v[i] for i in keep] for k, v in reviews.items()})
    test.to_parquet(str(data / "test.parquet"))
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)

    from attnclf.commands.eval import evaluate

    overrides = [
        f"ckpt={run}",
        f"data.path={data}",
        f"paths.cache_dir={tmp_path}",
        f"paths.output_dir={tmp_path}",
        "num_threads=1",
    ]
    evaluate(compose_cfg(config_name="eval", overrides=overrides))
    stdout = capsys.readouterr().out
    result = strict_json(run / "eval_test.json")  # the default output: beside the checkpoint's run
    assert result["checkpoint"] == str(run / "checkpoints" / Path(best(tiny_run)).name)

    # (the split has empty reviews: read as one <unk>, as attnclf eval and training read them)
    preds = TrainedClassifier.from_checkpoint(result["checkpoint"]).predict(test["text"], allow_empty=True)
    y = np.array(test["label"])
    p = np.array([q.label for q in preds])
    probs = np.array([q.probs for q in preds])
    confusion = [[int(((y == t) & (p == c)).sum()) for c in (0, 1)] for t in (0, 1)]
    f1 = [
        2
        * confusion[c][c]
        / (
            2 * confusion[c][c]
            + sum(confusion[t][c] for t in (0, 1) if t != c)
            + sum(confusion[c][q] for q in (0, 1) if q != c)
        )
        for c in (0, 1)
    ]
    assert result["reviews"] == 80 and result["confusion_matrix"] == confusion
    assert result["accuracy"] == pytest.approx((y == p).mean())
    assert result["macro_f1"] == pytest.approx(np.mean(f1), abs=1e-6)
    assert abs(np.mean(f1) - (y == p).mean()) > 1e-3  # (so that a micro-F1 would not pass)
    assert result["loss"] == pytest.approx(-np.log(probs[np.arange(80), y]).mean(), abs=1e-5)
    assert "accuracy" in stdout and "confusion" in stdout


def test_eval_of_an_ensemble_averages_the_members_probabilities(tiny_run, tiny_run_additive, tiny_imdb, tmp_path):
    """attnclf eval ckpt=[a,b]: the class probabilities of both models averaged (each reading the reviews with its
    own vocabulary), against the Python API's predictions; each member's own accuracy beside it."""
    import numpy as np

    from attnclf.commands.eval import evaluate
    from attnclf.data.loading import load_splits
    from attnclf.training.checkpoint import best_checkpoint

    other = tmp_path / "other"  # a member with another vocabulary: two words swapped
    shutil.copytree(tiny_run_additive, other)
    vocab = json.loads((other / "vocab.json").read_text())
    words = vocab["itos"]
    i, j = words.index("great"), words.index("awful")
    words[i], words[j] = words[j], words[i]
    (other / "vocab.json").write_text(json.dumps(vocab))

    def run(ckpts, out, data=tiny_imdb):
        overrides = [
            f"ckpt=[{','.join(map(str, ckpts))}]",
            f"data.path={data}",
            f"paths.cache_dir={tmp_path}",
            f"output={out}",
        ]
        return evaluate(compose_cfg(overrides, "eval"))

    result = run([tiny_run, other], tmp_path / "ensemble.json")
    test = load_splits(str(tiny_imdb), None)["test"]
    y = np.array(test["label"])
    ckpts = [best_checkpoint(r) for r in (tiny_run, other)]  # (other's metrics.json names the original's)
    probs = [
        np.array([q.probs for q in TrainedClassifier.from_checkpoint(c).predict(test["text"], allow_empty=True)])
        for c in ckpts
    ]
    mean = (probs[0] + probs[1]) / 2
    assert abs(result["accuracy"] - (mean.argmax(1) == y).mean()) < 1e-9
    assert result["loss"] == pytest.approx(-np.log(mean[np.arange(len(y)), y]).mean(), abs=1e-5)
    assert [m["accuracy"] for m in result["members"]] == pytest.approx([(q.argmax(1) == y).mean() for q in probs])
    assert json.loads((tmp_path / "ensemble.json").read_text())["checkpoint"] == [str(c) for c in ckpts]
    # one member is that member's own evaluation
    alone = run([tiny_run], tmp_path / "alone.json")
    assert alone["accuracy"] == pytest.approx(result["members"][0]["accuracy"]) and "members" not in alone

    vocab["labels"] = ["neg", "pos"]  # (the run's class names, beside the words)
    (other / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(AttnclfError, match=r"ckpt: .* was trained on classes \['neg', 'pos'\].*same classes"):
        run([tiny_run, other], tmp_path / "bad.json")
    # refused before any member is evaluated: data that is not there is never read
    with pytest.raises(AttnclfError, match=r"same classes"):
        run([tiny_run, other], tmp_path / "bad.json", data=tmp_path / "no_such_data")


def test_eval_and_predict_help_list_only_what_they_take(capsys, monkeypatch, in_process):
    assert attnclf_in_process(["eval", "--help"], monkeypatch) == 0
    ev = capsys.readouterr().out
    assert "ckpt" in ev and "data.split" in ev
    for ignored in ("attention", "trainer", "max_length", "optimizer"):
        assert f"{ignored}:" not in ev and f"{ignored}=" not in ev, ignored
    with pytest.raises(SystemExit) as e:
        predict(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith("usage: attnclf predict") and "column=" in out


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_predict_command_text_and_files(tiny_run, tmp_path, capsys):
    r = cli("predict.py", f"ckpt={best(tiny_run)}", "text=I don't think it's great, (really) 5/10!")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "top:" in r.stdout

    (tmp_path / "in.txt").write_text("great film\nawful film\n")
    (tmp_path / "in.csv").write_text('id,text\n1,"great, great film"\n2,boring\n')
    (tmp_path / "in.jsonl").write_text('{"text": "great"}\n{"text": "dull"}\n')
    import datasets

    datasets.Dataset.from_dict({"text": ["superb", "waste"]}).to_parquet(str(tmp_path / "in.parquet"))
    for name in ("in.txt", "in.csv", "in.jsonl", "in.parquet"):
        assert len(read_rows(tmp_path / name)[0]) == 2, name
    out, page = tmp_path / "out.jsonl", tmp_path / "out.html"
    preds = predict([f"ckpt={best(tiny_run)}", f"input={tmp_path / 'in.csv'}", f"output={out}", f"html={page}"])
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["text"] for r in rows] == ["great, great film", "boring"] and len(preds) == 2
    assert [r["id"] for r in rows] == ["1", "2"]  # the input's other columns are kept, to join back on
    assert "<span" in page.read_text() and "great" in page.read_text()
    said = capsys.readouterr().err  # where each file went, a line each
    assert f"predictions written to {out}" in said and f"attention page written to {page}" in said
    predict([f"ckpt={best(tiny_run)}", f"input={tmp_path / 'in.txt'}", f"output={tmp_path / 'out.csv'}"])
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "text,label,prob,top_words"
    # an input with gold labels keeps them; the prediction's columns are then predicted_*
    (tmp_path / "gold.jsonl").write_text('{"id": 7, "text": "superb", "label": "pos"}\n')
    predict([f"ckpt={tiny_run}", f"input={tmp_path / 'gold.jsonl'}", f"output={tmp_path / 'gold.csv'}"])
    header, row = (tmp_path / "gold.csv").read_text().splitlines()
    assert header == "id,text,label,predicted_label,predicted_prob,predicted_top_words"
    assert row.startswith("7,superb,pos,")
    # the html= page names the run and its attention, and shows the true label where a row has one
    (tmp_path / "gold2.jsonl").write_text('{"text": "superb", "label": "pos"}\n{"text": "dull"}\n')
    predict([f"ckpt={tiny_run}", f"input={tmp_path / 'gold2.jsonl'}", f"html={tmp_path / 'gold.html'}"])
    shown = (tmp_path / "gold.html").read_text()
    assert f"<b>{tiny_run.name}: dot attention (" in shown
    assert shown.count(", true label: pos)</h3>") == 1 and shown.count("true label") == 1

    # column= names another text column; a run folder stands for its best checkpoint
    (tmp_path / "col.csv").write_text('id,review\n1,superb film\n2,"dull, awful"\n')
    by_col = predict([f"ckpt={tiny_run}", f"input={tmp_path / 'col.csv'}", "column=review"])
    assert [q.tokens for q in by_col] == [["superb", "film"], ["dull", "awful"]]
    error_of([f"ckpt={tiny_run}", f"input={tmp_path / 'col.csv'}"], "no 'text' column", "['id', 'review']")


def test_blank_lines_of_a_text_file_are_skipped_and_counted(tiny_run, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("great film\n\n   \nawful film\n")
    preds = predict([f"ckpt={best(tiny_run)}", f"input={tmp_path / 'in.txt'}"])
    assert [q.tokens for q in preds] == [["great", "film"], ["awful", "film"]]
    assert "skipped 2 blank line(s)" in capsys.readouterr().err


def one_line_error(argv, monkeypatch, capsys, *needles):
    """`attnclf predict *argv` refused from its command line: a line on stderr, exit status 2."""
    capsys.readouterr()
    assert attnclf_in_process(["predict", *argv], monkeypatch) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: ") and all(n in last for n in needles), last


def error_of(argv, *needles):
    """predict(argv) refused with an AttnclfError (the CLI prints it as one line and exits 2)."""
    with pytest.raises(AttnclfError) as e:
        predict(argv)
    message = str(e.value)
    assert "\n" not in message and all(n in message for n in needles), message


def test_bad_checkpoints(tiny_run, tmp_path, monkeypatch, capsys):
    one_line_error([f"ckpt={tmp_path / 'none.ckpt'}", "text=x"], monkeypatch, capsys, "checkpoint not found")
    torn = tmp_path / "run" / "checkpoints" / "torn.ckpt"
    torn.parent.mkdir(parents=True)
    torn.write_bytes(open(best(tiny_run), "rb").read()[:5000])
    error_of([f"ckpt={torn}", "text=x"], "not a readable checkpoint")
    other = tmp_path / "run" / "checkpoints" / "other.ckpt"
    torch.save({"weights": torch.zeros(2)}, other)
    error_of([f"ckpt={other}", "text=x"], "not a Lightning checkpoint")
    # a pickle that would run code when unpickled is refused, not run
    evil = tmp_path / "run" / "checkpoints" / "evil.ckpt"
    evil.write_bytes(b"cos\nsystem\n(S'touch " + str(tmp_path / "pwned").encode() + b"'\ntR.")
    error_of([f"ckpt={evil}", "text=x"], "evil.ckpt")
    assert not (tmp_path / "pwned").exists()


def test_missing_vocabulary(tiny_run, tmp_path):
    lonely = tmp_path / "checkpoints" / "model.ckpt"
    lonely.parent.mkdir()
    lonely.write_bytes(open(best(tiny_run), "rb").read())
    error_of([f"ckpt={lonely}", "text=x"], "vocabulary file missing", "vocab.json")


def test_bad_predict_inputs(tiny_run, tmp_path, monkeypatch, capsys):
    ckpt = f"ckpt={best(tiny_run)}"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\nbad \xff\xfe line\n")
    one_line_error([ckpt, f"input={bad}"], monkeypatch, capsys, "line 2", "not valid UTF-8")
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("review,stars\ngood,5\n")
    error_of([ckpt, f"input={nocol}"], "no 'text' column", "review", "stars")
    error_of([ckpt, "text=x", "colour=red"], "unknown argument", "ckpt")
    error_of([ckpt, f"input={tmp_path / 'x.docx'}"], "input file not found")
    (tmp_path / "x.docx").write_text("x")
    error_of([ckpt, f"input={tmp_path / 'x.docx'}"], "unknown file type", ".jsonl")
    error_of([ckpt, "text=x", "batch_size=0"], "batch_size='0'")
    error_of([ckpt], "exactly one of")
    error_of([ckpt, "text="], "text= is empty")
    error_of([ckpt, "text=  "], "text= is empty")
    for name, content in (("empty.txt", ""), ("blank.txt", "\n \n"), ("empty.csv", "id,text\n"), ("empty.jsonl", "")):
        (tmp_path / name).write_text(content)
        error_of([ckpt, f"input={tmp_path / name}"], f"input={tmp_path / name} holds no review to classify")
    if not torch.cuda.is_available():
        error_of([ckpt, "text=x", "device=cuda"], "device='cuda': no GPU found", "device=cpu")
    error_of([ckpt, "text=x", "device=tpu9"], "device='tpu9'", "allowed: cpu, cuda")
    # a row with nothing to classify is refused, as text= is (and as the Python API does)
    holes = tmp_path / "holes.csv"
    holes.write_text('id,text\n1,good film\n2,\n3," "\n')
    error_of([ckpt, f"input={holes}"], f"input={holes}: the 'text' of rows 2, 3: empty, nothing to classify")
    # the files to write are checked before any work: the checkpoint named here does not even exist
    (tmp_path / "a_file").write_text("x")
    nothing = f"ckpt={tmp_path / 'none.ckpt'}"
    error_of([nothing, "text=hi", f"output={tmp_path / 'out.xlsx'}"], "unknown file type '.xlsx'", ".csv")
    error_of([nothing, "text=hi", f"output={tmp_path / 'a_file' / 'o.csv'}"], "output=", "a_file is a file")
    error_of([nothing, "text=hi", f"html={tmp_path / 'a_file' / 'x.html'}"], "html=", "a_file is a file")
    error_of([nothing, "text=hi", f"html={tmp_path}"], "is a folder; give a file name")
    error_of([nothing, "text=hi", f"output={tmp_path}"], f"output={tmp_path} is a folder; give a file (.csv, .jsonl)")
    error_of([nothing, f"input={tmp_path}"], f"input={tmp_path} is a folder; give a file (.txt, .csv")
    error_of([nothing, "text=hi", "num_threads=0"], "num_threads='0' must be a positive integer")
    before = torch.get_num_threads()
    predict([ckpt, "text=a great film", "num_threads=1"])  # (as train.py takes it)
    assert torch.get_num_threads() == before  # the caller's threads, put back after the command
    # a page in a folder that is not there yet: the folder is made
    capsys.readouterr()
    predict([ckpt, "text=a great film", f"html={tmp_path / 'new' / 'deeper' / 'page.html'}"])
    assert "great" in (tmp_path / "new" / "deeper" / "page.html").read_text()
    assert f"made its folder {tmp_path / 'new' / 'deeper'}" in capsys.readouterr().err  # (said, not silent)
    # bytes that are not UTF-8 (sys.argv holds them as surrogate escapes): refused, not read as escapes
    error_of([ckpt, "text=caf\udce9 au lait"], "text= holds bytes that are not UTF-8 (at character 4)")
    # JSON Lines whose rows differ: the rows without the text named
    (tmp_path / "mixed.jsonl").write_text('{"text": "superb"}\n{"review": "dull"}\n{"text": "fine"}\n')
    error_of([ckpt, f"input={tmp_path / 'mixed.jsonl'}"], "row(s) 2 have no 'text' key (the other rows have it)")
    # a review longer than the run reads: read in part, and said
    predict([ckpt, "text=" + "awful " * 1500])
    assert "1 review(s) longer than the run reads (1000 tokens, head_tail) were read in part: #1" in (
        capsys.readouterr().err
    )


def test_eval_refuses_bad_values_before_reading_anything(tmp_path):
    """attnclf eval batch_size=0, and a GPU asked for where there is none: one line each, before any checkpoint or
    data is read (the checkpoint an empty file, the data not there)."""

    from attnclf.commands.eval import evaluate

    (tmp_path / "none").write_bytes(b"")
    cases = [("batch_size=0", "batch_size=0 must be a positive integer"), ("device=npu", "device='npu'")]
    if not torch.cuda.is_available():
        cases.append(("device=cuda", "device='cuda': no GPU found"))
    for override, message in cases:
        cfg = compose_cfg(
            config_name="eval", overrides=[f"ckpt={tmp_path / 'none'}", "data.path=/no/such/data", override]
        )
        with pytest.raises(AttnclfError) as e:
            evaluate(cfg)
        assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_html_page_shades_the_users_own_text_with_a_legend(tiny_run, tmp_path):
    """attnclf predict html=: the review as written (case, punctuation, markup-free spacing) with the words the
    model read shaded by their weights, the words truncation left out in grey, and a legend."""
    from attnclf.presentation.html import predictions_page

    clf = TrainedClassifier.from_checkpoint(tiny_run)
    text = "Great film, REALLY moving!<br />Not dull."
    page = predictions_page(clf.predict([text, "awful " * 1500]))
    assert ">Great</span>" in page and ">REALLY</span>" in page and "film</span>, <span" in page
    assert "moving</span><span" in page and "!</span><br><span" in page  # (<br />: a line break, not markup)
    assert "class='legend'" in page and "not read" in page  # (the long review was cut to 1000 tokens)
    assert page.count("class='cut'") == 1500 - 1000 + 1  # (+1: the legend's own grey sample)
    shaded = [q.weights for q in clf.predict([text])][0]
    assert page.count("title='attention ") == len(shaded) + 1000
    # a true label and the page's about line are text, never markup
    marked = predictions_page(clf.predict(["superb"]), about="<b id=x>", gold=["<i id=y>"])
    assert "<b id=x>" not in marked and "&lt;b id=x&gt;" in marked
    assert "<i id=y>" not in marked and "true label: &lt;i id=y&gt;)</h3>" in marked
