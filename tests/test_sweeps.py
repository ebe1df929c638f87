"""Sweeps through Hydra's own sweepers and launchers, and 2-process DDP on CPU, on tiny data."""

import json
import re
import subprocess
import sys

import pytest
import torch
from helpers.commands import attnclf_finished, attnclf_in_process
from helpers.config import ROOT, compose_cfg, tiny_overrides
from omegaconf import OmegaConf

pytest.importorskip("optuna", reason='needs pip install -e ".[sweep]"')

QUIET = [
    "logger=none",
    "callbacks.rich_progress_bar=null",
    "callbacks.attention_maps=null",
    "trainer.max_epochs=1",
    "trainer.limit_train_batches=3",
    "trainer.limit_val_batches=2",
    "trainer.limit_test_batches=2",
    "trainer.num_sanity_val_steps=0",
]


def sweep_args(tiny_imdb, tmp_path, *args) -> list[str]:
    """`attnclf train -m`'s arguments for a sweep of tiny runs, `args` after the common ones."""
    # a key given on the command line is fixed for the sweep: leave out the ones the search varies
    fixed = [o for o in tiny_overrides(tiny_imdb, tmp_path)[2:] if not o.startswith("model.hidden_dim=")]
    common = [
        f"data.path={tiny_imdb}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        *fixed,
        "model.hidden_dim=16",
        *QUIET,
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
    ]
    if any(a.startswith(("hparams_search=", "model.hidden_dim=")) for a in args):
        common.remove("model.hidden_dim=16")
    return ["train", "-m", *common, *args]


def sweep(tiny_imdb, tmp_path, monkeypatch, capfd, *args):
    """`attnclf train -m ...` in this process, as a shell's command would run it (Hydra's launchers start
    from the process that calls them; submitit's starts processes of its own): its exit status and what it
    printed, as a finished process holds them."""
    return attnclf_finished(sweep_args(tiny_imdb, tmp_path, *args), monkeypatch, capfd)


def metrics(tmp_path):
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/metrics.json"))]


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_grid_sweep_and_report(tiny_imdb, tmp_path, monkeypatch, capfd, in_process):
    # the head-to-head, with 2 seeds
    r = sweep(tiny_imdb, tmp_path, monkeypatch, capfd, "experiment=compare", "seed=1,2")
    assert r.returncode == 0, r.stderr[-3000:]
    runs = metrics(tmp_path)
    assert len(runs) == 4
    assert {(m["attention"], m["seed"]) for m in runs} == {(a, s) for a in ("dot", "additive") for s in (1, 2)}

    assert attnclf_in_process(["report", str(tmp_path / "sweep")], monkeypatch) == 0
    best = max(runs, key=lambda m: m["val/acc"])
    assert f"best: val/acc {best['val/acc']:.4f}" in capfd.readouterr().out
    report = (tmp_path / "sweep" / "report.md").read_text()
    assert "| dot | 2 |" in report and "| additive | 2 |" in report  # runs per attention
    assert "p = " in report  # the paired test over the 2 seeds
    assert "| attention=dot | 1, 2 |" in report and "| attention=additive | 1, 2 |" in report  # by setting
    assert (tmp_path / "sweep" / "val_acc.png").stat().st_size > 0


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_failed_job_does_not_stop_the_sweep(tiny_imdb, tmp_path, monkeypatch, capfd, in_process):
    r = sweep(tiny_imdb, tmp_path, monkeypatch, capfd, "model.hidden_dim=0,16")
    assert r.returncode != 0  # the sweep reports the failure...
    assert "model.hidden_dim=0 must be a positive integer" in r.stderr
    assert [m["hparams"]["model.hidden_dim"] for m in metrics(tmp_path)] == [16]  # ...after running the rest


