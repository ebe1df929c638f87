"""A run killed with SIGKILL mid-epoch, then resumed, ends as if never interrupted."""

import json
import os
import subprocess
import sys

import pytest
import torch
from helpers.config import ROOT, compose_cfg, tiny_overrides
from helpers.signals import resume_in_process, signaller_env
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from attnclf.commands.train import train
from attnclf.settings.attention import AttentionConfig
from attnclf.training.checkpoint import load_checkpoint

# 12 batches an epoch, 3 epochs, a step checkpoint every 5 steps; killed at step 17 (epoch 1, batch 5),
# so the resume starts from the step-15 checkpoint, mid-epoch. (The data with an unlabeled split has 120
# training rows: 8 batches an epoch, 24 steps; killed at step 14, it resumes from step 10, epoch 1 batch 2.)
RUN = [
    "trainer.max_epochs=3",
    "callbacks.step_checkpoint.every_n_train_steps=5",
    "trainer.deterministic=true",
    "callbacks.rich_progress_bar=null",
    "callbacks.attention_maps=null",
    "seed=7",
]


def cli(args, tmp_path, env=None):
    return subprocess.run(
        [sys.executable, "-m", "attnclf", "train", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.parametrize(
    "precision,how,regularizer,schedule",
    [
        # killed in epoch 1 of 3 with the encoder frozen for 2 and learning at half the rate: a resume in the
        # middle of a fine-tuning schedule freezes, unfreezes and steps as the uninterrupted run does
        ("32-true", "run folder", "none", ["optimizer.freeze_encoder_epochs=2", "optimizer.encoder_lr_scale=0.5"]),
        ("bf16-mixed", "last, in the same hydra.run.dir", "none", []),
        # its unlabeled batches and random probes continue as they would have
        ("32-true", "last, in the same hydra.run.dir", "virtual_adversarial", []),
    ],
)
@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_killed_run_resumes_to_the_same_result(
    tiny_imdb, with_unlabeled, tmp_path, precision, how, regularizer, schedule, monkeypatch, capfd, in_process
):
    data = tiny_imdb if regularizer == "none" else with_unlabeled
    steps, kill_at, saved_at = (36, 17, 15) if regularizer == "none" else (24, 14, 10)
    base = tiny_overrides(data, tmp_path / "x")[2:]  # all but output and cache dirs
    common = [
        f"data.path={data}",
        f"regularizer={regularizer}",
        *(["regularizer.unlabeled_batch_size=8"] if regularizer != "none" else []),
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.runs_dir={tmp_path / 'elsewhere'}",
        f"trainer.precision={precision}",
        *base,
        *RUN,
        *schedule,
    ]

    env = signaller_env(tmp_path)
    run = tmp_path / "run"
    killed = cli(
        [
            *common,
            f"hydra.run.dir={run}",
            "+callbacks.killer._target_=signaller.SignalAt",
            f"+callbacks.killer.step={kill_at}",
        ],
        tmp_path,
        env,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not (run / "metrics.json").exists()
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == saved_at
    assert not list((run / "checkpoints").glob(".*tmp*"))  # no stray temporary files

    if how == "run folder":  # from a new command, whose own fresh folder is not left behind
        args = [*common, f"hydra.run.dir={tmp_path / 'fresh'}", f"ckpt_path={run}"]
        status, err = resume_in_process(["train", *args], tmp_path, monkeypatch, capfd)
        assert not (tmp_path / "fresh").exists()
    else:  # the same command again with ckpt_path=last: the run is in its own hydra.run.dir
        args = [*common, f"hydra.run.dir={run}", "ckpt_path=last"]
        status, err = resume_in_process(["train", *args], tmp_path, monkeypatch, capfd)
    assert status == 0, err[-2000:]
    assert "exists and is not empty" not in err  # (its own checkpoints are no news)
    assert "resuming" in (run / "train.log").read_text()  # the resumed part logs into the run's own log
    after = json.loads((run / "metrics.json").read_text())

    cfg = compose_cfg([*common, f"paths.output_dir={tmp_path / 'straight'}"])
    train(cfg)
    straight = json.loads((tmp_path / "straight" / "metrics.json").read_text())

    assert after["steps"] == straight["steps"] == steps
    for key in ("val/acc", "test/acc", "test/loss"):
        assert after[key] == straight[key], key  # identical on CPU: same data order, RNG and optimizer state
    # the resumed run reports the start of the run it continues (word2vec, its texts and file), not "random"
    assert after["embeddings"] == straight["embeddings"] and after["embeddings"]["source"] == "word2vec"
    lasts = [load_checkpoint(d / "checkpoints" / "last.ckpt") for d in (run, tmp_path / "straight")]
    # last.ckpt is the end of training in both, whether or not the last epoch improved val/acc
    assert [c["global_step"] for c in lasts] == [steps, steps]
    final = [c["state_dict"] for c in lasts]
    for name, tensor in final[0].items():
        torch.testing.assert_close(tensor, final[1][name], rtol=0, atol=0, msg=name)

    # TensorBoard continues the same curve: one train/loss point per logged step, none twice
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    logged = [e.step for e in events.Scalars("train/loss")]
    assert logged == sorted(set(logged)) and logged[-1] == steps - 1


def test_resume_errors_are_one_line(tmp_path):
    from attnclf.errors import AttnclfError

    with pytest.raises(AttnclfError, match=r"^ckpt_path='.*nothing': .* does not exist \(give last, a run folder"):
        train(compose_cfg([f"ckpt_path={tmp_path / 'nothing'}", f"paths.output_dir={tmp_path / 'r'}"]))


def set_hparams(hp: dict, **settings) -> dict:
    """A classifier checkpoint's (nested) hyperparameters with settings changed, given by their module
    argument names: attention, hidden_dim (model), lr (optimizer), regularizer, regularizer_epsilon."""
    for key, value in settings.items():
        if key == "attention":
            mechanism = AttentionConfig.named(value)
            hp.update(attention=value, attention_class=mechanism.target, attention_keys=mechanism.keys)
        elif key.startswith("regularizer"):
            hp["regularizer"][key.removeprefix("regularizer").removeprefix("_") or "name"] = value
        else:
            hp["model" if key in hp["model"] else "optimizer"][key] = value
    return hp


def legacy(hp: dict) -> dict:
    """Nested hyperparameters as a checkpoint from before ClassifierConfig held them: flat."""
    reg = {
        "regularizer": hp["regularizer"]["name"],
        **{f"regularizer_{k}": hp["regularizer"][k] for k in ("epsilon", "weight", "xi")},
    }
    keep = {k: hp[k] for k in ("vocab_size", "num_classes", "attention")}
    return {**keep, **hp["model"], **hp["optimizer"], **reg}


def fake_run(root, name, ckpt, mtime, finished=False, **hparams):
    """A run folder holding a copy of `ckpt` as last.ckpt, with some hyperparameters changed."""
    run = root / name
    (run / "checkpoints").mkdir(parents=True)
    c = torch.load(ckpt, weights_only=True)
    set_hparams(c["hyper_parameters"], **hparams)
    torch.save(c, run / "checkpoints" / "last.ckpt")
    os.utime(run / "checkpoints" / "last.ckpt", (mtime, mtime))
    if finished:
        (run / "metrics.json").write_text("{}")
    return run


def test_last_picks_the_newest_unfinished_run_with_this_commands_settings(tiny_run, tmp_path):
    from attnclf.errors import AttnclfError
    from attnclf.settings.model import classifier_config
    from attnclf.training.checkpoint import find_resume
    from attnclf.training.resume import same_settings

    ckpt = tiny_run / "checkpoints" / "last.ckpt"  # dot, embed 16, hidden 16, lr 1e-2
    runs = tmp_path / "runs"
    old_dot = fake_run(runs, "a_dot_old", ckpt, 1000)
    fake_run(runs, "b_dot_finished", ckpt, 5000, finished=True)  # newest dot run, but finished
    fake_run(runs, "c_additive", ckpt, 4000, attention="additive")
    fake_run(runs, "d_dot_hidden32", ckpt, 3000, hidden_dim=32)
    fake_run(runs, "e_dot_adversarial", ckpt, 2000, regularizer="adversarial", regularizer_epsilon=0.02)
    lm = fake_run(runs, "f_newest_not_a_classifier", ckpt, 8000)  # (as a language model's: no attention)
    c = torch.load(lm / "checkpoints" / "last.ckpt", weights_only=True)
    del c["hyper_parameters"]["attention"]
    c["hyper_parameters"]["kind"] = "bigru_lm"  # (checkpoints say their kind; a classifier's: "classifier")
    torch.save(c, lm / "checkpoints" / "last.ckpt")
    os.utime(lm / "checkpoints" / "last.ckpt", (8000, 8000))

    def last(*overrides, here=None):
        tiny = ["model.embed_dim=16", "model.hidden_dim=16", "optimizer.lr=1e-2"]
        cfg = compose_cfg([*tiny, *overrides, f"paths.output_dir={tmp_path}"])
        return find_resume("last", runs, here, lambda hp: same_settings(hp, classifier_config(cfg))).parent.parent

    assert last() == old_dot.resolve()  # not the finished one, nor the additive or hidden-32 ones
    assert last("attention=additive") == (runs / "c_additive").resolve()
    assert last("model.hidden_dim=32") == (runs / "d_dot_hidden32").resolve()
    assert last("model.rnn_kernel=padded") == old_dot.resolve()  # how the GRU runs is not a setting
    assert last("regularizer=adversarial") == (runs / "e_dot_adversarial").resolve()
    with pytest.raises(AttnclfError, match=r"none of the 5 unfinished run\(s\) .* has this command's attention"):
        last("model.dropout=0.1")
    with pytest.raises(AttnclfError, match=r"none of the 5 unfinished run\(s\)"):
        last("optimizer.lr=0.5")  # the optimizer's state comes back with the weights: a new lr would not hold
    # this command's own run folder (hydra.run.dir=X) counts too, wherever it is
    here = fake_run(tmp_path / "elsewhere", "mine", ckpt, 9000)
    assert last(here=here) == here.resolve()


def test_a_run_given_by_name_must_have_this_commands_settings(tiny_imdb, tiny_run, tmp_path):
    """ckpt_path=<run>: a run trained with other settings is refused in one line before any work (the
    weights would not load, or a regulariser or learning rate would silently change mid-run)."""
    from attnclf.errors import AttnclfError

    ckpt = tiny_run / "checkpoints" / "last.ckpt"  # dot, embed 16, hidden 16, lr 1e-2, word2vec
    command = ["experiment=smoke", "optimizer.lr=1e-2", "logger=none", "callbacks.rich_progress_bar=null"]
    command += ["callbacks.attention_maps=null", *tiny_overrides(tiny_imdb, tmp_path / "new")]

    def resume(run, *overrides):
        train(compose_cfg([*command, *overrides, f"ckpt_path={run}"]))

    adversarial = fake_run(tmp_path, "adversarial", ckpt, 1000, regularizer="adversarial")
    other = fake_run(tmp_path, "other", ckpt, 1000, attention="additive", hidden_dim=32)
    with pytest.raises(
        AttnclfError,
        match=r"^ckpt_path='.*adversarial': that run was trained with regularizer='adversarial', this command "
        r"gives regularizer='none'; resume with the run's own settings$",
    ):
        resume(adversarial)
    with pytest.raises(
        AttnclfError,
        match=r"trained with attention='additive', model.hidden_dim=32, this command gives attention='dot', "
        r"model.hidden_dim=16;",
    ):
        resume(other / "checkpoints" / "last.ckpt")
    for run in (adversarial, other):  # nothing written there, nothing left of the refused command
        assert sorted(p.name for p in run.rglob("*")) == ["checkpoints", "last.ckpt"]
    assert not (tmp_path / "new").exists()

    # a checkpoint saved before a setting existed had the module's default for it (here: a random embedding)
    old = fake_run(tmp_path, "old", ckpt, 1000)
    c = torch.load(old / "checkpoints" / "last.ckpt", weights_only=True)
    c["hyper_parameters"] = legacy(c["hyper_parameters"])  # (flat, as before ClassifierConfig)
    del c["hyper_parameters"]["embeddings"]
    torch.save(c, old / "checkpoints" / "last.ckpt")
    with pytest.raises(AttnclfError, match=r"embeddings='random', this command gives model.embeddings='word2vec'"):
        resume(old)
    resume(old, "model.embeddings=random", "trainer.max_epochs=3")  # trained to its end: only its test runs
    assert json.loads((old / "metrics.json").read_text())["steps"] == load_checkpoint(ckpt)["global_step"]


def test_a_finished_run_is_never_resumed(tiny_run, tmp_path):
    before = (tiny_run / "metrics.json").read_text()
    for given in (tiny_run, tiny_run / "checkpoints" / "last.ckpt"):
        with pytest.raises(Exception, match=r"is finished .*; nothing to resume"):
            train(compose_cfg([*tiny_overrides(tiny_run, tmp_path), f"ckpt_path={given}"]))
    assert (tiny_run / "metrics.json").read_text() == before  # its results untouched


def test_a_run_killed_in_its_test_phase_resumes_to_its_results(tiny_imdb, tmp_path):
    """Training ended, the test did not (no metrics.json): resuming runs only the test, and val/acc
    comes from the checkpoint (it was NaN: the best-so-far metric was not restored)."""
    cfg = [
        *tiny_overrides(tiny_imdb, tmp_path),
        "trainer.max_epochs=2",
        "logger=none",
        "callbacks.rich_progress_bar=null",
    ]
    train(compose_cfg(cfg))
    done = json.loads((tmp_path / "metrics.json").read_text())
    (tmp_path / "metrics.json").unlink()  # as if killed while testing
    train(compose_cfg([*cfg, f"ckpt_path={tmp_path}"]))
    again = json.loads((tmp_path / "metrics.json").read_text())
    assert again["steps"] == done["steps"] and again["epochs"] == done["epochs"]
    for key in ("val/acc", "test/acc", "test/loss"):
        assert again[key] == done[key], key
    # the earlier part's time is kept (fit_seconds was this process's 0.06 s)
    assert again["train_seconds"] == pytest.approx(done["train_seconds"])
    assert again["fit_seconds"] >= again["train_seconds"] > 0.1


def test_the_last_checkpoint_of_an_epoch_knows_that_epochs_best(tiny_imdb, tmp_path):
    """last.ckpt, written after each epoch's validation, names the best checkpoint as that validation left it:
    a run killed before the train epoch's end (where the step checkpoint writes last.ckpt again) resumes to
    test that file, and one that names an earlier best, deleted since, made the resume fail."""
    cfg = [
        *tiny_overrides(tiny_imdb, tmp_path),
        "trainer.max_epochs=1",
        "logger=none",
        "callbacks.rich_progress_bar=null",
        "callbacks.step_checkpoint=null",
    ]
    train(compose_cfg(cfg))
    best = json.loads((tmp_path / "metrics.json").read_text())["best_checkpoint"]
    states = load_checkpoint(tmp_path / "checkpoints" / "last.ckpt")["callbacks"].values()
    assert [s["best_model_path"] for s in states if s.get("monitor") == "val/acc"] == [best]
    assert best.endswith("epoch00-step12.ckpt") and os.path.isfile(best)


def test_a_checkpoint_says_its_kind_and_an_older_one_is_still_known():
    from attnclf.training.checkpoint import checkpoint_kind

    assert checkpoint_kind({"kind": "classifier", "attention": "dot"}) == "classifier"
    assert checkpoint_kind({"kind": "bigru_lm", "embed_dim": 16}) == "bigru_lm"
    assert checkpoint_kind({"attention": "additive", "vocab_size": 9}) == "classifier"  # (saved before `kind`)
    assert checkpoint_kind({"vocab_size": 9}) is None


@pytest.mark.slow  # (processes of their own)
@pytest.mark.parametrize("sig,by,status", [("SIGTERM", "SIGTERM", 143), ("SIGINT", "Ctrl-C", 130)])
def test_a_signal_checkpoints_at_its_step_and_the_run_alone_resumes_to_the_same_figures(
    tiny_imdb, tmp_path, sig, by, status, monkeypatch, capfd, in_process
):
    """A scheduler's SIGTERM or a Ctrl-C stops the fit at the step in flight, with a checkpoint there: exit
    status 128 + the signal (never 0, which reads as success), no metrics.json, one line naming the
    checkpoints and the resume. `ckpt_path=<run>` alone then continues with the run's own settings (its
    seed 7 and 12 batches an epoch, not the defaults' 42 and all) and ends at the uninterrupted run's
    figures."""
    armed = signaller_env(tmp_path)
    run = tmp_path / "run"
    common = [
        *tiny_overrides(tiny_imdb, tmp_path / "x")[2:],
        f"data.path={tiny_imdb}",
        *RUN,
        "logger=none",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "trainer.limit_train_batches=10",
    ]
    signalled = ["+callbacks.t._target_=signaller.SignalAt", "+callbacks.t.step=13", f"+callbacks.t.sig={sig}"]
    stopped = cli([*common, f"hydra.run.dir={run}", *signalled], tmp_path, armed)
    assert stopped.returncode == status, stopped.stderr[-2000:]
    last = stopped.stderr.strip().splitlines()[-1]
    assert last == (
        f"error: training was stopped by {by} at step 13; checkpoints so far are in {run / 'checkpoints'}: "
        f"resume with the same command and ckpt_path={run}"
    ), last
    assert not (run / "metrics.json").exists()
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 13  # (not the step-10 one)
    # the run alone (and where this command's cache is, which cannot change a result)
    alone = [f"hydra.run.dir={tmp_path / 'fresh'}", f"ckpt_path={run}", f"paths.cache_dir={tmp_path / 'cache'}"]
    resumed, err = resume_in_process(["train", *alone], tmp_path, monkeypatch, capfd)
    assert resumed == 0, err[-2000:]
    after = json.loads((run / "metrics.json").read_text())
    train(compose_cfg([*common, f"paths.output_dir={tmp_path / 'straight'}"]))
    straight = json.loads((tmp_path / "straight" / "metrics.json").read_text())
    assert after["seed"] == 7 and after["steps"] == straight["steps"] == 30  # (3 epochs of 10 batches)
    for key in ("val/acc", "test/acc", "test/loss"):
        assert after[key] == straight[key], key
