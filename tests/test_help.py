"""`attnclf <command> --help` at once: a Hydra app's help is read from its YAML (the same text Hydra prints),
without importing torch, Lightning or the command's logic."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnclf.commands import HYDRA_APPS, TEXT_HELP

# (processes of their own: each imports the whole app for the comparison)
pytestmark = pytest.mark.slow


# a fresh process: `attnclf <name> --help`, then the heavy modules it imported ("IMPORTED [...]")
PROBE = (
    "import sys; from attnclf.commands import main\n"
    "try:\n    code = main([sys.argv[1], '--help'])\nexcept SystemExit as e:\n    code = e.code\n"
    "heavy = [m for m in ('torch', 'pytorch_lightning') if m in sys.modules]; "
    "print('IMPORTED', heavy); sys.exit(code)"
)


def help_alone(name: str, cwd) -> str:
    """The command's --help as a fresh process prints it; asserted to import neither torch nor Lightning."""
    run = subprocess.run([sys.executable, "-c", PROBE, name], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert run.returncode == 0 and run.stdout.rstrip().endswith("IMPORTED []"), run.stdout[-300:] + run.stderr
    return run.stdout.rsplit("IMPORTED", 1)[0]


@pytest.mark.parametrize("name", HYDRA_APPS)
def test_a_hydra_apps_help_is_hydras_own_text_without_torch_or_lightning(name, tmp_path):
    fast = help_alone(name, tmp_path)
    # Hydra's own --help of the app, through its entry
    entry = (
        "import importlib, sys; from attnclf.commands import COMMANDS; sys.argv = ['x', '--help']; "
        "importlib.import_module(COMMANDS[sys.argv_name][0]).entry()"
    ).replace("sys.argv_name", repr(name))
    hydra = subprocess.run([sys.executable, "-c", entry], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert fast == hydra.stdout


@pytest.mark.parametrize("name", TEXT_HELP)
def test_a_text_commands_help_is_its_help_text_without_torch_or_lightning(name, tmp_path):
    import importlib

    from attnclf.commands import COMMANDS

    assert help_alone(name, tmp_path) == importlib.import_module(COMMANDS[name][0]).HELP + "\n"


FLAG_COMMANDS = ["report", "compare-datasets", "compare-attention", "compare-faithfulness", "agreement", "imbalance"]


@pytest.mark.parametrize("name", FLAG_COMMANDS)
def test_a_flag_commands_help_imports_neither_torch_nor_lightning(name, tmp_path):
    assert help_alone(name, tmp_path).startswith(f"usage: attnclf {name} ")
