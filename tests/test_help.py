"""`attnclf <command> --help` at once: a Hydra app's help is read from its YAML (the same text Hydra prints),
without importing torch, Lightning or the command's logic."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from attnclf.commands import HYDRA_APPS, TEXT_HELP

# (processes of their own: each imports the whole app for the comparison)
pytestmark = pytest.mark.slow


# a fresh process: `attnclf <arguments>`, then the heavy modules it imported ("IMPORTED [...]")
PROBE = (
    "import sys; from attnclf.commands import main\n"
    "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    "heavy = [m for m in ('torch', 'pytorch_lightning', 'hydra') if m in sys.modules]; "
    "print('IMPORTED', heavy); sys.exit(code)"
)


def help_alone(name: str, cwd, without=("torch", "pytorch_lightning")) -> str:
    """The command's --help as a fresh process prints it; asserted to import none of `without` (by default
    neither torch nor Lightning)."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, name, "--help"], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    shown, _, imported = run.stdout.rpartition("IMPORTED ")
    assert run.returncode == 0 and imported, run.stdout[-300:] + run.stderr
    assert not set(without) & set(ast.literal_eval(imported.strip())), run.stdout[-300:] + run.stderr
    return shown


@pytest.mark.parametrize("name", HYDRA_APPS)
def test_a_hydra_apps_help_is_hydras_own_text_without_torch_or_lightning(name, tmp_path):
    # read from the app's YAML: not even Hydra is imported to say it
    fast = help_alone(name, tmp_path, without=("torch", "pytorch_lightning", "hydra"))
    # Hydra's own --help of the app, through the path the app runs by
    entry = f"from attnclf.commands import hydra_app; hydra_app({name!r}, ['--help'])"
    hydra = subprocess.run([sys.executable, "-c", entry], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert fast == hydra.stdout


@pytest.mark.parametrize("name", TEXT_HELP)
def test_a_text_commands_help_is_its_help_text_without_torch_or_lightning(name, tmp_path):
    import importlib

    from attnclf.commands import COMMANDS

    assert (
        help_alone(name, tmp_path, without=("torch", "pytorch_lightning", "hydra"))
        == importlib.import_module(COMMANDS[name][0]).HELP + "\n"
    )


FLAG_COMMANDS = ["report", "compare-datasets", "compare-attention", "compare-faithfulness", "agreement", "imbalance"]


@pytest.mark.parametrize("name", FLAG_COMMANDS)
def test_a_flag_commands_help_imports_neither_torch_nor_lightning(name, tmp_path):
    assert help_alone(name, tmp_path).startswith(f"usage: attnclf {name} ")


# a bad value for each command (scripts/bench_cli.py times the same), and the start of its one line
REFUSALS = {
    "train": (["optimizer.lr=-1"], "error: optimizer.lr=-1"),
    "eval": (["ckpt=/no/such/run"], "error: ckpt='/no/such/run': no such checkpoint"),
    "predict": (["ckpt=/no/such/run", "text=a", "batch_size=0"], "error: "),
    "faithfulness": (["ckpt=/no/such/run"], "error: ckpt='/no/such/run': no such checkpoint"),
    "attention-tests": (["ckpt=/no/such/run"], "error: ckpt='/no/such/run': no such checkpoint"),
    "serve": (["ckpt=/no/such/run"], "error: ckpt='/no/such/run': no such checkpoint"),
    "pretrain": (["lm.lr=-1"], "error: lm.lr=-1"),
    "export": (["ckpt=/no/such/run", "out=x"], "error: ckpt='/no/such/run': no such checkpoint"),
    "report": (["path=/no/such/folder"], "error: "),
    "compare-datasets": (["attention=[nope]"], "attnclf compare-datasets: error: --attention 'nope'"),
    "compare-faithfulness": (["/no/such/folder"], "error: no faithfulness.json at /no/such/folder"),
    "compare-attention": (["ckpt=[/no/such/a,/no/such/b]"], "error: ckpt='/no/such/a': no such checkpoint"),
    "agreement": (["ckpt=[/no/such/a,/no/such/b]"], "error: ckpt='/no/such/a': no such checkpoint"),
    "imbalance": (["src=/no/such", "out=x", "rows=[train=10]", "rare=0=0.1"], "error: /no/such/train.jsonl"),
}


@pytest.mark.parametrize("name", REFUSALS)
def test_a_bad_values_refusal_imports_neither_torch_nor_lightning(name, tmp_path):
    """Each command's checks come before its model, data and Trainer: a bad value is one line, exit status 2,
    in a process that never imported torch."""
    argv, said = REFUSALS[name]
    run = subprocess.run(
        [sys.executable, "-c", PROBE, name, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    heavy = {"torch", "pytorch_lightning"} & set(ast.literal_eval(run.stdout.rpartition("IMPORTED ")[2].strip()))
    assert run.returncode == 2 and not heavy, run.stdout[-300:] + run.stderr
    lines = run.stderr.strip().splitlines()
    # (argparse's own refusal of a flag's value puts its usage above the line)
    assert lines[-1].startswith(said) and (len(lines) == 1 or lines[0].startswith(f"usage: attnclf {name}")), lines
    assert list(tmp_path.iterdir()) == []