TINY_SEARCH = """# @package _global_
defaults:
  - imdb_optuna
hydra:
  sweeper:
    n_trials: 3
    params:
      attention: choice(dot, additive)
      optimizer.lr: tag(log, interval(1e-3, 1e-2))
      model.hidden_dim: choice(0, 8, 16)
"""


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_optuna_sweep_resumes_and_records_failures(tiny_imdb, tmp_path, monkeypatch, capfd, in_process):
    search = tmp_path / "conf" / "hparams_search"
    search.mkdir(parents=True)
    (search / "tiny_optuna.yaml").write_text(TINY_SEARCH)
    db = tmp_path / "optuna.db"
    args = [
        "hparams_search=tiny_optuna",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.sweeper.storage=sqlite:///{db}",
        "hydra.sweeper.study_name=tiny",
    ]
    # seeded here so that the three trials hold both a failing and a finished one (unseeded, all three fail
    # 1 time in 27, and a study without a finished trial ends in optuna's "Record does not exist")
    r = sweep(tiny_imdb, tmp_path, monkeypatch, capfd, *args, "hydra.sweeper.sampler.seed=1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "alembic" not in r.stdout + r.stderr  # (the study database's set-up lines: not the user's news)
    import optuna

    trials = optuna.load_study(study_name="tiny", storage=f"sqlite:///{db}").trials
    assert len(trials) == 3
    done = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    failed = [t for t in trials if t.state == optuna.trial.TrialState.FAIL]
    assert len(done) + len(failed) == 3
    assert all(t.params["model.hidden_dim"] == 0 for t in failed)  # recorded as failed, not as 0
    assert all(t.params["model.hidden_dim"] > 0 for t in done) and done and failed
    objectives = [m["val/acc"] for m in metrics(tmp_path)]
    assert sorted(objectives) == sorted(t.value for t in done)
    best = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    assert best["best_value"] == max(objectives)

    # the same command again continues the stored study, with new points (a fixed sampler seed replayed
    # the first ones)
    r = sweep(tiny_imdb, tmp_path, monkeypatch, capfd, *args, "hydra.sweeper.n_trials=1")
    assert r.returncode == 0, r.stderr[-3000:]
    trials = optuna.load_study(study_name="tiny", storage=f"sqlite:///{db}").trials
    assert len(trials) == 4
    assert trials[3].params not in [t.params for t in trials[:3]]


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_optuna_sweep_where_every_trial_fails_ends_in_one_line(tiny_imdb, tmp_path, monkeypatch, capfd, in_process):
    search = tmp_path / "conf" / "hparams_search"
    search.mkdir(parents=True)
    (search / "tiny_optuna.yaml").write_text(TINY_SEARCH.replace("choice(0, 8, 16)", "choice(0, -1)"))
    db = tmp_path / "optuna.db"
    r = sweep(
        tiny_imdb,
        tmp_path,
        monkeypatch,
        capfd,
        "hparams_search=tiny_optuna",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.sweeper.storage=sqlite:///{db}",
        "hydra.sweeper.study_name=tiny",
        "hydra.sweeper.n_trials=2",
    )
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "Record does not exist" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: none of the 2 trials finished"), last
    assert "must be a positive integer" in last and "study tiny" in last
    import optuna

    trials = optuna.load_study(study_name="tiny", storage=f"sqlite:///{db}").trials
    assert [t.state for t in trials] == [optuna.trial.TrialState.FAIL] * 2  # kept: the study goes on next time


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_submitit_local_launcher(tiny_imdb, tmp_path, monkeypatch, capfd, in_process):
    r = sweep(
        tiny_imdb,
        tmp_path,
        monkeypatch,
        capfd,
        "hydra/launcher=submitit_local",
        "attention=dot,additive",
        "hydra.launcher.timeout_min=10",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(m["attention"] for m in metrics(tmp_path)) == ["additive", "dot"]


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_ddp_two_processes_on_cpu(tiny_imdb, tmp_path):
    """2-process DDP (gloo) with trainer=ddp's own precision (bf16-mixed): the logged val/acc equals a
    single-process evaluation of the same checkpoint, every validation review is counted once, and the
    throughput counts both ranks' reviews. Every rank gets a batch of splits smaller than one batch."""
    run = tmp_path / "ddp"
    common = [f"data.path={tiny_imdb}", f"paths.cache_dir={tmp_path / 'cache'}", *tiny_overrides(tiny_imdb, run)[2:]]
    # no limits, and the default evaluation batch (256): validation (60 reviews) and test (80) are one batch
    # each, which left rank 1 without one ("DataLoader within local rank has zero length")
    common.remove("data.eval_batch_size=32")
    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            *common,
            "trainer=ddp",
            "trainer.accelerator=cpu",
            "trainer.devices=2",
            "trainer.max_epochs=2",
            "callbacks.rich_progress_bar=null",
            f"hydra.run.dir={run}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    logged = json.loads((run / "metrics.json").read_text())
    assert len(list(run.glob("metrics.json"))) == 1 and (run / "vocab.json").exists()

    import pytorch_lightning as L
    from helpers.data import make_datamodule

    from attnclf.training.module import ClassifierModule

    cfg = compose_cfg([*common, f"paths.output_dir={tmp_path / 'single'}"])
    datamodule = make_datamodule(**cfg.data, seed=cfg.seed)
    model = ClassifierModule.load_from_checkpoint(logged["best_checkpoint"], map_location="cpu", weights_only=True)
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, precision="bf16-mixed")
    single = trainer.validate(model, datamodule=datamodule, verbose=False)[0]
    assert single["val/acc"] == pytest.approx(logged["val/acc"], abs=1e-6)
    # every validation review counted once over both ranks, in each of the 2 epochs
    assert logged["eval_reviews"] == 2 * len(datamodule.val_set) == 120
    assert logged["train_tokens"] >= 2 * int(datamodule.train_set.lengths.sum())  # (a padded last step repeats)
    assert torch.load(logged["best_checkpoint"], weights_only=True)["global_step"] > 0
    # the test predictions: every test review once, both ranks' together, as test/acc counted them
    from attnclf.utils.predictions import PREDICTIONS, read_predictions

    kept = read_predictions(run / PREDICTIONS)
    assert sorted(kept.rows.tolist()) == list(range(80))
    assert kept.correct.mean() == pytest.approx(logged["test/acc"], abs=1e-6)


PRUNED_SEARCH = """# @package _global_
defaults:
  - imdb_optuna
hparams_search:
  pruner: median
  warmup: 1
  startup_trials: 2
hydra:
  sweeper:
    n_trials: 3
    params:
      optimizer.lr: tag(log, interval(1e-9, 1e-2))
"""


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_trial_that_falls_behind_is_pruned_and_recorded_as_pruned(
    tiny_imdb, tmp_path, monkeypatch, capfd, in_process
):
    """Two trials at a learning rate that learns, then one at 1e-9 (enqueued, in this order): the median
    pruner stops the third at its second validation, below the others' median there; the study records it
    as pruned, its run folder says so and holds no metrics, the sweep exits 0, and the trials table is
    printed and written."""
    import optuna

    search = tmp_path / "conf" / "hparams_search"
    search.mkdir(parents=True)
    (search / "pruned.yaml").write_text(PRUNED_SEARCH)
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="pruned", storage=storage, direction="maximize")
    for lr in (1e-2, 1e-2, 1e-9):
        study.enqueue_trial({"optimizer.lr": lr})
    args = [
        "hparams_search=pruned",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        f"hydra.sweeper.storage={storage}",
        "hydra.sweeper.study_name=pruned",
        "trainer.max_epochs=4",
        "trainer.limit_train_batches=1.0",
        "optimizer.schedule=constant",
        "attention=dot",
        "model.hidden_dim=16",
        "model.embed_dim=16",
        "model.dropout=0.1",
        "data.max_length=64",
    ]
    r = sweep(tiny_imdb, tmp_path, monkeypatch, capfd, *args)
    assert r.returncode == 0, r.stderr[-3000:]
    trials = optuna.load_study(study_name="pruned", storage=storage).trials
    states = [t.state.name for t in trials]
    assert states == ["COMPLETE", "COMPLETE", "PRUNED"], (states, [t.intermediate_values for t in trials])
    assert len(trials[0].intermediate_values) == 4 and len(trials[2].intermediate_values) == 2
    (pruned_run,) = [p.parent for p in (tmp_path / "sweep").glob("*/pruned.json")]
    said = json.loads((pruned_run / "pruned.json").read_text())
    assert said["trial"] == 2 and said["validations"] == 2 and not (pruned_run / "metrics.json").exists()
    assert len(metrics(tmp_path)) == 2
    table = (tmp_path / "sweep" / "trials.md").read_text()
    assert table.count("| COMPLETE |") == 2 and re.search(r"\| 2 \| PRUNED \| [\d.]+ \| 1e-09 \|", table), table
    assert "PRUNED" in r.stdout and "best: trial" in r.stdout


