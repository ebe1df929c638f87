"""Start-up cost: tokenising and caching on a first start, a second start from the cache, and train.py's first step.

    python scripts/bench_data.py --data /path/to/imdb
    python scripts/bench_data.py --data /path/to/imdb --rows 25000,100000,400000,1600000

Without --rows:

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

With --rows, memory against the number of rows: for each size, a copy of the data whose training split
holds that many rows (distinct copies of the given training rows: copy k appends the word `copy<k>`) and the
first 2,500 of its test rows, then `TextDataModule(...).setup("fit")` (validation carved: 10%) in a fresh
process on a fresh token cache (first start), again (second start), and both as two DDP ranks of one machine
started together on a fresh cache (`RANK` 0 and 1, as Lightning's launcher sets them). Memory is sampled
every 0.05 s over each process and its children (the tokenising workers) from /proc/<pid>/smaps_rollup:
peak PSS (private memory plus each process's share of the mapped files: the Arrow texts and the token
cache, page cache that the ranks share and the kernel can drop), and the data stage's own part of it: the
peak less what the processes held after their imports (torch, Lightning, datasets), private (anonymous: what
no other process shares) and PSS.
`datasets`' own Arrow copy of each size is made before the timings (HF_DATASETS_CACHE in a scratch folder).
"""

from __future__ import annotations

import argparse
import os
import subprocess
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


# the data stage alone, in a fresh process: its own seconds, after the imports
STAGE = """
import time
from pathlib import Path
from attnclf.data.datamodule import TextDataModule
from attnclf.settings.data import data_config
# what the process holds before the data stage (the imports): kB of private memory and of PSS
kb = dict(line.split(":", 1) for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:])
before = int(kb["Pss_Anon"].split()[0]), int(kb["Pss"].split()[0])
t = time.perf_counter()
dm = TextDataModule(data_config({{"path": {data!r}, "cache_dir": {cache!r}}}))
dm.setup("fit")
print(f"{{time.perf_counter() - t:.2f}}", len(dm.train_set), len(dm.val_set), *before, flush=True)
"""


def synthesised(source: str, rows: int, folder: Path) -> Path:
    """`folder` holding train.parquet (`rows` rows: distinct copies of the source's training rows) and
    test.parquet (the source's first 2,500 test rows), read once by `datasets` so that its Arrow copy is made."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attnclf.data.loading import load_splits

    ds = load_splits(source)
    # (a fixed order: a size below the split's is not one class)
    train = ds["train"].shuffle(seed=0)
    texts, labels = train["text"][:], train["label"][:]
    folder.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("text", pa.string()), ("label", pa.int64())])
    with pq.ParquetWriter(folder / "train.parquet", schema) as out:
        for start in range(0, rows, len(texts)):
            k, n = start // len(texts), min(len(texts), rows - start)
            copy = texts[:n] if k == 0 else [f"{t} copy{k}" for t in texts[:n]]
            out.write_table(pa.table({"text": copy, "label": labels[:n]}, schema=schema))
    test = ds["test"].select(range(min(2500, len(ds["test"]))))
    pq.write_table(
        pa.table({"text": test["text"][:], "label": test["label"][:]}, schema=schema), folder / "test.parquet"
    )
    # datasets' Arrow copy, made now: the timings are the data stage's
    subprocess.run(
        [sys.executable, "-c", f"from attnclf.data.loading import load_splits; load_splits({str(folder)!r})"],
        check=True,
    )
    return folder


def tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [pid, *(p for kid in kids for p in tree(int(kid)))]


def memory(pids: list[int]) -> tuple[int, int]:
    """(private, PSS) bytes of the processes, from smaps_rollup."""
    private = pss = 0
    for pid in pids:
        try:
            fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
        except (OSError, ValueError):
            continue
        kb = {k: int(v.split()[0]) for k, v in fields.items()}
        private += 1024 * kb.get("Pss_Anon", 0)
        pss += 1024 * kb.get("Pss", 0)
    return private, pss


def stage(data: Path, cache: Path, ranks: int) -> dict:
    """`ranks` processes started together, each summed over its process tree: seconds (the slowest rank's data
    stage), peak PSS GB, the data stage's own peak private and PSS GB (above what the processes held after their
    imports), and "training rows (+ validation)"."""
    code = STAGE.format(data=str(data), cache=str(cache))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r)},
            # (not a checkout's root: the attnclf imported is the installed one, or PYTHONPATH's)
            cwd=cache.parent,
        )
        for r in range(ranks)
    ]
    peak_private = peak_pss = 0
    while any(p.poll() is None for p in procs):
        private, pss = memory([pid for p in procs for pid in tree(p.pid)])
        peak_private, peak_pss = max(peak_private, private), max(peak_pss, pss)
        time.sleep(0.05)
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit(f"error: the data stage failed on {data} ({ranks} rank(s))")
    said = [o.strip().splitlines()[-1].split() for o in outs]
    before_private, before_pss = (1024 * sum(int(s[i]) for s in said) for i in (3, 4))
    return {
        "s": max(float(s[0]) for s in said),
        "peak": peak_pss / 1e9,
        "own private": (peak_private - before_private) / 1e9,
        "own PSS": (peak_pss - before_pss) / 1e9,
        "rows": f"{int(said[0][1]):,} (+{int(said[0][2]):,})",
    }


def by_rows(source: str, sizes: list[int]) -> None:
    """The --rows table: per size, first and second start, one process and two ranks."""
    print(
        "| training rows (+ validation) | start | 1 process: s | peak PSS, GB | data stage's own: private "
        "/ PSS, GB | 2 ranks: s | peak PSS, GB | data stage's own: private / PSS, GB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["HF_DATASETS_CACHE"] = str(Path(scratch) / "hf")
        for rows in sizes:
            data = synthesised(source, rows, Path(scratch) / f"rows{rows}")
            caches = {n: Path(scratch) / f"cache{rows}_{n}" for n in (1, 2)}
            for start in ("first", "second"):
                one, two = stage(data, caches[1], 1), stage(data, caches[2], 2)
                cells = " | ".join(
                    f"{m['s']:.1f} | {m['peak']:.2f} | {m['own private']:.2f} / {m['own PSS']:.2f}" for m in (one, two)
                )
                print(f"| {one['rows']} | {start} | {cells} |", flush=True)
            for path in (data, *caches.values()):
                subprocess.run(["rm", "-rf", str(path)], check=True)


def python(code: str) -> tuple[float, str]:
    out = isolated([sys.executable, "-c", code])
    secs, what = out.stdout.strip().splitlines()[-1].split(" ", 1)
    return float(secs), what


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb")
    p.add_argument("--rows", help="sizes of the training split, comma-separated: memory against rows (see above)")
    args = p.parse_args()
    if args.rows:
        by_rows(args.data, [int(n) for n in args.rows.split(",")])
        return
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
