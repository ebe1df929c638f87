"""attnclf as an installed command: `attnclf <command>` for every tool, and a copy installed from the wheel
(not editable) that trains from an empty folder, its configs inside the package."""

import ast
import csv
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from helpers.commands import attnclf_in_process
from helpers.config import ROOT, compose_cfg

from attnclf.commands import COMMANDS, main


def test_the_packages_listed_are_every_package_there():
    """pyproject.toml names its packages one by one (the configs are mapped from conf/): none left out."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("attnclf", "hydra_plugins")
        for p in (ROOT / top).rglob("__init__.py")
    }
    # (hydra_plugins: a namespace package, without __init__.py, as Hydra's plugins must be)
    assert sorted(listed) == sorted(found | {"attnclf.conf", "hydra_plugins"})
    assert (ROOT / "conf" / "__init__.py").is_file()


# the package's rooms, bottom first (CONTRIBUTING.md, "Where things are"): each imports from itself and the
# rooms before it only; attnclf/__init__.py and __main__.py sit on top
ROOMS = (
    "errors",
    "utils",
    "models",
    "settings",
    "data",
    "analysis",
    "presentation",
    "training",
    "inference",
    "serving",
    "cli",
    "commands",
    "__init__",
    "__main__",
)


def room_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def test_no_import_runs_up_and_no_private_name_crosses_modules():
    """No import runs back up (models import no settings, the commands sit on top), and no module imports
    another's `_name`."""
    up, private = [], []
    for path in (ROOT / "attnclf").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        here = ROOMS.index(room_of(module))
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnclf.")):
                continue
            if ROOMS.index(room_of(node.module)) > here:
                up.append(f"{module} imports {node.module}")
            private += [f"{module}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert up == [] and private == []


def test_tests_share_their_helpers_through_tests_helpers_only():
    """A test module imports what tests share from tests/helpers/, never from conftest.py or another test
    module (whose import would run its module-level code and tie the two together)."""
    crossing = []
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            crossing += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "conftest" or n.startswith("test_")]
    assert crossing == []


def test_attnclf_lists_its_commands_and_refuses_others(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in COMMANDS) and out.startswith("usage: attnclf <command>")
    assert main([]) == 2 and "error: give a command; allowed: train, eval," in capsys.readouterr().err
    assert main(["trian"]) == 2 and "error: unknown command 'trian'; allowed: train" in capsys.readouterr().err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_answers_help(command, tmp_path, monkeypatch, capsys, in_process):
    """`attnclf <command> --help` through the command table, in this process (`python -m attnclf` as a process
    of its own: the installed copy's test below, and the command-line tests of each command)."""
    monkeypatch.chdir(tmp_path)
    assert attnclf_in_process([command, "--help"], monkeypatch) == 0
    assert len(capsys.readouterr().out.splitlines()) >= 3
    assert not list(tmp_path.iterdir())  # (asking for help leaves nothing behind)


def tiny_csv(path: Path) -> Path:
    rng = random.Random(0)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(200):
            words = ["good", "great", "fine"] if i % 2 else ["bad", "awful", "dull"]
            w.writerow([" ".join(rng.choice(words) for _ in range(3)) + " film plot", i % 2])
    return path


