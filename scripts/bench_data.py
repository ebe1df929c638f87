"""Start-up cost of the data: tokenising and caching on a first start, and a second start from the cache.

    python scripts/bench_data.py --data ../shared/data/imdb

Runs the DataModule's setup twice in fresh processes against an empty cache
folder (the first tokenises train and test and writes the cache; the second
reads it), and prints the seconds each took, including `datasets.load_dataset`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP = """
import sys, time
sys.path.insert(0, {root!r})
t = time.perf_counter()
from attnclf.data import IMDBDataModule
dm = IMDBDataModule(path={data!r}, cache_dir={cache!r})
dm.setup("fit")
sizes = (len(dm.train_set), len(dm.val_set), len(dm.test_set), len(dm.vocab))
print(f"{{time.perf_counter() - t:.2f}}", *sizes)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        code = SETUP.format(root=str(ROOT), data=args.data, cache=cache)
        for name in ("first start (tokenise + cache)", "second start (from the cache)"):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            secs, n_train, n_val, n_test, vocab = out.stdout.split()
            print(f"{name:<32} {float(secs):6.2f} s   train {n_train}, val {n_val}, test {n_test}, vocabulary {vocab}")


if __name__ == "__main__":
    main()