@pytest.mark.parametrize(
    "bad,message",
    [
        ("hparams_search.pruner=bogus", "hparams_search.pruner='bogus'"),
        ("hparams_search.warmup=-1", "hparams_search.warmup=-1 must be a whole number >= 0"),
        ("hydra.sweeper.storage=null", "hparams_search.pruner=median needs hydra.sweeper.storage"),
        ("hydra.sweeper.sampler.seed=abc", "hydra.sweeper.sampler.seed='abc' must be a whole number or null"),
        ("hydra.sweeper.sampler.n_startup_trials=abc", "hydra.sweeper.sampler={"),
        ("hparams_search.trial=3", "hparams_search.trial=3 is set by the Optuna sweeper for each run of a search"),
    ],
)
def test_bad_pruning_values_are_one_line_before_any_trial(
    bad, message, tiny_imdb, tmp_path, monkeypatch, capsys, in_process
):
    storage = f"hydra.sweeper.storage=sqlite:///{tmp_path / 'optuna.db'}"
    args = sweep_args(tiny_imdb, tmp_path, "hparams_search=imdb_optuna", "hparams_search.pruner=median", storage, bad)
    assert attnclf_in_process(args, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith(f"error: {message}"), err[-2000:]
    assert not (tmp_path / "sweep").exists() and "Traceback" not in err


def test_a_sweep_without_optuna_names_the_extra_that_installs_it(monkeypatch):
    """hparams_search without Optuna installed: one line naming the extra (Hydra's own error was a
    traceback of its instantiation ending in `full_key: hydra.sweeper.sampler`)."""
    from attnclf.errors import AttnclfError
    from hydra_plugins.attnclf_optuna_sweeper.optuna_sweeper import make_sampler

    sampler = {"_target_": "optuna.samplers.TPESampler", "seed": 3}
    assert type(make_sampler(sampler)).__name__ == "TPESampler"
    monkeypatch.setitem(sys.modules, "optuna", None)  # (import optuna now fails as where it is not installed)
    with pytest.raises(
        AttnclfError,
        match=r'^hparams_search needs Optuna, which the sweep extra installs: pip install "attnclf\[sweep\]"$',
    ):
        make_sampler(sampler)
