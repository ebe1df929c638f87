"""`attnclf <command> [arguments]`: every tool of attnclf as one installed command, as litgpt's `litgpt <cmd>`.

The Hydra apps (train, eval, faithfulness, attention-tests, pretrain) take Hydra's key=value overrides, as
`python train.py ...` does, and predict key=value too; the others take flags. `attnclf <command> --help` says
each one's. The root entry points of a checkout (`python train.py ...`) call the same code.

Each command is one module here, read top to bottom: what it does (calling the measures, models, data and
training in their own folders), its settings dataclass, and `command`, what `main` below calls: with a Hydra
app's composed config (`hydra_app`), or with the arguments as given (predict, export, the flag commands). A
user error on either path is one line and exit status 2 (user_errors.py).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# name: (module, one line on what it does)
COMMANDS = {
    "train": ("attnclf.commands.train", "train a classifier: attnclf train attention=additive [key=value ...]"),
    "eval": ("attnclf.commands.eval", "accuracy, loss, macro-F1 and confusion of a run on its own test rows"),
    "predict": ("attnclf.commands.predict", "classify texts, each word's attention beside (text=... or input=...)"),
    "faithfulness": (
        "attnclf.commands.faithfulness",
        "can a run's attention maps be trusted? agreement, erasure, ERASER, adversarial attention",
    ),
    "attention-tests": (
        "attnclf.commands.attention_tests",
        "Wiegreffe & Pinter's tests of a run's attention: test=diagnostic or adversarial",
    ),
    "serve": (
        "attnclf.commands.serve",
        "serve runs over HTTP: a JSON API and a page where their attentions read a text side by side",
    ),
    "pretrain": ("attnclf.commands.pretrain", "pretrain the encoder as two language models"),
    "export": ("attnclf.commands.export", "a run in the Hugging Face Hub's layout: safetensors, config, model card"),
    "report": ("attnclf.commands.report", "summarise a sweep folder: ranking, mean ± sd, every two attentions paired"),
    "compare-datasets": (
        "attnclf.commands.compare_datasets",
        "dot vs additive on several datasets, each by its protocol, then one report",
    ),
    "study": (
        "attnclf.commands.study",
        "run the attentions on datasets until every pair is settled or the budget is spent, then report",
    ),
    "compare-faithfulness": (
        "attnclf.commands.compare_faithfulness",
        "faithfulness results side by side, or mean ± sd per attention",
    ),
    "compare-attention": (
        "attnclf.commands.compare_attention",
        "several runs' attention maps over the same reviews, any attentions",
    ),
    "agreement": ("attnclf.commands.agreement", "how far runs' attention maps agree, across seeds and attentions"),
    "imbalance": ("attnclf.commands.imbalance", "a copy of a dataset with a rare class (class-weight experiments)"),
}


# the Hydra apps: their config (its hydra.help.template is the command's --help)
HYDRA_APPS = {
    "train": "train",
    "eval": "eval",
    "faithfulness": "faithfulness",
    "attention-tests": "attention_tests",
    "pretrain": "pretrain",
    "serve": "serve",
}


def hydra_help(name: str) -> str:
    """A Hydra app's --help, read from its YAML as Hydra prints it, without importing the app (torch,
    Lightning and the command's logic take seconds to import; the help is text)."""
    from importlib.resources import files

    import yaml

    config = yaml.safe_load(files("attnclf.conf").joinpath(f"{HYDRA_APPS[name]}.yaml").read_text(encoding="utf-8"))
    return config["hydra"]["help"]["template"]


# the commands read by hand (key=value taken literally): their --help is the HELP text of their module
TEXT_HELP = ("predict", "export")


def text_help(name: str) -> str:
    """The HELP text of a command's module, read from its source without running it (its imports take
    seconds; the help is a string)."""
    import ast
    from importlib.util import find_spec

    tree = ast.parse(Path(find_spec(COMMANDS[name][0]).origin).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "HELP")
    return ast.literal_eval(node.value)


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: attnclf <command> [arguments]   (attnclf <command> --help: the command's own)", "", "commands:"]
    return "\n".join([*lines, *(f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items())])


def main(argv: list[str] | None = None) -> int:
    """Run `attnclf <command> ...`; its exit status (2: no command, or one that is not attnclf's)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if not argv or argv[0] not in COMMANDS:
        said = f"unknown command {argv[0]!r}" if argv else "give a command"
        print(f"error: {said}; allowed: {', '.join(COMMANDS)} (attnclf --help says what each does)", file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    if any(a in ("-h", "--help") for a in rest) and (name in HYDRA_APPS or name in TEXT_HELP):
        print(hydra_help(name) if name in HYDRA_APPS else text_help(name))
        # as the app itself ends its --help
        raise SystemExit(0)
    if name in HYDRA_APPS:
        return hydra_app(name, rest)
    from attnclf.commands.user_errors import one_line

    # predict, export and the commands that take flags: their arguments as given
    status = one_line(importlib.import_module(COMMANDS[name][0]).command, rest)
    # (a flag command's exit status; predict and export return what they made)
    return status if isinstance(status, int) else 0


def hydra_app(name: str, argv: list[str]) -> int:
    """A Hydra app: its config composed from the command line (Hydra's grammar: key=value, -m sweeps, --cfg),
    then its module's `command(cfg)`; a user error in either is one line (attnclf/commands/user_errors.py)."""
    import hydra

    from attnclf.commands.user_errors import composed_or_one_line, one_line

    module = importlib.import_module(COMMANDS[name][0])
    # the command line as the program was started (`attnclf train ...`, `python train.py ...`)
    started = list(sys.argv)

    def task(cfg):
        # given back once Hydra has read it: Lightning's DDP starts each further rank with it
        sys.argv = started
        return one_line(module.command, cfg)

    # Hydra reads its command line there; the app's name is its config's hydra.job.name (its log file)
    sys.argv = [f"attnclf {name}", *argv]
    app = hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name=HYDRA_APPS[name])(task)
    composed_or_one_line(app, HYDRA_APPS[name])
    return 0


def run_command() -> None:
    """The `attnclf` console script."""
    sys.exit(main())
