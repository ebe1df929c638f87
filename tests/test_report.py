"""attnclf report on sweep folders written here (metrics.json and Hydra's overrides.yaml and config.yaml,
no training)."""

import io
import json
import re
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

from attnclf.commands import main


def write_run(root, name, attention, seed, lr, hidden, acc, loss, overrides=None, config=None):
    run = root / name
    (run / ".hydra").mkdir(parents=True)
    if overrides is None:
        overrides = [f"attention={attention}", f"optimizer.lr={lr}", f"model.hidden_dim={hidden}", f"seed={seed}"]
    if config is not None:  # (Hydra's composed config, as YAML; JSON is YAML)
        (run / ".hydra" / "config.yaml").write_text(json.dumps(config))
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    hparams = {"attention": attention, "seed": seed, "optimizer.lr": lr, "model.hidden_dim": hidden}
    metrics = {
        "attention": attention,
        "seed": seed,
        "val/acc": acc,
        "test/acc": acc,
        "test/loss": loss,
        "epochs": 1,
        "fit_seconds": 10.0,
        "train_tokens_per_sec": 1000.0,
        "hparams": hparams,
    }
    (run / "metrics.json").write_text(json.dumps(metrics))


def report(folder, *args):
    """`attnclf report folder *args` in this process (it trains nothing and reads only files): its exit status,
    and what it printed, as a finished process holds them."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            status = main(["report", str(folder), *args])
        except SystemExit as e:
            status = e.code
    return subprocess.CompletedProcess(
        ["attnclf", "report", str(folder), *args], status, out.getvalue(), err.getvalue()
    )


def grid(tmp_path):
    """The README's grid: attention x lr x hidden, one seed. Additive is 0.01 ahead in every setting;
    across settings accuracy differs by far more, so pairing by seed alone would mix settings."""
    n = 0
    for lr, lr_gain in ((1e-3, 0.0), (3e-4, -0.2)):
        for hidden, h_gain in ((64, 0.0), (128, 0.1)):
            for attention, a_gain in (("dot", 0.0), ("additive", 0.01)):
                acc = 0.6 + lr_gain + h_gain + a_gain
                write_run(tmp_path, f"{n}_{attention}", attention, 1, lr, hidden, acc, 1 - acc)
                n += 1
    return tmp_path


def test_pairs_runs_that_differ_only_in_the_attention(tmp_path):
    r = report(grid(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "report.md").read_text()
    assert "Paired runs that differ only in the attention (4 pairs over 4 setting(s), paired t-test)" in text
    # every pair differs by +1.00 pt (no spread: the t-test has no p); the sign-flip test sees 4 of 4 positive
    assert "(4 pairs over 4 setting(s), exact sign-flip test): no significant difference " in text
    assert "additive − dot +1.00 pt, p = 0.125" in text
    # the mean ± sd table is on the terminal too, drawn as a table, and the run says where report.md is
    assert " additive   4     56.00 ± 12.91 " in r.stdout and f"written {tmp_path / 'report.md'}" in r.stdout


def test_objective_direction_and_unknown_objective(tmp_path):
    grid(tmp_path)
    by_loss = report(tmp_path, "--objective", "test/loss")
    assert by_loss.returncode == 0, by_loss.stderr[-2000:]
    best = re.search(r"^best: test/loss ([\d.]+) ", by_loss.stdout, re.M)
    lowest = min(json.loads(p.read_text())["test/loss"] for p in tmp_path.glob("*/metrics.json"))
    assert best and best.group(1) == f"{lowest:.4f}"
    first = re.search(r"^\| 1 \| ([\d.]+) \|", by_loss.stdout, re.M)
    assert first.group(1) == best.group(1)  # the lowest loss ranks first

    bad = report(tmp_path, "--objective", "test/f1")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "error: --objective='test/f1'; allowed: val/acc, test/acc, test/loss, train_tokens_per_sec"
    ]


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_setting_is_the_composed_config_not_how_it_was_spelled(tmp_path):
    """Seeds 1-2 give regularizer=adversarial on the command line, seed 3 gets it from the experiment: one
    setting. A run whose config differs (regularizer none) is another, though its overrides look like seed 3's."""

    def config(attention, seed, regularizer="adversarial"):
        return {
            "attention": attention,
            "seed": seed,
            "ckpt_path": None,
            "regularizer": {"name": regularizer},
            **({"min_steps": None} if seed == 2 else {}),  # (a key added since, null: the same setting)
            # where a run logs is no setting: seed 1 to TensorBoard, the others to nothing
            "logger": {"tensorboard": {"_target_": "pytorch_lightning.loggers.TensorBoardLogger"}} if seed == 1 else {},
            "paths": {"output_dir": f"/runs/{attention}_{seed}"},
            "model": {"embeddings": "word2vec", "hidden_dim": 128},
            "optimizer": {"lr": 0.002},
        }

    for attention, gain in (("dot", 0.0), ("additive", 0.01)):
        for seed in (1, 2, 3):
            spelled = ["experiment=pretrained"] + (["regularizer=adversarial"] if seed < 3 else [])
            overrides = spelled + [f"attention={attention}", f"seed={seed}"]
            acc = 0.9 + gain + seed / 1000
            write_run(
                tmp_path,
                f"{attention}_s{seed}",
                attention,
                seed,
                None,
                None,
                acc,
                1 - acc,
                overrides,
                config(attention, seed),
            )
        old = ["experiment=pretrained", f"attention={attention}", "seed=1"]
        write_run(
            tmp_path, f"old_{attention}_s1", attention, 1, None, None, 0.8, 0.2, old, config(attention, 1, "none")
        )
    r = report(tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "report.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| attention=") or ln.startswith("| regularizer")]
    assert [ln.split(" | ")[:2] for ln in rows] == [
        ["| attention=additive regularizer.name=adversarial", "1, 2, 3"],
        ["| attention=additive regularizer.name=none", "1"],
        ["| attention=dot regularizer.name=adversarial", "1, 2, 3"],
        ["| attention=dot regularizer.name=none", "1"],
    ]
    assert "(4 pairs over 2 setting(s), paired t-test)" in text


