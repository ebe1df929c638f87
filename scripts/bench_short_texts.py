"""Training speed on short texts against long reviews: useful (non-padding) tokens/s of the product.

    python scripts/bench_short_texts.py --long /path/to/imdb --short /path/to/mr.csv [--steps 60]
        [--repeats 3] [--threads 2] [-- key=value ...]

Each repeat trains `python train.py` for `--steps` optimizer steps on each dataset (no validation, no
test, no logger), the two in alternating order, each in its own process; the medians of the useful
training tokens/s (the Throughput callback's, as in metrics.json) are printed, with short/long. A step
of short texts carries fewer tokens, but some of a step's cost does not shrink with its text (the
optimizer's update of the whole embedding, the launch of every layer): the ratio says how much.
Overrides after `--` go to both (e.g. `data.batch_size=128` or a lever under test). Timings, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from harness import isolated  # (scripts/harness.py: what the benchmarks share)

ROOT = Path(__file__).resolve().parents[1]


def tokens_per_sec(data: str, steps: int, threads: int, extra: list[str], out: Path) -> float:
    cmd = [
        sys.executable,
        "train.py",
        f"data.path={data}",
        f"trainer.max_steps={steps}",
        "trainer.max_epochs=-1",
        "trainer.limit_val_batches=0",
        "trainer.num_sanity_val_steps=0",
        "test=false",
        "logger=none",
        "callbacks.rich_progress_bar=null",
        "callbacks.attention_maps=null",
        f"num_threads={threads}",
        f"hydra.run.dir={out}",
        *extra,
    ]
    isolated(cmd, cwd=ROOT)
    return json.loads((out / "metrics.json").read_text())["train_tokens_per_sec"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--long", required=True, help="long texts (IMDb)")
    p.add_argument("--short", required=True, help="short texts (MR, a file)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    seen: dict[str, list[float]] = {"long": [], "short": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            order = ("long", "short") if rep % 2 == 0 else ("short", "long")
            for name in order:
                out = Path(tmp) / f"{name}_{rep}"
                seen[name].append(tokens_per_sec(getattr(args, name), args.steps, args.threads, extra, out))
                print(f"  repeat {rep + 1} {name:<5} {seen[name][-1]:>10,.0f} useful tokens/s", file=sys.stderr)
    long, short = (statistics.median(seen[n]) for n in ("long", "short"))
    given = f" with {' '.join(extra)}" if extra else ""
    print(f"{args.steps} steps, {args.threads} threads, median of {args.repeats}{given}")
    print(f"  long  ({args.long}): {long:>10,.0f} useful tokens/s")
    print(f"  short ({args.short}): {short:>10,.0f} useful tokens/s   short/long {short / long:.2f}x")


if __name__ == "__main__":
    main()
