"""scripts/report.py on sweep folders written here (metrics.json and Hydra's overrides.yaml and config.yaml,
no training)."""

import json
import re
import subprocess
import sys

from conftest import ROOT


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
    return subprocess.run(
        [sys.executable, "scripts/report.py", str(folder), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
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


def test_a_setting_is_the_composed_config_not_how_it_was_spelled(tmp_path):
    """Seeds 1-2 give regularizer=adversarial on the command line, seed 3 gets it from the experiment: one
    setting. A run whose config differs (regularizer none) is another, though its overrides look like seed 3's."""

    def config(attention, seed, regularizer="adversarial"):
        return {
            "attention": attention,
            "seed": seed,
            "ckpt_path": None,
            "regularizer": {"name": regularizer},
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