def load_report_module():
    from attnclf.commands import report

    return report


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_runs_of_different_data_are_reported_apart(tmp_path):
    """IMDb, SST-5 and a CSV under one folder: a section per dataset, each paired within itself; never
    pooled (which printed p = nan)."""
    gains = {"imdb": 0.01, "sst5": -0.02, "my.csv": 0.005}
    for data, gain in gains.items():
        for seed in (1, 2, 3):
            for attention, a_gain in (("dot", 0.0), ("additive", gain)):
                acc = {"imdb": 0.9, "sst5": 0.4, "my.csv": 0.7}[data] + a_gain + seed / 1000 * (attention == "dot")
                config = {"attention": attention, "seed": seed, "data": {"path": f"/data/{data}", "name": None}}
                write_run(
                    tmp_path,
                    f"{data}_{attention}_s{seed}",
                    attention,
                    seed,
                    None,
                    None,
                    acc,
                    1 - acc,
                    [f"data.path=/data/{data}", f"attention={attention}", f"seed={seed}"],
                    config,
                )
    r = report(tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "18 runs of 3 datasets: reported one dataset at a time" in r.stdout
    text = (tmp_path / "report.md").read_text()
    assert "p = nan" not in text
    sections = text.split("## Data: ")[1:]
    assert [s.splitlines()[0] for s in sections] == [
        "/data/imdb (6 runs)",
        "/data/my.csv (6 runs)",
        "/data/sst5 (6 runs)",
    ]
    for s in sections:
        assert "(3 pairs over 1 setting(s), paired t-test)" in s
    assert "dot is 2.20 pt more accurate" in sections[2] and "additive is 0.80 pt more accurate" in sections[0]
    assert all((tmp_path / f"val_acc_{i}.png").is_file() for i in (1, 2, 3))
    assert (tmp_path / "differences.png").stat().st_size > 5_000 and "![additive − dot per dataset]" in text


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_run_without_a_test_reads_as_not_measured(tmp_path):
    """metrics.json writes a value not measured as null (test=false: test/acc): read as nan, ranked last."""
    grid(tmp_path)
    m = json.loads((tmp_path / "0_dot" / "metrics.json").read_text())
    m["test/acc"] = m["test/loss"] = None
    (tmp_path / "0_dot" / "metrics.json").write_text(json.dumps(m))
    r = report(tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "(3 pairs over 3 setting(s), paired t-test)" in (tmp_path / "report.md").read_text()


def test_a_metrics_file_that_is_not_json_is_one_warning_and_the_rest_are_reported(tmp_path):
    grid(tmp_path)
    (tmp_path / "0_dot" / "metrics.json").write_text('{"val/acc": 0.8')  # (torn)
    r = report(tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"warning: {tmp_path / '0_dot' / 'metrics.json'} is not JSON" in r.stderr


def test_each_run_has_its_own_colour_and_one_validation_its_time(tmp_path):
    """Seeds of one attention in shades of its colour, each its own; and the wall-clock of a run that
    validated once is the time since its start, not 0 (its one validation was its first scalar)."""
    import time

    from torch.utils.tensorboard import SummaryWriter

    from attnclf.presentation.figures import run_colours

    module = load_report_module()
    runs = [{"attention": a, "seed": s, "dir": tmp_path / f"{a}{s}"} for a in ("dot", "additive") for s in (1, 2, 3)]
    colours = run_colours(runs)
    assert len(set(colours.values())) == 6
    blue = [colours[str(r["dir"])] for r in runs if r["attention"] == "dot"]
    assert all(c[2] > c[0] for c in blue)  # (blue shades) and the oranges red-heavy:
    assert all(colours[str(r["dir"])][0] > colours[str(r["dir"])][2] for r in runs if r["attention"] == "additive")

    writer = SummaryWriter(str(tmp_path / "once" / "tensorboard"))
    writer.add_scalar("val/acc", 0.8, global_step=390, walltime=time.time() + 90)
    writer.close()
    [(step, seconds, value)] = module.curve(tmp_path / "once")
    assert step == 390 and 85 < seconds < 95 and abs(value - 0.8) < 1e-6


def test_each_attention_has_its_own_colour_family_the_same_in_every_figure():
    """Five mechanisms and one of a user's own: six families, none shared; a mechanism keeps its family when
    others are left out (general is green beside dot alone too)."""
    from attnclf.presentation.figures import attention_families

    six = attention_families(["structured", "cosine", "dot", "general", "additive", "multihead"])
    assert len(set(six.values())) == 6 and six["dot"] == "Blues" and six["additive"] == "Oranges"
    assert attention_families(["general", "dot"]) == {"dot": "Blues", "general": six["general"]}
    assert list(six) == ["dot", "additive", "cosine", "general", "multihead", "structured"]


def test_the_bootstrap_interval_resamples_runs_and_spans_their_spread():
    """The 95% interval of the mean resamples the runs (with replacement): for five runs 2 points apart it
    spans about +-1.8 points around their mean, not a collapsed interval at the mean."""
    from attnclf.commands import report as report_module

    xs = [0.80, 0.82, 0.84, 0.86, 0.88]
    lo, hi = report_module.bootstrap_ci(xs)
    assert 0.80 <= lo < 0.83 and 0.85 < hi <= 0.88, (lo, hi)
    assert report_module.bootstrap_ci(xs) == (lo, hi)  # (seeded)
    assert report_module.bootstrap_ci([0.9, 0.9, 0.9]) == (0.9, 0.9)


def test_five_attentions_every_pair_paired_by_seed_and_holm_corrected(tmp_path):
    """Five mechanisms x 4 seeds: one row per pair (10), each paired by seed; multihead is 1 pt ahead of dot in
    every seed (t-test p tiny, so significant after Holm); general and dot differ by noise only."""
    gains = {"dot": 0.0, "additive": 0.004, "general": 0.0, "multihead": 0.01, "structured": -0.003}
    noise = {1: 0.001, 2: -0.002, 3: 0.0015, 4: -0.0005}
    for attention, gain in gains.items():
        for seed in (1, 2, 3, 4):
            wobble = noise[seed] * (attention == "general") + seed / 10000 * (attention == "multihead")
            acc = 0.85 + gain + wobble
            config = {"attention": {"_target_": f"pkg.{attention}", "k": 1}, "seed": seed}
            write_run(
                tmp_path,
                f"{attention}_s{seed}",
                attention,
                seed,
                None,
                None,
                acc,
                1 - acc,
                [f"attention={attention}", f"seed={seed}"],
                config,
            )
    r = report(tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "report.md").read_text()
    assert "p-values Holm-corrected over the 10 pairs compared" in text
    table = text.split("Holm-corrected")[1].split("\n\n")[1].splitlines()[2:]
    assert len(table) == 10
    rows = {tuple(ln.split(" | ")[:2]): ln.split(" | ") for ln in table if ln.startswith("| dot | ")}
    assert sorted(rows) == [("| dot", b) for b in ("additive", "general", "multihead", "structured")]
    assert rows[("| dot", "multihead")][2] == "4" and rows[("| dot", "multihead")][3].startswith("+1.0")
    assert rows[("| dot", "multihead")][-1] == "multihead more accurate |"
    assert rows[("| dot", "general")][-1] == "no significant difference |"
    # every row, not only dot's: Holm's p is never below the raw one, and the verdict is read from Holm's
    every = [ln.strip("| ").split(" | ") for ln in table]
    for a, b, _, diff, raw, adjusted, *_, verdict in every:
        if raw in ("nan", "-"):
            continue
        assert float(adjusted) >= float(raw)
        better = b if diff.startswith("+") else a
        expected = f"{better} more accurate" if float(adjusted) < 0.05 else "no significant difference"
        assert verdict == expected, (a, b, raw, adjusted, verdict)
    # a pair whose raw p is under 0.05 and Holm's over it: no verdict of "more accurate"
    assert any(float(c[4]) < 0.05 <= float(c[5]) for c in every if c[4] not in ("nan", "-"))
