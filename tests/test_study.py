"""attnclf study: its stopping rule's false-positive rate under no difference (simulated through the same
functions), its refusals (one line, exit 2, nothing run), and a tiny study that stops by itself once its pair
is settled and, stopped, continues without running again what exists."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers.commands import attnclf_finished
from helpers.config import ROOT, tiny_overrides
from helpers.crippled import BLIND

from attnclf.analysis import sequential
from attnclf.analysis import significance as sig


def null_study(rng, looks: list[int], alpha: float, n: int = 2000, rope: float = 0.002) -> str:
    """One pair with no true difference through the rule: per-example difficulty shared by every run (one test
    set), each run's own seed shift; judged at each look on its first replicates. The first verdict reached."""
    difficulty = rng.beta(8, 2, n)
    k = looks[-1]
    shifts = rng.normal(0, 0.01, (2, k, 1))
    a = (rng.random((k, n)) < np.clip(difficulty + shifts[0], 0, 1)).astype(np.float64)
    b = (rng.random((k, n)) < np.clip(difficulty + shifts[1], 0, 1)).astype(np.float64)
    for c in looks:
        d = sig.difference(list(a[:c]), list(b[:c]), shared=True, level=1 - alpha)
        kind = sig.decide(d, d.p, alpha, rope)
        if kind != "not settled":
            return kind
    return "not settled"


def test_the_stopping_rule_keeps_false_positives_at_or_under_alpha():
    """1,000 pairs of equal mechanisms, judged at 3, 5, 8, 12 and 18 seeds, each look at 0.05 / 5: a false
    "better" in at most 5% of them. The same pairs judged at 0.05 at every look call far more of them better:
    the looks are what the correction pays for."""
    counts = sequential.look_counts(3, 5)
    assert counts == [3, 5, 8, 12, 18]
    rng = np.random.default_rng(0)
    ruled = [null_study(rng, counts, sequential.look_alpha(0.05, 5)) for _ in range(1000)]
    rng = np.random.default_rng(0)
    naive = [null_study(rng, counts, 0.05) for _ in range(1000)]
    rate, naive_rate = ruled.count("better") / 1000, naive.count("better") / 1000
    assert rate <= 0.05, rate
    assert naive_rate > 0.05 and naive_rate > 2 * rate, (rate, naive_rate)


def study(argv, monkeypatch, capfd):
    return attnclf_finished(["study", *argv], monkeypatch, capfd)


