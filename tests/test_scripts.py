"""The benchmark scripts of scripts/ run (timings are not tested, only that they run and agree with the references:
`pytest -m bench`), and the tools that were scripts before they were `attnclf` commands."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch
from helpers.commands import attnclf_in_process
from helpers.config import ROOT

from attnclf.errors import AttnclfError


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_attention_quick(tmp_path):
    r = subprocess.run(
        [sys.executable, "scripts/bench_attention.py", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "dot == fused SDPA (pooling), additive == v^T tanh(W_q q + W_k k): OK" in r.stdout
    assert "growth in time" in r.stdout
    rows = (tmp_path / "attention_cpu.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 2 * 3  # header + forms x lengths x methods
    assert (tmp_path / "attention_cpu.png").stat().st_size > 0


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_train_quick(tiny_imdb, tmp_path):
    """Contenders run on tiny data and their ratios are printed (the starting loop and the product here:
    each contender is a process of its own, ~10 s of imports; the kernel runs in the interleaved test)."""
    r = subprocess.run(
        [
            sys.executable,
            "scripts/bench_train.py",
            "--quick",
            "--contenders",
            "doc",
            "product",
            "--data",
            str(tiny_imdb),
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for contender in ("doc", "product"):
        assert re.search(rf"^{contender} +[\d,]+ +[\d,]+ +[\d,]+ ", r.stdout, re.M), r.stdout
    assert re.search(r"^ratio product/doc: \d+\.\d\d$", r.stdout, re.M), r.stdout


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_step_tiny():
    """The step breakdown runs for every mechanism asked and prints every part (additive: its matmul floor too),
    and each whole step as a ratio to the first's."""
    args = ["--batch", "4", "--length", "12", "--embed-dim", "8", "--hidden-dim", "8", "--vocab", "50"]
    r = subprocess.run(
        [
            sys.executable,
            "scripts/bench_step.py",
            *args,
            "--repeats",
            "1",
            "--threads",
            "1",
            "--attention",
            "dot",
            "additive",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for part in ("whole step", "embedding + dropout", "encoder (BiGRU)", "attention pooling", "optimizer step"):
        assert re.search(rf"^{re.escape(part)} +[\d.]+ \( *\d+%\) +[\d.]+ \( *\d+%\)$", r.stdout, re.M), r.stdout
    assert re.search(r"^  its key-projection matmuls +- +[\d.]+ \( *\d+%\)$", r.stdout, re.M), r.stdout
    assert re.search(r"^whole step x dot's +1\.00 +\d+\.\d\d$", r.stdout, re.M), r.stdout


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_bench_regularizer_tiny():
    """Each regulariser's training step is timed, each as a multiple of regularizer=none's."""
    args = ["--batch", "4", "--unlabeled-batch", "4", "--length", "12", "--vocab", "50", "--repeats", "1"]
    r = subprocess.run(
        [sys.executable, "scripts/bench_regularizer.py", *args, "--threads", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("none", "adversarial", "virtual_adversarial"):
        assert re.search(rf"^  regularizer={name} +[\d.]+ ms a step +[\d.]+x$", r.stdout, re.M), r.stdout
    assert re.search(r"^  regularizer=none +[\d.]+ ms a step +1\.00x$", r.stdout, re.M), r.stdout


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_bench_remedies_tiny():
    """Every remedy's training step is timed for both attentions, each as a multiple of the plain model's."""
    args = ["--batch", "4", "--length", "12", "--vocab", "50", "--repeats", "1"]
    r = subprocess.run(
        [sys.executable, "scripts/bench_remedies.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for attention in ("dot", "additive"):
        line = re.search(rf"^{attention}: (.*)$", r.stdout, re.M)
        assert line, r.stdout
        got = re.findall(r"(\w+) [\d.]+ ms \(x([\d.]+)\)", line.group(1))
        assert [name for name, _ in got] == ["softmax", "orthogonal", "diversity", "sparsemax", "entmax15"]
        assert got[0][1] == "1.00"


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_precision_tiny():
    """The three precisions run; fp32 is the reference (error 0), the bf16 rows differ from it."""
    args = ["--batch", "4", "--length", "20", "--vocab", "100", "--repeats", "1", "--device", "cpu"]
    r = subprocess.run(
        [sys.executable, "scripts/bench_precision.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {
        m.group(1): m.groups()[1:] for m in re.finditer(r"^(.+?) +([\d.]+) +([\d,]+) +(\S+) +(\S+)$", r.stdout, re.M)
    }
    assert rows["fp32"][2:] == ("0.00e+00", "0.00e+00"), r.stdout
    for mode in ("bf16, GRU fp32", "bf16, GRU autocast"):
        assert 0 < float(rows[mode][3]) < 0.1, r.stdout  # bf16 rounding: small, not zero


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_tokenize(tiny_imdb):
    """The tokenising contenders run and give the same ids as the one-process tokenizer."""
    r = subprocess.run(
        [sys.executable, "scripts/bench_tokenize.py", "--data", str(tiny_imdb), "--workers", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for contender in ("one process", "the product's encode_texts", "datasets.map"):
        assert re.search(rf"^regex.*{re.escape(contender)}.* s .*identical ids: 240/240$", r.stdout, re.M), r.stdout


def test_compare_attention(tiny_run, tiny_run_additive, tiny_imdb, tmp_path, monkeypatch, capsys):
    ckpts = [json.loads((run / "metrics.json").read_text())["best_checkpoint"] for run in (tiny_run, tiny_run_additive)]
    args = [*ckpts, "--data", str(tiny_imdb), "--n", "2", "--min-tokens", "5", "--out", str(tmp_path)]
    assert attnclf_in_process(["compare-attention", *args], monkeypatch) == 0, capsys.readouterr().err[-2000:]
    assert sorted(p.name for p in tmp_path.glob("review_*.png")) == ["review_0.png", "review_1.png"]
    page = (tmp_path / "compare.html").read_text()
    assert page.count("<b>dot</b>") == 2 and page.count("<b>additive</b>") == 2
    assert page.index("<b>dot</b>") < page.index("<b>additive</b>")  # (in the order given)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    assert events.Tags()["images"] == ["compare/review_0", "compare/review_1"]
    capsys.readouterr()
    # key=value, as the other commands that read a checkpoint take it: any number of runs (run folders too), in the
    # order given, two of one attention told apart by their folders
    three = [f"ckpt=[{tiny_run_additive},{ckpts[0]},{tiny_run}]", f"data={tiny_imdb}", "n=1", f"out={tmp_path / 'x'}"]
    assert attnclf_in_process(["compare-attention", *three], monkeypatch) == 0, capsys.readouterr().err[-2000:]
    page = (tmp_path / "x" / "compare.html").read_text()
    assert (
        page.index("<b>additive</b>") < page.index(f"<b>dot ({tiny_run.name})</b>")
        and page.count(f"<b>dot ({tiny_run.name}) #3</b>") == 1
    )
    from attnclf.commands.compare_attention import KEYS
    from attnclf.commands.keyvalue import as_flags

    # key=value, as the other commands that read a checkpoint take it: the same flags
    given = [f"ckpt=[{ckpts[0]},{ckpts[1]}]", f"data={tiny_imdb}", "n=2", "min_tokens=5", "--out", "o"]
    assert as_flags(given, KEYS) == [*ckpts, "--data", str(tiny_imdb), "--n", "2", "--min-tokens", "5", "--out", "o"]
    for bad, words in (
        ("nosuch=1", "'nosuch' is not a setting of compare-attention"),
        ("ckpt=[]", "give one or more"),
    ):
        with pytest.raises(AttnclfError, match=re.escape(words)):
            as_flags([bad], KEYS)


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_train_interleaved_quick(tiny_imdb, tmp_path):
    """--interleaved: the model with both GRU kernels and the kernel, in one process, with ratios to the kernel."""
    r = subprocess.run(
        [sys.executable, "scripts/bench_train.py", "--quick", "--interleaved", "--steps", "3", "--threads", "2"]
        + ["--data", str(tiny_imdb), f"paths.cache_dir={tmp_path / 'cache'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for name in (r"model \(auto\)", r"model \(padded\)", "kernel"):
        line = rf"^{name} +[\d,]+ useful train tokens/s +ratio to kernel \d+\.\d\d$"
        assert re.search(line, r.stdout, re.M), r.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the script runs for real (minutes)")
@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_gpu_check_says_why_it_stops_without_a_gpu(tiny_imdb):
    """With this interpreter given (PYTHON), not whichever `python` is on PATH: here none is."""
    env = {**os.environ, "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        ["bash", "scripts/gpu_check.sh", str(tiny_imdb)], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )
    assert r.returncode != 0 and "no CUDA device" in r.stderr, r.stderr[-2000:]


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_lm_runs():
    r = subprocess.run(
        [
            sys.executable,
            "scripts/bench_lm.py",
            "--vocab",
            "300",
            "--batch",
            "4",
            "--length",
            "10",
            "--repeats",
            "1",
            "--threads",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "GRUs + adaptive softmax" in r.stdout and "GRUs + sampled softmax" in r.stdout
    assert "GRUs + full softmax" in r.stdout


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_compare_datasets_compares_the_attentions_it_is_given(tmp_path, monkeypatch, capsys):
    """attention=[...] (or --attention): every mechanism named, on every fold or seed; a name that is not a
    mechanism is one line naming those that are, before any run."""
    import argparse

    from attnclf.commands.compare_datasets import KEYS, runs
    from attnclf.commands.keyvalue import as_flags

    assert as_flags(["--cr", "x", "attention=[dot,general,structured]"], KEYS) == [
        "--cr",
        "x",
        "--attention",
        "dot",
        "general",
        "structured",
    ]
    args = argparse.Namespace(attention=["dot", "general", "structured"], folds=3, seeds=[1, 2])
    overrides, n = runs("cr", "x.csv", args, [], own_test=False)
    assert "attention=dot,general,structured" in overrides and n == 9
    assert runs("imdb", "imdb", args, [], own_test=True)[1] == 6
    (tmp_path / "cr.csv").write_text("text,label\na,0\n")
    assert (
        attnclf_in_process(["compare-datasets", "--cr", str(tmp_path / "cr.csv"), "attention=[dot,nope]"], monkeypatch)
        == 2
    )
    err = capsys.readouterr().err
    assert "error: --attention 'nope'; allowed: additive, dot, general, multihead, structured" in err


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_compare_datasets_runs_each_protocol_and_reports_each_dataset_apart(tiny_imdb, tmp_path, monkeypatch, capsys):
    """Cross-validation for a file without a test split, seeds for data with one; one report, a section each;
    a second call skips what is done."""
    from helpers.own_data import examples, write

    short = write(tmp_path / "short.csv", examples(60, 2, 0, names=["neg", "pos"]), "csv")
    out = tmp_path / "out"
    tiny = [
        "experiment=smoke",
        "logger=none",
        "model.embed_dim=16",
        "model.hidden_dim=16",
        "data.batch_size=16",
        "model.embeddings=random",
        f"paths.cache_dir={tmp_path / 'cache'}",
    ]
    args = [
        "compare-datasets",
        "--cr",
        str(short),
        "--data",
        f"reviews={tiny_imdb}",
        "--folds",
        "2",
        "--seeds",
        "1",
        "--out",
        str(out),
        "--",
        *tiny,
    ]
    # a value every run would refuse, or data none can train on: one line before any run, no sweep folder
    # (the command runs in this process; its runs are processes of their own)
    for extra, message in (
        (["model.hidden_dim=0"], "error: cr ({short}): model.hidden_dim=0 must be a positive"),
        (["data.label_column=text"], "error: cr ({short}): data.label_column='text' is data."),
        (
            ["data.folds=5"],
            "attnclf compare-datasets: error: -- data.folds=5: compare-datasets sets data.folds itself (--folds K)",
        ),
    ):
        assert attnclf_in_process([*args, *extra], monkeypatch) == 2
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1].startswith(message.format(short=short)), err
        assert err.count("error:") == 1 and not out.exists()
    assert attnclf_in_process(args, monkeypatch) == 0
    # one line a run finished
    said = re.findall(r"\[\d+ of \d+ runs\][^\n]*", capsys.readouterr().out)
    expected = [f"[{k} of 6 runs] cr run {k} of 4 finished" for k in (1, 2, 3, 4)]
    expected += [f"[{k + 4} of 6 runs] reviews run {k} of 2 finished" for k in (1, 2)]
    assert [line.split(";")[0] for line in said] == expected
    assert all(" so far, about " in line and line.endswith(" left") for line in said)
    # (--data's protocol from its splits: tiny_imdb has a test split, so seeds)
    assert (
        len(list((out / "cr").rglob("metrics.json"))) == 4 and len(list((out / "reviews").rglob("metrics.json"))) == 2
    )
    text = (out / "report.md").read_text()
    assert text.count("## Data: ") == 2 and "(2 pairs over 1 setting(s), paired t-test)" in text
    assert attnclf_in_process(args, monkeypatch) == 0 and "cr: 4 runs already in" in capsys.readouterr().out
    assert attnclf_in_process(["compare-datasets"], monkeypatch) == 2
    assert "give at least one dataset" in capsys.readouterr().err
    assert attnclf_in_process(["compare-datasets", "--data", "no-path", "--out", str(out)], monkeypatch) == 2
    assert "--data 'no-path': give NAME=PATH" in capsys.readouterr().err
    assert attnclf_in_process(["compare-datasets", "--data", f"gone={tmp_path / 'gone'}"], monkeypatch) == 2
    assert capsys.readouterr().err.strip().endswith(f"error: --data gone={tmp_path / 'gone'}: does not exist")


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_short_texts_prints_both_speeds_and_their_ratio(tiny_imdb, tmp_path):
    from helpers.own_data import examples, write

    short = write(tmp_path / "short.csv", examples(60, 2, 0, names=["neg", "pos"]), "csv")
    r = subprocess.run(
        [
            sys.executable,
            "scripts/bench_short_texts.py",
            "--long",
            str(tiny_imdb),
            "--short",
            str(short),
            "--steps",
            "3",
            "--repeats",
            "1",
            "--threads",
            "1",
            "--",
            "model.embed_dim=16",
            "model.hidden_dim=16",
            "data.batch_size=8",
            "model.embeddings=random",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "useful tokens/s   short/long" in r.stdout and "3 steps, 1 threads, median of 1" in r.stdout


def test_imbalance_makes_a_smaller_copy_with_a_rare_class(tmp_path, monkeypatch, capsys):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    for split, n in (("train", 300), ("test", 100)):
        (src / f"{split}.jsonl").write_text(
            "".join(json.dumps({"text": f"t{i}", "label": i % 3}) + "\n" for i in range(n))
        )
    args = ["imbalance", str(src), str(out), "--rows", "train=100", "test=50", "--rare", "2=0.1"]
    assert attnclf_in_process(args, monkeypatch) == 0
    rows = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 100 and sum(r["label"] == 2 for r in rows) == 10 and len({r["text"] for r in rows}) == 100
    assert sum(json.loads(x)["label"] == 2 for x in (out / "test.jsonl").read_text().splitlines()) == 5
    said = capsys.readouterr().out
    assert "train {'0': " in said and "'2': 10}" in said
    assert attnclf_in_process([*args[:2], str(tmp_path / "again"), *args[3:]], monkeypatch) == 0
    assert (tmp_path / "again" / "train.jsonl").read_text() == (out / "train.jsonl").read_text()  # (seeded)
    # a split that cannot give the rows asked (the last one), a flag's bad value, a split with no file, a line
    # that is not a labelled row: one line, exit 2, and nothing written
    (src / "torn.jsonl").write_text('{"text": "a", "label": 0}\n{"text": "b", "lab\n')
    (src / "nolabel.jsonl").write_text('{"text": "a", "class": 0}\n')
    for bad, line in (
        (["--rows", "train=100", "test=90", "--rare", "2=0.5"], "test has 33 rows of class 2 and 67 others; asked"),
        (["--rows", "train=many", "--rare", "2=0.1"], "--rows 'train=many': give NAME=VALUE, VALUE a whole number"),
        (["--rows", "train=10", "--rare", "2=1.5"], "--rare 2=1.5 --rows train=10: SHARE in [0, 1], each N 1 or"),
        (["--rows", "dev=10", "--rare", "2=0.1"], f"{src / 'dev.jsonl'}: no such file"),
        (["--rows", "torn=1", "--rare", "2=0.1"], f"{src / 'torn.jsonl'}: line 2 is not JSON (Unterminated string"),
        (["--rows", "nolabel=1", "--rare", "2=0.1"], f'{src / "nolabel.jsonl"}: line 1 has no "label"'),
    ):
        capsys.readouterr()
        assert attnclf_in_process(["imbalance", str(src), str(tmp_path / "no"), *bad], monkeypatch) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {line}"), err
        assert not (tmp_path / "no").exists()


@pytest.mark.bench  # (a benchmark script on tiny inputs, in a process of its own)
@pytest.mark.slow
def test_bench_serve_tiny(tiny_run, tiny_imdb, tmp_path):
    """The serving benchmark on the tiny run: every setting's row, offline beside, the memory line, the JSON."""
    out = tmp_path / "bench_serve.json"
    args = [
        "--ckpt",
        str(tiny_run),
        "--data",
        str(tiny_imdb),
        "--reviews",
        "40",
        "--requests",
        "8",
        "--clients",
        "1,2",
        "--texts",
        "1,3",
        "--memory",
        "150",
        "--threads",
        "1",
        "--out",
        str(out),
    ]
    r = subprocess.run(
        [sys.executable, "scripts/bench_serve.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:] + r.stdout[-2000:]
    assert re.search(
        r"^offline TrainedClassifier\.predict: [\d.]+ reviews/s \(40 reviews, 1 threads; [\d.]+ to [\d.]+ over",
        r.stdout,
        re.M,
    )
    for clients, texts in ((1, 1), (2, 1), (1, 3), (2, 3)):
        assert re.search(rf"^\| {clients} \| {texts} \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|", r.stdout, re.M), (
            r.stdout
        )
    assert re.search(r"^resident memory: \d+ MiB after 100 requests, \d+ MiB after 150 ", r.stdout, re.M)
    result = json.loads(out.read_text())
    assert [(x["clients"], x["texts"], x["requests"]) for x in result["rows"]] == [
        (1, 1, 8),
        (2, 1, 8),
        (1, 3, 8),
        (2, 3, 8),
    ]


def test_the_attention_table_is_the_mean_and_sd_over_each_mechanisms_seeds(tmp_path):
    """scripts/attentions_table.py: a row per mechanism found, the default's first, each figure the mean ± sd
    of its runs, and the fastest run's seconds an epoch as a ratio to the default's fastest."""

    def run(name, acc, tau, epoch_s):
        folder = tmp_path / name
        (folder / "faithfulness_test").mkdir(parents=True)
        agree = {"mean": tau, "significant": 0.5}
        eraser = {"attention": {"aopc_comprehensiveness": 0.2, "aopc_sufficiency": 0.1}}
        faith = {"agreement": {"magnitude": {"gradient": agree, "loo": agree}}, "eraser": {"sources": eraser}}
        (folder / "metrics.json").write_text(json.dumps({"test/acc": acc, "epoch_seconds": epoch_s}))
        (folder / "faithfulness_test" / "faithfulness.json").write_text(json.dumps(faith))

    run("structured_s1", 0.90, 0.3, 30.0)
    run("dot_s1", 0.80, 0.1, 20.0)
    run("dot_s2", 0.84, 0.3, 50.0)
    run("general_s1", 0.82, 0.4, 25.0)
    (tmp_path / "multihead_s1").mkdir()  # (a run not measured yet: left out)
    r = subprocess.run(
        [sys.executable, "scripts/attentions_table.py", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| dot", "| general", "| structured"]
    assert (
        rows[0]
        == "| dot | 2 | 82.00 ± 2.83 | 0.20 ± 0.14 | 0.20 ± 0.14 | 0.200 ± 0.000 | 0.100 ± 0.000 | 20.0 | 1.00 |"
    )
    assert rows[2].endswith("| 30.0 | 1.50 |") and "× dot's" in r.stdout.splitlines()[0]


@pytest.mark.bench
def test_bench_serve_pages_tiny(tiny_run, tiny_run_additive, tiny_imdb, tmp_path):
    """--pages on copies of two tiny runs: /browse's first visit from the start, the median review's page and
    a click's page, each said with its seconds (the copies: it removes the rows a run folder kept)."""
    import shutil

    runs = [shutil.copytree(r, tmp_path / r.name) for r in (tiny_run, tiny_run_additive)]
    args = ["--ckpt", str(runs[0]), "--ckpt", str(runs[1]), "--data", str(tiny_imdb), "--reviews", "20", "--pages"]
    r = subprocess.run(
        [sys.executable, "scripts/bench_serve.py", *args, "--threads", "1", "--out", str(tmp_path / "x.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:] + r.stdout[-2000:]
    assert re.search(r"^/browse's first visit, 2 models, from the server's start: [\d.]+ s$", r.stdout, re.M)
    assert re.search(r"^the median review's page \(\d+ tokens\), read the first time: [\d.]+ s$", r.stdout, re.M)
    assert re.search(r"^a click's page \(a word deleted, the redirect followed\): [\d.]+ s$", r.stdout, re.M)


@pytest.mark.bench
def test_bench_pages_tiny(tiny_run):
    r = subprocess.run(
        [sys.executable, "scripts/bench_pages.py", "--ckpt", str(tiny_run)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"^/docs: \d+ us a page, \d+ characters$", r.stdout, re.M), r.stdout
    assert re.search(r"^head: \d+ us a page, \d+ characters$", r.stdout, re.M), r.stdout


@pytest.mark.bench
def test_bench_loo_tiny(tiny_run):
    """Both readings of leave-one-out timed, a row a length and grouping."""
    r = subprocess.run(
        [sys.executable, "scripts/bench_loo.py", "--ckpt", str(tiny_run), "--threads", "1", "--lengths", "8,120"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = re.findall(r"^(\d+) \| (\d+) \| [\d.]+ \| [\d.]+ \| [\d.]+$", r.stdout, re.M)
    assert rows == [("8", "1"), ("8", "500"), ("120", "1"), ("120", "33")], r.stdout
