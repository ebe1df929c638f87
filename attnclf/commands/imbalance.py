"""A smaller, imbalanced copy of a dataset of JSON Lines splits: to measure what a rare class and few rows do.

    attnclf imbalance SRC OUT --rows train=5500 validation=800 test=1500 --rare 0=0.018 [--seed 0]

SRC: a folder of <split>.jsonl files (a "label" column); OUT gets the same splits, each of the rows given,
the --rare class at that share of them (rounded) and the rest drawn from the other classes as they come
(seeded, without replacement).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from attnclf.commands.keyvalue import Keys, as_flags, usage
from attnclf.data.loading import json_lines
from attnclf.errors import AttnclfError


def imbalance(src: Path, out: Path, rows: dict[str, int], rare: str, share: float, seed: int) -> dict[str, dict]:
    """The copy; per split, the rows of each class written. Every split is drawn (and checked) before any
    file is written."""
    rng = random.Random(seed)
    drawn = {}
    for split, total in rows.items():
        path = src / f"{split}.jsonl"
        if not path.is_file():
            raise AttnclfError(f"{path}: no such file (SRC holds a <split>.jsonl for each split of --rows)")
        lines = rows_of(path)
        few = [r for r in lines if str(r["label"]) == rare]
        rest = [r for r in lines if str(r["label"]) != rare]
        n_rare = round(share * total)
        if n_rare > len(few) or total - n_rare > len(rest):
            raise AttnclfError(
                f"{split} has {len(few)} rows of class {rare} and {len(rest)} others; "
                f"asked for {n_rare} and {total - n_rare}"
            )
        drawn[split] = rng.sample(few, n_rare) + rng.sample(rest, total - n_rare)
        rng.shuffle(drawn[split])
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, picked in drawn.items():
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked))
        counts[split] = {}
        for r in picked:
            counts[split][str(r["label"])] = counts[split].get(str(r["label"]), 0) + 1
    return counts


def rows_of(path: Path) -> list[dict]:
    """A JSON Lines split's rows, each an object with a "label"; a line that is not (or is not JSON, or a byte
    that is not UTF-8) is one error naming it."""
    rows = json_lines(path)
    for n, row in rows:
        if not isinstance(row, dict) or "label" not in row:
            raise AttnclfError(f'{path}: line {n} has no "label" (each line is an object with one)')
    return [row for _, row in rows]


def parsed(flag: str, given: str, value: type) -> tuple[str, float]:
    """NAME=VALUE of a flag, its value of the type given; a one-line error naming it otherwise."""
    name, eq, number = given.partition("=")
    try:
        if not (name and eq):
            raise ValueError
        return name, value(number)
    except ValueError:
        kind = "a whole number" if value is int else "a number"
        raise AttnclfError(f"{flag} {given!r}: give NAME=VALUE, VALUE {kind}") from None


KEYS = Keys(
    "imbalance",
    positional=(("src", "data.path"), ("out",)),
    flags={"rows": "--rows", "rare": "--rare", "seed": "--seed"},
    free=frozenset({"--rows", "--rare"}),
)


def command(argv=None) -> int:
    argv = as_flags(list(sys.argv[1:] if argv is None else argv), KEYS)
    p = argparse.ArgumentParser(
        prog="attnclf imbalance",
        usage=usage(KEYS, "src=<data> out=<folder> 'rows=[train=N,...]' rare=<class>=<share> [seed=0]"),
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("src", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--rows", nargs="+", required=True, help="SPLIT=N ...")
    p.add_argument("--rare", required=True, help="CLASS=SHARE, e.g. 0=0.018")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rows = dict(parsed("--rows", x, int) for x in args.rows)
    rare, share = parsed("--rare", args.rare, float)
    if not 0 <= share <= 1 or any(n < 1 for n in rows.values()):
        raise AttnclfError(f"--rare {args.rare} --rows {' '.join(args.rows)}: SHARE in [0, 1], each N 1 or more")
    for split, n in imbalance(args.src, args.out, rows, rare, share, args.seed).items():
        print(split, dict(sorted(n.items())))
    return 0
