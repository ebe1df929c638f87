"""Start-up cost: tokenising and caching on a first start, a second start from the cache, and train.py's first step.

    python scripts/bench_data.py --data /path/to/imdb

Each measurement is a fresh process against a fresh cache folder, imports included:
1. first start: the DataModule's setup tokenises train and test (what training
   uses) and writes the cache;
2. second start: the same setup, reading the cache;
(both also split into the imports - torch, datasets, Lightning - and the data work;)
3. all splits: train, test and unsupervised (100,000 reviews on IMDb) tokenised
   and cached, for the rate on the whole dataset;
4. `python train.py` with the warm cache, stopped after its first optimizer step
   (`trainer.max_steps=1`, no validation or test): the whole process, exit
   included, so an upper bound on the time to the first step.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from harness import isolated  # (scripts/harness.py: what the benchmarks share)

ROOT = Path(__file__).resolve().parents[1]

SETUP = """
import time
t = time.perf_counter()
from attnclf.data.datamodule import TextDataModule
from attnclf.settings.data import DataConfig
imported = time.perf_counter() - t
dm = TextDataModule(DataConfig(path={data!r}, cache_dir={cache!r}))
dm.setup("fit")
n = (len(dm.train_set), len(dm.val_set), len(dm.test_set), len(dm.vocab))
total = time.perf_counter() - t
print(f"{{total:.2f}}", f"imports {{imported:.2f}} s + data {{total - imported:.2f}} s; "
      f"train {{n[0]}}, val {{n[1]}}, test {{n[2]}}, vocabulary {{n[3]}}")
"""

ALL_SPLITS = """
import time
t = time.perf_counter()
from attnclf.data.encoding import encode_split
from attnclf.data.loading import load_splits
ds = load_splits({data!r})
n = sum(len(encode_split(ds[s], "text", "label", {cache!r}).labels) for s in ds)
print(f"{{time.perf_counter() - t:.2f}}", f"{{n}} reviews in splits {{', '.join(ds)}}")
"""


def python(code: str) -> tuple[float, str]:
    out = isolated([sys.executable, "-c", code])
    secs, what = out.stdout.strip().splitlines()[-1].split(" ", 1)
    return float(secs), what


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        fmt = dict(root=str(ROOT), data=args.data, cache=cache)
        rows = [("first start (tokenise + cache)", *python(SETUP.format(**fmt)))]
        rows.append(("second start (from the cache)", *python(SETUP.format(**fmt))))
        with tempfile.TemporaryDirectory() as cache_all:
            rows.append(("all splits (tokenise + cache)", *python(ALL_SPLITS.format(**{**fmt, "cache": cache_all}))))
        t = time.perf_counter()
        isolated(
            [
                sys.executable,
                "train.py",
                f"data.path={args.data}",
                f"paths.cache_dir={cache}",
                f"hydra.run.dir={out}",
                "trainer.max_steps=1",
                "trainer.limit_val_batches=0",
                "test=false",
            ],
            cwd=ROOT,
        )
        rows.append(("train.py to its first step", time.perf_counter() - t, "warm cache, whole process"))
    for name, secs, what in rows:
        print(f"{name:<32} {secs:6.2f} s   {what}")


if __name__ == "__main__":
    main()