@pytest.mark.slow  # (a wheel built and installed, and a training run)
def test_an_installed_copy_trains_from_an_empty_folder(tmp_path):
    """`pip install .` (not editable) of a copy of the project, then, in an empty folder elsewhere, `attnclf
    train experiment=smoke` trains with the configs the package carries and writes outputs/ there; `attnclf
    report` reads its run."""
    source, target, work = tmp_path / "source", tmp_path / "installed", tmp_path / "work"
    skip = (".git", ".venv", "outputs", "build", "*.egg-info", "__pycache__", ".ruff_cache", ".pytest_cache")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*skip))
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
    r = subprocess.run([*pip, str(source)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    shutil.rmtree(source)  # (nothing of the project is left but what was installed)
    work.mkdir()
    tiny_csv(work / "tiny.csv")
    env = {"PYTHONPATH": str(target), "PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    where = subprocess.run(
        [sys.executable, "-c", "import attnclf.conf; print(attnclf.conf.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(target / "attnclf" / "conf")), where.stderr[-2000:]
    train = [
        sys.executable,
        "-m",
        "attnclf",
        "train",
        "experiment=smoke",
        "data=csv",
        "data.path=tiny.csv",
        "model.embeddings=random",
        "logger=none",
        "num_threads=1",
        "model.hidden_dim=16",
    ]
    r = subprocess.run(train, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    # the model summary without the FLOPs Lightning never counted (a column of 0s and "Total FLOPs: 0")
    assert "Total params" in r.stdout and "FLOPs" not in r.stdout + r.stderr, r.stdout[-3000:]
    (metrics,) = (work / "outputs" / "runs").glob("*/metrics.json")
    r = subprocess.run(
        [str(target / "bin" / "attnclf"), "report", str(work / "outputs" / "runs")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and (work / "outputs" / "runs" / "report.md").is_file(), r.stderr[-3000:]


@pytest.mark.parametrize("command", ["train", "pretrain"])
def test_train_and_pretrain_help_say_what_the_command_does_each_group_with_its_options_and_each_key(
    command, capsys, in_process
):
    """Their --help: a line for each config group the command composes (its options named) and for each key
    of its own (not Hydra's dump of the groups)."""
    from omegaconf import OmegaConf

    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "powered by Hydra" not in out and "attnclf_schema" not in out
    said = {line.split()[0]: line for line in out.splitlines() if line.strip() and not line.startswith(" ")}
    conf = OmegaConf.load(ROOT / "conf" / f"{command}.yaml")
    groups = [next(iter(d)) for d in conf.defaults if isinstance(d, dict) or OmegaConf.is_dict(d)]
    for group in [g for g in groups if g != "hydra"]:
        options = sorted(p.stem for p in (ROOT / "conf" / group).glob("*.yaml"))
        # (its options may go on to the next line)
        text = out[out.index(said[group]) :].split("\n\n")[0]
        assert all(option in text for option in options), (group, options)
    # its own keys: the top-level ones of the config as composed (their defaults are their dataclass's)
    composed = compose_cfg(["paths.output_dir=/tmp/x"], command)
    own = [k for k in composed if k not in groups]
    assert len(own) >= 4
    for key in own:
        value = composed[key]
        names = [f"{key}.{k}" for k in value] if OmegaConf.is_dict(value) else [key]
        assert all(name in said for name in names), (key, names)


def test_every_planted_defect_targets_code_that_is_there_and_names_tests_that_are():
    """dev/mutants.py's list: each defect's pattern is found once in its file, as the runner needs it (none stale
    after code moves, none ambiguous), and each test it names exists, so that its fast tier runs what it says."""
    import re

    tree = ast.parse((ROOT / "dev" / "mutants.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "MUTANTS")
    stale, missing = [], []
    for name, path, pattern, _, tests in ast.literal_eval(node.value):
        if not (ROOT / path).is_file() or len(re.findall(pattern, (ROOT / path).read_text())) != 1:
            stale.append(name)
        for test in tests:
            file, _, function = test.partition("::")
            source = (ROOT / file).read_text() if (ROOT / file).is_file() else ""
            if not source or (function and f"def {function.split('[')[0]}(" not in source):
                missing.append(f"{name}: {test}")
    assert stale == [] and missing == []


def test_no_mechanism_is_named_outside_its_own_code_the_default_and_the_old_checkpoints_conversion():
    """A mechanism is one class and one YAML: no literal "dot" or "additive" in the package but in their own
    module, the settings' default and the conversion of checkpoints written before attentions were classes."""
    allowed = {"attnclf/models/attention.py", "attnclf/settings/attention.py", "attnclf/training/checkpoint.py"}
    named = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "attnclf").rglob("*.py"))
        if str(path.relative_to(ROOT)) not in allowed
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"""["'](dot|additive)["']""", line)
    ]
    assert named == []
