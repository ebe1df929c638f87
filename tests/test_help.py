"""`attnclf <command> --help` at once: a Hydra app's help is read from its YAML (the same text Hydra prints),
without importing torch, Lightning or the command's logic."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnclf.commands import HYDRA_APPS, TEXT_HELP

# (processes of their own: each imports the whole app for the comparison)
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", HYDRA_APPS)
def test_a_hydra_apps_help_is_hydras_own_text_without_torch_or_lightning(name, tmp_path):
    probe = (
        "import sys; from attnclf.commands import main\n"
        "try:\n    main([sys.argv[1], '--help'])\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = [m for m in ('torch', 'pytorch_lightning') if m in sys.modules]; "
        "print('IMPORTED', heavy); sys.exit(code)"
    )
    fast = subprocess.run(
        [sys.executable, "-c", probe, name], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert fast.returncode == 0 and fast.stdout.rstrip().endswith("IMPORTED []"), fast.stdout[-300:] + fast.stderr
    # Hydra's own --help of the app, through its entry
    entry = (
        "import importlib, sys; from attnclf.commands import COMMANDS; sys.argv = ['x', '--help']; "
        "importlib.import_module(COMMANDS[sys.argv_name][0]).entry()"
    ).replace("sys.argv_name", repr(name))
    hydra = subprocess.run([sys.executable, "-c", entry], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert fast.stdout.rsplit("IMPORTED", 1)[0] == hydra.stdout


@pytest.mark.parametrize("name", TEXT_HELP)
def test_a_text_commands_help_is_its_help_text_without_torch_or_lightning(name, tmp_path):
    import importlib

    probe = (
        "import sys; from attnclf.commands import main\n"
        "try:\n    main([sys.argv[1], '--help'])\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = [m for m in ('torch', 'pytorch_lightning') if m in sys.modules]; "
        "print('IMPORTED', heavy); sys.exit(code)"
    )
    fast = subprocess.run(
        [sys.executable, "-c", probe, name], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert fast.returncode == 0 and fast.stdout.rstrip().endswith("IMPORTED []"), fast.stdout[-300:] + fast.stderr
    from attnclf.commands import COMMANDS

    assert fast.stdout.rsplit("IMPORTED", 1)[0] == importlib.import_module(COMMANDS[name][0]).HELP + "\n"


FLAG_COMMANDS = ["report", "compare-datasets", "compare-attention", "compare-faithfulness", "agreement", "imbalance"]


@pytest.mark.parametrize("name", FLAG_COMMANDS)
def test_a_flag_commands_help_imports_neither_torch_nor_lightning(name, tmp_path):
    probe = (
        "import sys; from attnclf.commands import main\n"
        "try:\n    code = main([sys.argv[1], '--help'])\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = [m for m in ('torch', 'pytorch_lightning') if m in sys.modules]; "
        "print('IMPORTED', heavy); sys.exit(code)"
    )
    run = subprocess.run([sys.executable, "-c", probe, name], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0 and run.stdout.startswith(f"usage: attnclf {name} "), run.stdout[:300] + run.stderr
    assert run.stdout.rstrip().endswith("IMPORTED []"), run.stdout[-300:]
