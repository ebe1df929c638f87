"""The commands that parse flags take key=value as train and eval do: each key stands for its flag or
positional argument, the flags still work, `--help` names the key=value form first, and a key that is not
the command's is one line."""

from __future__ import annotations

import importlib

import pytest
from helpers.commands import attnclf_in_process

from attnclf.commands.keyvalue import as_flags
from attnclf.errors import AttnclfError

CASES = {  # command module: (key=value given, the flags they stand for)
    "report": (
        ["path=runs/x", "objective=test/acc", "target=0.9"],
        ["runs/x", "--objective", "test/acc", "--target", "0.9"],
    ),
    "compare_datasets": (
        ["cr=cr.txt", "data=[a=x.csv,b=y.csv]", "seeds=[1,2]", "attention=[dot,general]"],
        [
            "--cr",
            "cr.txt",
            "--data",
            "a=x.csv",
            "--data",
            "b=y.csv",
            "--seeds",
            "1",
            "2",
            "--attention",
            "dot",
            "general",
        ],
    ),
    "compare_attention": (
        ["ckpt=[r1,r2]", "data.path=imdb", "max_tokens=50"],
        ["r1", "r2", "--data", "imdb", "--max-tokens", "50"],
    ),
    "compare_faithfulness": (
        ["results=[a.json,b.json]", "by_attention=true", "out=f.png"],
        ["a.json", "b.json", "--by-attention", "--out", "f.png"],
    ),
    "agreement": (["ckpt=[r1,r2]", "reviews=10", "cache_dir=c"], ["r1", "r2", "--reviews", "10", "--cache-dir", "c"]),
    "imbalance": (
        ["out=o", "src=imdb", "rows=[train=100,test=50]", "rare=0=0.02"],
        ["imdb", "o", "--rows", "train=100", "test=50", "--rare", "0=0.02"],
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_each_key_stands_for_its_flag_and_flags_pass_as_given(name):
    keys = importlib.import_module(f"attnclf.commands.{name}").KEYS
    given, flags = CASES[name]
    assert as_flags(given, keys) == flags
    # the flags themselves, and NAME=VALUE after a flag that takes them, pass as they are
    assert as_flags(flags, keys) == flags
    with pytest.raises(AttnclfError, match=f"'nosuch' is not a setting of {keys.command}; allowed: "):
        as_flags(["nosuch=1"], keys)


@pytest.mark.parametrize("name", CASES)
def test_help_names_the_key_value_form_first(name, capsys):
    from attnclf.commands import main

    keys = importlib.import_module(f"attnclf.commands.{name}").KEYS
    with pytest.raises(SystemExit) as e:
        main([keys.command, "--help"])
    first = capsys.readouterr().out.splitlines()[0]
    assert e.value.code == 0 and first.startswith(f"usage: attnclf {keys.command} ") and "=" in first, first


def test_report_reads_the_folder_path_names(tmp_path, capsys, monkeypatch):
    assert attnclf_in_process(["report", f"path={tmp_path}"], monkeypatch) == 2
    assert capsys.readouterr().err == f"error: no metrics.json under {tmp_path}\n"
