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
from pathlib import Path


def imbalance(src: Path, out: Path, rows: dict[str, int], rare: str, share: float, seed: int) -> dict[str, dict]:
    """The copy; per split, the rows of each class written."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, total in rows.items():
        lines = [json.loads(x) for x in (src / f"{split}.jsonl").read_text().splitlines() if x.strip()]
        few = [r for r in lines if str(r["label"]) == rare]
        rest = [r for r in lines if str(r["label"]) != rare]
        n_rare = round(share * total)
        if n_rare > len(few) or total - n_rare > len(rest):
            raise SystemExit(
                f"error: {split} has {len(few)} rows of class {rare} and {len(rest)} others; "
                f"asked for {n_rare} and {total - n_rare}"
            )
        picked = rng.sample(few, n_rare) + rng.sample(rest, total - n_rare)
        rng.shuffle(picked)
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked))
        counts[split] = {}
        for r in picked:
            counts[split][str(r["label"])] = counts[split].get(str(r["label"]), 0) + 1
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="attnclf imbalance", description=__doc__.split("\n\n")[0])
    p.add_argument("src", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--rows", nargs="+", required=True, help="SPLIT=N ...")
    p.add_argument("--rare", required=True, help="CLASS=SHARE, e.g. 0=0.018")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rows = {k: int(v) for k, v in (x.split("=", 1) for x in args.rows)}
    rare, share = args.rare.split("=", 1)
    for split, n in imbalance(args.src, args.out, rows, rare, float(share), args.seed).items():
        print(split, dict(sorted(n.items())))
    return 0