@pytest.mark.parametrize(
    "argv, said",
    [
        (["attention=[dot,nope]", "data=[t={data}]", "budget=8"], "attention: 'nope' is not a mechanism; allowed:"),
        (["attention=[dot,additive]", "data=[t=/no/such]", "budget=8"], "data: t=/no/such does not exist"),
        (["attention=[dot,additive]", "data=[t={data}]", "budget=5"], "budget=5 must be at least the first step's"),
        (["attention=[dot,additive]", "data=[t={data}]", "budget=ten"], "budget='ten' must be a whole number"),
        (["attention=[dot,additive]", "data=[t={data}]", "budget=8", "--", "seed=3"], "the study sets seed itself"),
        (["attention=[dot,additive]", "data=[t={data}]", "budget=8", "out={other}"], "holds another study"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_run(argv, said, tiny_imdb, tmp_path, monkeypatch, capfd):
    other = tmp_path / "other"
    other.mkdir()
    (other / "study.json").write_text(json.dumps({"attention": ["dot", "general"], "data": {"t": str(tiny_imdb)}}))
    argv = [a.format(data=tiny_imdb, other=other) for a in argv]
    if not any(a.startswith("out=") for a in argv):
        argv.append(f"out={tmp_path / 'study'}")
    r = study(argv, monkeypatch, capfd)
    assert r.returncode == 2 and said in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "study").exists() and sorted(p.name for p in other.iterdir()) == ["study.json"]


@pytest.mark.slow  # (processes of its own)
def test_a_tiny_study_stops_when_settled_and_continues_without_rerunning(tiny_imdb, tmp_path, monkeypatch, capfd):
    own = tmp_path / "own"
    own.mkdir()
    (own / "study_attention.py").write_text(BLIND)
    monkeypatch.syspath_prepend(str(own))
    monkeypatch.setenv("PYTHONPATH", str(own))
    out = tmp_path / "study"
    keep = [o for o in tiny_overrides(tiny_imdb, tmp_path) if not o.startswith(("data.path", "paths.output_dir"))]
    extra = [*keep, "trainer.max_epochs=8", "optimizer.lr=1e-2", "logger=none", "callbacks.attention_maps=null"]
    argv = ["attention=[dot,study_attention.Blind]", f"data=[tiny={tiny_imdb}]", "budget=12", "first=3", "looks=2"]
    argv += [f"out={out}", "--", *extra]
    r = study(argv, monkeypatch, capfd)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "step 1: tiny: dot to 3, study_attention.Blind to 3 seeds (6 runs); why: the first step" in r.stdout
    assert "every pair settled, equivalent, out of reach or past its last look (6 runs)" in r.stdout
    report = (out / "report.md").read_text()
    assert "| dot | blind | 3 | examples |" in report and "dot better by" in report
    finished = sorted(out.rglob("metrics.json"))
    assert len(finished) == 6
    # stopped in the middle: one run lost its result, as a run killed before its test
    lost = finished[-1]
    lost.unlink()
    r = study(argv, monkeypatch, capfd)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "step 2: tiny:" in r.stdout and "(1 runs)" in r.stdout
    assert len(list(out.rglob("metrics.json"))) == 6
    assert len(list((out / "tiny").glob("step2_*/*/metrics.json"))) == 1
    # run again when settled: nothing to run
    r = study(argv, monkeypatch, capfd)
    assert "step 3" not in r.stdout and "(6 runs)" in r.stdout
    # the results table of docs/results.md from the same folder
    script = [sys.executable, str(ROOT / "scripts" / "study_table.py"), str(out)]
    table = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert table.returncode == 0, table.stderr[-2000:]
    row = next(line for line in table.stdout.splitlines() if line.startswith("| tiny | dot | blind | 3 |"))
    assert "dot better by" in row and row.endswith("| 3 (as many) |"), row
    assert "6 runs" in table.stdout
    shutil.rmtree(own)
    assert sys.path  # (monkeypatch restores it)


def processes_with(word: str) -> list[int]:
    """The pids whose command line holds `word` (read from /proc)."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if word.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.slow  # (processes of its own)
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_a_killed_study_leaves_no_training_running(sig, tiny_imdb, tmp_path):
    """The study killed while its runs train: the `attnclf train` it started stops too (its parent-death
    signal), within 20 s, by SIGKILL as by SIGTERM."""
    import signal
    import time

    out = tmp_path / "study"
    keep = [o for o in tiny_overrides(tiny_imdb, tmp_path) if not o.startswith(("data.path", "paths.output_dir"))]
    argv = ["attention=[dot,additive]", f"data=[tiny={tiny_imdb}]", "budget=4", "first=2", f"out={out}"]
    # (runs that would train for minutes: none ends by itself while the test waits)
    extra = [*keep, "trainer.max_epochs=2000", "callbacks.early_stopping=null", "logger=none"]
    extra.append("callbacks.attention_maps=null")
    study = subprocess.Popen([sys.executable, "-m", "attnclf", "study", *argv, "--", *extra], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 240
        while not processes_with(f"hydra.sweep.dir={out}") and time.monotonic() < deadline:
            assert study.poll() is None, "the study ended before its runs started"
            time.sleep(0.5)
        children = processes_with(f"hydra.sweep.dir={out}")
        assert children, "no run started within 240 s"
        study.send_signal(getattr(signal, sig))
        study.wait(timeout=30)
        deadline = time.monotonic() + 20
        while processes_with(f"hydra.sweep.dir={out}") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert processes_with(f"hydra.sweep.dir={out}") == []
    finally:
        study.kill()
        for pid in processes_with(f"hydra.sweep.dir={out}"):
            os_kill(pid)


def os_kill(pid: int) -> None:
    import os
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
