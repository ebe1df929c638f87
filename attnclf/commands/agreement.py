"""How alike are the attention maps of runs that differ only in their seed, and of dot against additive?

    attnclf agreement RUN [RUN ...] [--data /path/to/imdb] [--reviews 1000]

RUN: a run folder (its best checkpoint) or a .ckpt. The runs are grouped by their attention; on the
same sample of reviews (as attnclf faithfulness draws it), it prints the mean Jensen-Shannon distance
(base 2: 0 = the same weights, 1 = no token in common) between the weights of every pair of runs
within a group (the seeds) and across groups (dot against additive), and between each run's weights
and uniform weights (Wiegreffe & Pinter's baseline). `--output` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

from attnclf.commands.keyvalue import Keys, as_flags, usage
from attnclf.errors import AttnclfError
from attnclf.settings.run import checkpoints_given
from attnclf.utils.jsonfile import write_json

KEYS = Keys(
    "agreement",
    positional=(("ckpt", "runs"),),
    flags={
        k: f"--{k.replace('_', '-')}" for k in ("data", "split", "reviews", "max_tokens", "seed", "cache_dir", "output")
    }
    | {"data.path": "--data"},
)


def parse(argv):
    argv = as_flags(list(argv), KEYS)
    p = argparse.ArgumentParser(
        prog="attnclf agreement",
        usage=usage(KEYS, "'ckpt=[<run>,<run>,...]' [data.path=<data>] [split=test] [reviews=1000] [output=<json>]"),
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("runs", nargs="+", help="run folders or checkpoints (two or more)")
    p.add_argument(
        "--data", help="Hub id, local dataset folder or one file (default: the data the runs were trained on)"
    )
    p.add_argument("--split", default="test")
    p.add_argument("--reviews", type=int, default=1000)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "attnclf"))
    p.add_argument("--output", help="write the figures to this JSON file")
    return p.parse_args(argv)


def pairs_summary(distances: list[np.ndarray]) -> dict:
    per_pair = [float(d.mean()) for d in distances]
    return {"mean_js": float(np.mean(per_pair)), "pairs": len(per_pair), "per_pair": per_pair}


def agreement(args) -> dict:
    if len(args.runs) < 2:
        raise AttnclfError("give two or more runs to compare")
    checkpoints_given(args.runs, "compare")
    # (the measures' imports after the checks: --help and a bad value answer at once)
    from attnclf.analysis.measures import attention_weights, js_distance
    from attnclf.commands.faithfulness import load_all

    given = {"path": args.data} if args.data else {}
    clfs, seqs = load_all(args.runs, args.split, given, args.reviews, args.max_tokens, args.seed, args.cache_dir)
    weights = [attention_weights(c.module.model, s, 8192) for c, s in zip(clfs, seqs, strict=True)]
    names = [c.module.hparams.attention for c in clfs]
    uniform = [np.full(len(s), 1.0 / len(s)) for s in seqs[0]]
    result: dict = {"reviews": len(seqs[0]), "max_tokens": args.max_tokens, "runs": {}, "within": {}, "across": {}}
    for run, name, w in zip(args.runs, names, weights, strict=True):
        result["runs"][run] = {"attention": name, "mean_js_to_uniform": float(js_distance(w, uniform).mean())}
    groups = sorted(set(names))
    for g in groups:
        members = [w for n, w in zip(names, weights, strict=True) if n == g]
        if len(members) >= 2:
            result["within"][g] = pairs_summary([js_distance(a, b) for a, b in itertools.combinations(members, 2)])
    for g, h in itertools.combinations(groups, 2):
        a_s = [w for n, w in zip(names, weights, strict=True) if n == g]
        b_s = [w for n, w in zip(names, weights, strict=True) if n == h]
        result["across"][f"{g} vs {h}"] = pairs_summary([js_distance(a, b) for a in a_s for b in b_s])
    return result


def command(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    result = agreement(args)
    print(
        f"{result['reviews']} reviews of {args.split} (at most {args.max_tokens} tokens); mean Jensen-Shannon distance"
    )
    print(f"{'':<24}{'mean JS':>10}{'pairs':>7}")
    for label, block in (("seeds", result["within"]), ("", result["across"])):
        for name, s in block.items():
            print(f"{(name + ' ' + label).strip():<24}{s['mean_js']:>10.4f}{s['pairs']:>7}")
    for run, r in result["runs"].items():
        print(f"{r['attention']} to uniform  {r['mean_js_to_uniform']:.4f}  {run}")
    if args.output:
        write_json(args.output, result)
        print(f"written to {args.output}")
    return 0
