"""Bad input: one clear line naming the value and what is allowed, and no lost work."""

import logging
import subprocess
import sys
from contextlib import contextmanager

import datasets
import pytest
import pytorch_lightning as L
import torch
from helpers.commands import attnclf_in_process
from helpers.config import ROOT, compose_cfg, tiny_overrides

from attnclf.commands.train import train
from attnclf.errors import AttnclfError
from attnclf.training.checkpoint import load_checkpoint

# the options of the attention group (conf/attention/)
MECHANISMS = "additive, custom, dot, general, multihead, structured"


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.embed_dim=-4", "model.embed_dim=-4 must be a positive integer"),
        ("model.hidden_dim=0", "model.hidden_dim=0 must be a positive integer"),
        ("optimizer.lr=-1", "optimizer.lr=-1 must be a number > 0"),
        ("data.batch_size=0", "data.batch_size=0 must be a positive integer"),
        ("data.batch_size=big", "data.batch_size='big' must be a positive integer or auto"),
        ("data.max_length=0", "data.max_length=0 must be a positive integer"),
        ("optimizer.lr=0", "optimizer.lr=0 must be a number > 0"),
        ("data.val_size=1.5", "data.val_size=1.5 must be a fraction in (0, 1) or a row count"),
        ("data.val_size=0", "data.val_size=0 must be a fraction"),
        ("data.truncation=middle", "data.truncation='middle'; allowed: head, tail, head_tail"),
        ("optimized_metric=test/f1", "optimized_metric='test/f1'; allowed"),
        ("attention=additive attention.init=zeros", "attention.init='zeros'; allowed: xavier, default"),
        ("attention=custom", "attention._target_ is not given: name the class, attention=custom attention._target_="),
        (
            "attention._target_=torch.nn.Linear",
            "attention._target_='torch.nn.Linear' is class Linear, not an attention",
        ),
        ("attention=multihead attention.heads=3", "attention.heads=3 must be a whole number >= 1 that divides"),
        ("attention._target_=nosuch.Thing", "module 'nosuch' cannot be imported here (No module named 'nosuch')"),
        (
            "attention._target_=attnclf.models.attention.NoSuch",
            "module 'attnclf.models.attention' has no 'NoSuch'; its attentions: AdditiveAttention, DotAttention",
        ),
        ("model.attention_dim=-5", "model.attention_dim=-5 must be a positive integer or null"),
        ("model.attention_dim=0", "model.attention_dim=0 must be a positive integer or null"),
        ("optimizer.weight_decay=-3", "optimizer.weight_decay=-3 must be a number >= 0"),
        ("optimizer.warmup_ratio=5", "optimizer.warmup_ratio=5 must be in [0, 1)"),
    ],
)
def test_bad_values(override, message, tiny_imdb, tmp_path):
    with pytest.raises(AttnclfError) as e:
        train(compose_cfg([*tiny_overrides(tiny_imdb, tmp_path), "experiment=smoke", "logger=none", *override.split()]))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "override,message",
    [
        ("seed=abc", "seed='abc' must be a whole number in 0..4294967295"),
        ("seed=-1", "seed=-1 must be a whole number"),
        ("num_threads=-1", "num_threads=-1 must be a positive integer or null"),
        ("num_threads=0", "num_threads=0 must be a positive integer or null"),
        ("trainer.max_epochs=-2", "trainer.max_epochs=-2 must be a whole number >= -1 (-1: no limit)"),
        ("trainer.max_epochs=0", "trainer.max_epochs=0 would train nothing; allowed: 1 or more, or -1 (no limit)"),
        ("data.train_size=2.0", "data.train_size=2.0 must be a share in (0, 1) (a number with a point), a whole"),
        ("trainer.max_steps=-5", "trainer.max_steps=-5 must be a whole number >= -1"),
        ("trainer.min_epochs=-1", "trainer.min_epochs=-1 must be a whole number >= 0"),
        ("trainer.log_every_n_steps=0", "trainer.log_every_n_steps=0 must be a positive integer"),
        ("+trainer.accumulate_grad_batches=0", "trainer.accumulate_grad_batches=0 must be a positive integer"),
        ("trainer.limit_train_batches=-1", "trainer.limit_train_batches=-1 must be a fraction in [0.0, 1.0]"),
        ("trainer.limit_val_batches=1.5", "trainer.limit_val_batches=1.5 must be a fraction"),
        ("trainer.val_check_interval=0", "trainer.val_check_interval=0 must be a fraction of an epoch"),
        ("trainer.gradient_clip_val=-1", "trainer.gradient_clip_val=-1 must be a number >= 0"),
        ("trainer.precision=12", "trainer: Precision 12 is invalid"),  # (the Trainer's own check, built first)
        ("data.label_column=text", "data.label_column='text' is data.text_column too"),
        ("model.rnn=rnn", "model.rnn='rnn'; allowed: gru, lstm"),
        ("hparams_search=imdb_optuna hparams_search.trial=3", "hparams_search.trial=3 is set by the Optuna sweeper"),
        ("model.rnn=lstm model.init_from=pretrain", "model.init_from needs model.rnn=gru (the language models"),
    ],
)
def test_bad_values_are_refused_before_any_data_work(override, message, tmp_path):
    """The data path does not exist: a check that came after loading would report that instead."""
    cfg = compose_cfg(["data.path=/no/such/data", f"paths.output_dir={tmp_path}", "logger=none", *override.split()])
    with pytest.raises(AttnclfError) as e:
        train(cfg)
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_bad_seed_leaves_no_run_folder(tmp_path, monkeypatch, capsys, in_process):
    argv = ["train", "seed=abc", "data.path=/no/such/data", f"hydra.run.dir={tmp_path / 'run_sabc'}"]
    assert attnclf_in_process(argv, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("error: seed='abc'"), err[-2000:]
    assert not (tmp_path / "run_sabc").exists()


def test_data_that_cannot_train_a_classifier(tmp_path):
    """One class only, a vocabulary without a word, a file without rows: one line each, before training."""
    one_class = write_split(tmp_path / "one", text=["good film", "fine film", "great film"], label=[1, 1, 1])
    with pytest.raises(AttnclfError, match=r"the \d+ training rows all have label '1'; a classifier needs rows of at"):
        train(compose_cfg([*tiny_overrides(one_class, tmp_path / "o1"), "data.val_size=1"]))
    two = write_split(tmp_path / "two", text=["good film", "bad film", "great film", "dull"], label=[1, 0, 1, 0])
    with pytest.raises(AttnclfError, match=r"the vocabulary has no word: no token occurs data.min_freq=50 times"):
        train(compose_cfg([*tiny_overrides(two, tmp_path / "o2"), "data.val_size=1", "data.min_freq=50"]))
    with pytest.raises(AttnclfError, match=r"data.vocab_size=2 must be at least 3 \(<pad>, <unk> and a word\)"):
        train(compose_cfg([*tiny_overrides(two, tmp_path / "o3"), "data.vocab_size=2"]))
    for name, content, why in (
        ("header.csv", "text,label\n", "only a header"),
        ("empty.csv", "", "it is empty"),
        ("blank.jsonl", "\n\n", "it is empty"),
    ):
        (tmp_path / name).write_text(content)
        with pytest.raises(AttnclfError, match=f"data file {tmp_path / name} has no rows \\({why}\\)"):
            train(compose_cfg(tiny_overrides(tmp_path / name, tmp_path / "o4")))


def test_a_run_or_cache_folder_that_cannot_take_files_is_one_line_before_any_data_work(tmp_path):
    """A path under a file (or a read-only disk): named in one line, before the data (absent here) is read."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    for key in ("paths.output_dir", "paths.cache_dir"):
        cfg = compose_cfg(["data.path=/no/such/data", f"paths.output_dir={tmp_path / 'out'}", f"{key}={blocker}/x"])
        with pytest.raises(AttnclfError, match=f"^{key}={blocker}/x: {blocker} is a file, not a folder$"):
            train(cfg)
    # from the command line (run()), the refused start leaves no run folder behind; nor does the label column
    from attnclf.commands.user_errors import one_line

    for bad in (f"paths.cache_dir={blocker}/x", "data.label_column=text"):
        out = tmp_path / "run"
        (out / ".hydra").mkdir(parents=True)  # (as Hydra leaves it before the run starts)
        with pytest.raises(SystemExit) as e:
            one_line(train, compose_cfg(["data.path=/no/such/data", f"paths.output_dir={out}", bad]))
        assert e.value.code == 2 and not out.exists(), bad


@contextmanager
def said_by(name: str):
    """What the logger `name` (and those under it) let through while inside, whatever its handlers."""
    said, logger = [], logging.getLogger(name)
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logger.addHandler(handler)
    try:
        yield said
    finally:
        logger.removeHandler(handler)


def test_data_files_that_cannot_be_read_name_the_file_and_line(tmp_path):
    """A Latin-1 file, a JSON Lines file with a line that is not JSON, a folder without a data file: the cause
    in one line, not `datasets`' generic last line ("An error occurred while generating the dataset"), nor
    its own log of the file it could not read before ours."""
    rows = "".join(f"review number {i} good,{i % 2}\n" for i in range(30))
    latin = tmp_path / "latin.csv"
    latin.write_bytes(f"text,label\n{rows}".encode() + "café bad,0\n".encode("latin-1"))
    jsonl = tmp_path / "broken.jsonl"
    jsonl.write_text('{"text": "good", "label": 1}\n\n{"text": bad, "label": 0}\n')
    empty = tmp_path / "nothing"
    empty.mkdir()
    (empty / "notes.md").write_text("no data here")
    for data, message in (
        (latin, f"{latin}: line 32 is not valid UTF-8 (byte 0xe9); save it as UTF-8"),
        (jsonl, f"{jsonl}: line 3 is not JSON (Expecting value); one JSON object a line"),
        (empty, f"data.path={empty}: the folder holds no data file (.arrow, .csv, .json, .jsonl, .parquet"),
    ):
        with pytest.raises(AttnclfError) as e, said_by("datasets") as said:
            train(compose_cfg(tiny_overrides(data, tmp_path / "o")))
        assert str(e.value).startswith(message), str(e.value)
        assert not [m for m in said if "Failed to read file" in m], said


def test_texts_that_are_all_empty_are_refused(tmp_path):
    empty = tmp_path / "empty_texts.csv"
    empty.write_text("text,label\n" + "".join(f",{i % 2}\n" for i in range(40)))
    with pytest.raises(AttnclfError, match=r"the vocabulary has no word: no token occurs .* training rows"):
        train(compose_cfg([*tiny_overrides(empty, tmp_path / "o"), "data.min_freq=1"]))


def write_split(root, **columns):
    root.mkdir()
    for split in ("train", "test"):
        datasets.Dataset.from_dict(columns).to_parquet(str(root / f"{split}.parquet"))
    return root


def test_dataset_without_text_or_label_columns(tmp_path):
    data = write_split(tmp_path / "d", body=["good", "bad"], stars=[1, 0])
    with pytest.raises(AttnclfError, match=r"has no text column 'text'; columns found: \['body', 'stars'\]"):
        train(compose_cfg(tiny_overrides(data, tmp_path / "o")))
    data = write_split(tmp_path / "e", review=["good", "bad"], stars=[1, 0])  # review: found as the text
    with pytest.raises(AttnclfError, match=r"has no label column 'label'; columns found: \['review', 'stars'\]"):
        train(compose_cfg(tiny_overrides(data, tmp_path / "o")))


def test_hub_unreachable_fails_at_once_and_says_how_to_use_a_local_folder(tmp_path, monkeypatch, capsys):
    """An unreachable Hub: the one-line error at once, not after datasets' ~30 s of retries, exit 2,
    and the failed start leaves no run folder behind."""
    from huggingface_hub import constants

    from attnclf.commands.user_errors import one_line

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # (nothing listens on port 9: refused)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(SystemExit) as e:
        one_line(train, compose_cfg(["data.path=stanfordnlp/imdb", f"paths.output_dir={tmp_path / 'run'}"]))
    assert e.value.code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "stanfordnlp/imdb" in last and "Hub" in last and "cannot be reached" in last and "data.path=" in last
    assert "Retrying" not in err  # datasets never started its retries
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="trainer=gpu works here")
def test_no_gpu_is_refused_before_any_data_work(tmp_path):
    with pytest.raises(AttnclfError, match=r"^trainer.accelerator=gpu: no GPU found; use trainer=cpu$"):
        train(compose_cfg(["trainer=gpu", "data.path=/no/such/data", f"paths.output_dir={tmp_path}"]))


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_local_ddp_in_a_multirun_is_refused_before_any_data_work(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            "-m",
            "trainer=ddp",
            "trainer.accelerator=cpu",
            "trainer.devices=2",
            "seed=1,2",
            "data.path=/no/such/data",  # (never read: the check comes first)
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]  # one line per job, no traceback (Hydra's or ours)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, r.stderr[-2000:]  # each job refused once, no sweep started again by a rank
    assert "trainer.devices=2 in a multirun (-m)" in errors[0] and "run each setting as its own command" in errors[0]
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["multirun.yaml"]  # (no job folder left)


class Poison(L.Callback):
    """Diverge on purpose: a weight becomes NaN after optimizer step `step`."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, *args):
        if trainer.global_step == self.step:
            with torch.no_grad():
                pl_module.model.fc.weight[0, 0] = float("nan")


@pytest.mark.parametrize("lr", [1e30, 2e-3])  # diverging for real, and a NaN planted after step 5
def test_divergence_stops_and_keeps_the_last_good_checkpoint(lr, tiny_imdb, tmp_path):
    overrides = [
        *tiny_overrides(tiny_imdb, tmp_path),
        "logger=none",
        "callbacks.rich_progress_bar=null",
        "callbacks.attention_maps=null",
        "callbacks.step_checkpoint.every_n_train_steps=1",
        "trainer.max_epochs=3",
        f"optimizer.lr={lr}",
        "optimizer.schedule=constant",
    ]
    if lr < 1:
        overrides += ["+callbacks.poison._target_=test_errors.Poison", "+callbacks.poison.step=5"]
    with pytest.raises(
        AttnclfError, match=r"(train/loss|parameter \S+) became (nan|inf|nan/inf) (at|by) step \d+; stop"
    ):
        train(compose_cfg(overrides))
    checkpoints = tmp_path / "checkpoints"
    assert not list(checkpoints.glob(".*tmp*"))
    last = load_checkpoint(checkpoints / "last.ckpt")  # intact, and from before the divergence
    weights = {k: t for k, t in last["state_dict"].items() if k.startswith("model.")}
    assert weights and all(t.isfinite().all() for t in weights.values())
    if lr < 1:
        assert last["global_step"] == 4


@pytest.mark.parametrize(
    "command,override,line",
    [
        ("train", "attention=foo", f"error: attention='foo'; allowed: {MECHANISMS}"),
        ("train", "regularizer=foo", "error: regularizer='foo'; allowed: adversarial, none, virtual_adversarial"),
        ("train", "logger=foo", "error: logger='foo'; allowed: none, tensorboard"),
        ("train", "model.foo=1", "error: model.foo is not a setting of model; allowed: embed_dim, hidden_dim,"),
        ("train", "foo=1", "error: foo is not a setting; allowed: seed, num_threads, keep_freed_memory,"),
        ("eval", "data.foo=1", "error: data.foo is not a setting of data; allowed: split, path, name,"),
        ("train", "seed=[1", "error: no viable alternative at input '[1'"),
        (
            "train",
            "hparams_search.pruner=median",
            "error: hparams_search.pruner belongs to an Optuna search: give hparams_search=imdb_optuna with it",
        ),
        (
            "attention-tests",
            "attention=additive",
            "error: attention=additive: attention is not a setting here; allowed: paths, ckpt, test, epochs,",
        ),
    ],
)
def test_a_command_line_hydra_cannot_compose_is_one_line_naming_what_is_allowed(
    command, override, line, tmp_path, monkeypatch, capsys, in_process
):
    status = attnclf_in_process([command, override, f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith(line), err
    assert "HYDRA_FULL_ERROR" not in err[0] and not (tmp_path / "run").exists()


@pytest.mark.slow  # (a process of its own)
def test_a_command_line_error_through_the_root_entry_point_is_the_one_line_it_prints(tmp_path):
    """`python train.py <override>` as a process of its own: stderr holds the error's line and nothing else."""
    r = subprocess.run(
        [sys.executable, "train.py", "attention=foo", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr == f"error: attention='foo'; allowed: {MECHANISMS}\n", r.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_a_run_folder_hydra_cannot_make_is_one_line(tmp_path, monkeypatch, capsys, in_process):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert attnclf_in_process(["train", "data.path=/no/such/data", f"hydra.run.dir={blocker}/run"], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: {blocker}/run: Not a directory (the run folder: hydra.run.dir, or hydra.sweep.dir with -m)"
    ], err


def test_ctrl_c_before_training_is_one_line_and_leaves_no_run_folder(tiny_imdb, tmp_path, monkeypatch, capsys):
    """Ctrl-C while the word vectors train (gensim's loop, before the fit): exit status 130, one line, and no
    run folder holding only its config, log, vocabulary and start record."""
    import attnclf.data.vectors as vectors
    from attnclf.commands.user_errors import one_line

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(vectors, "train_word2vec", interrupted)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        one_line(train, compose_cfg([*tiny_overrides(tiny_imdb, out), f"paths.cache_dir={tmp_path / 'cache'}"]))
    assert e.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()  # (after datasets' progress bars)
    assert err[-1] == "error: stopped by Ctrl-C before training began; nothing was kept but the caches", err
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in err), err
    assert not out.exists()


def test_a_data_error_is_the_only_line_a_run_prints(tmp_path, monkeypatch, capfd, in_process):
    """The Trainer is built before the data is read, quietly: no hardware notes, no "100% of the batches"."""
    argv = ["train", "data.path=/no/such/data", f"hydra.run.dir={tmp_path / 'run'}"]
    assert attnclf_in_process(argv, monkeypatch) == 2
    out, err = capfd.readouterr()
    assert out == "", out
    assert err.strip().splitlines() == [
        "error: data.path '/no/such/data' does not exist (give a local dataset folder or file, or a Hub id)"
    ], err


@pytest.mark.parametrize("command", ["train", "eval", "faithfulness", "attention-tests"])
def test_a_failed_start_from_the_command_line_leaves_nothing_behind(command, tmp_path, monkeypatch, capsys, in_process):
    """The Hydra apps themselves, in an empty working folder: a refused start is one line, exit 2, and neither
    the run folder Hydra made (its config and log) nor outputs/ above it is left."""
    from attnclf.commands import hydra_app

    given = "data.path=/no/such/data" if command == "train" else f"ckpt={tmp_path / 'no_such_run'}"
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setattr("sys.argv", list(sys.argv))
    with pytest.raises(SystemExit) as e:
        hydra_app(command, [given])
    assert e.value.code == 2 and capsys.readouterr().err.startswith("error: ")
    assert list((tmp_path / "work").iterdir()) == []


@pytest.mark.parametrize(
    "argv,line",
    [
        (["compare-attention", "{x}/a", "{x}/b"], "ckpt='{x}/a': no such checkpoint or run folder"),
        (["agreement", "{x}/a", "{x}/b"], "ckpt='{x}/a': no such checkpoint or run folder"),
        (["report", "{x}"], "no metrics.json under {x}"),
        (["compare-faithfulness", "{x}"], "no faithfulness.json at {x} (run attnclf faithfulness first)"),
        (["imbalance", "{x}", "{x}/out", "--rows", "train=3", "--rare", "0=0.5"], "{x}/train.jsonl: no such file"),
    ],
)
def test_a_command_of_flags_given_a_path_that_is_not_there_says_so_in_one_line(
    argv, line, tmp_path, monkeypatch, capsys
):
    x = tmp_path / "none"
    assert attnclf_in_process([a.format(x=x) for a in argv], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {line.format(x=x)}"), err
