"""How fast the command line answers: `attnclf <command> --help` for every command, and a bad value's one-line
refusal for each command that has one here, each timed as a whole process (`python -m attnclf ...`), the
median of --repeat runs, in a scratch folder.

    python scripts/bench_cli.py [--repeat 5]

Timings, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from attnclf.commands import COMMANDS

# a bad value each (exit status 2, one line), before any data or checkpoint work
REFUSALS = {
    "train": ["optimizer.lr=-1"],
    "eval": ["ckpt=/no/such/run"],
    "predict": ["ckpt=/no/such/run", "text=a", "batch_size=0"],
    "faithfulness": ["ckpt=/no/such/run"],
    "attention-tests": ["ckpt=/no/such/run"],
    "serve": ["ckpt=/no/such/run"],
    "pretrain": ["lm.lr=-1"],
    "export": ["ckpt=/no/such/run", "out=x"],
    "report": ["path=/no/such/folder"],
    "compare-datasets": ["attention=[nope]"],
    "compare-faithfulness": ["/no/such/folder"],
    "compare-attention": ["ckpt=[/no/such/a,/no/such/b]"],
    "agreement": ["ckpt=[/no/such/a,/no/such/b]"],
    "imbalance": ["src=/no/such", "out=x", "rows=[train=10]", "rare=0=0.1"],
}
# a mechanism's own key: checked against its class's constructor, which imports the class (and torch)
SLOWER = {"train (an attention key)": ["train", "attention.scale=3"]}


def seconds(args: list[str], cwd: str, repeat: int) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "attnclf", *args], cwd=cwd, capture_output=True).returncode
        times.append(time.perf_counter() - t)
    return statistics.median(times), code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print("| command | --help, s | a refusal, s |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as cwd:
        for name in COMMANDS:
            help_s, _ = seconds([name, "--help"], cwd, args.repeat)
            refusal = "-"
            if name in REFUSALS:
                took, code = seconds([name, *REFUSALS[name]], cwd, args.repeat)
                refusal = f"{took:.2f}" + ("" if code == 2 else f" (exit {code})")
            print(f"| {name} | {help_s:.2f} | {refusal} |", flush=True)
        for label, argv in SLOWER.items():
            took, code = seconds(argv, cwd, args.repeat)
            print(f"| {label} | | {took:.2f}" + ("" if code == 2 else f" (exit {code})") + " |", flush=True)


if __name__ == "__main__":
    main()
