"""int8 beside float, offline: each run's test accuracy (`attnclf eval`), its offline reviews/s
(`TrainedClassifier.predict`, batches of 64, over a seeded sample of the test reviews) and the peak resident
memory of each, float and int8 measured in turn in the same run (each a process of its own).

    python scripts/bench_int8.py --ckpt <dot run> --ckpt <additive run> [--reviews 2000] [--threads 2]
        [--skip-eval] [--out bench_int8.json]

The served figures (1 and 16 texts a request, 8 and 32 clients) are scripts/bench_serve.py's, with
--quantize int8. Timings, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

OFFLINE = """
import json, sys, time, random, resource, torch
from attnclf.inference.trained import TrainedClassifier
from attnclf.inference.as_trained import texts_as_trained
ckpt, quantize, n, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
clf = TrainedClassifier.from_checkpoint(ckpt, quantize=quantize)
texts, _ = texts_as_trained(clf, "test", {})
texts = random.Random(0).sample(list(texts), min(n, len(texts)))
clf.predict(texts[:64])
rates = []
for _ in range(3):
    t = time.perf_counter()
    clf.predict(texts, batch_size=64)
    rates.append(len(texts) / (time.perf_counter() - t))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"reviews_s": sorted(rates)[1], "peak_mib": peak}))
"""


def run_eval(ckpt: str, quantize: str, threads: int) -> dict:
    """`attnclf eval` of `ckpt` on its test split: accuracy and loss, and the process's peak memory."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "eval.json"
        cmd = [
            sys.executable,
            "-m",
            "attnclf",
            "eval",
            f"ckpt={ckpt}",
            f"quantize={quantize}",
            f"output={out}",
            f"num_threads={threads}",
            f"hydra.run.dir={tmp}/run",
        ]
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        if status:
            sys.exit(f"error: attnclf eval failed: {proc.stderr.read()[-2000:]}")
        result = json.loads(out.read_text())
    return {"accuracy": result["accuracy"], "loss": result.get("loss"), "eval_peak_mib": usage.ru_maxrss / 1024}


def offline(ckpt: str, quantize: str, reviews: int, threads: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", OFFLINE, ckpt, quantize, str(reviews), str(threads)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", action="append", required=True, help="a run folder (repeat for several)")
    ap.add_argument("--reviews", type=int, default=2000, help="test reviews of the offline timing")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-eval", action="store_true", help="offline speed and memory only")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for ckpt in args.ckpt:
        for quantize in ("none", "int8"):
            row = {"run": Path(ckpt).name, "quantize": quantize}
            row |= offline(ckpt, quantize, args.reviews, args.threads)
            if not args.skip_eval:
                row |= run_eval(ckpt, quantize, args.threads)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("| run | weights | test accuracy | change, points | offline reviews/s | x float | peak MiB (offline) |")
    print("|---|---|---|---|---|---|---|")
    for f, q in zip(rows[::2], rows[1::2], strict=True):
        for r in (f, q):
            acc = f"{100 * r['accuracy']:.2f}" if "accuracy" in r else "-"
            change = f"{100 * (r['accuracy'] - f['accuracy']):+.2f}" if "accuracy" in r else "-"
            print(
                f"| {r['run']} | {'float' if r is f else 'int8'} | {acc} | {change} | {r['reviews_s']:.1f} | "
                f"{r['reviews_s'] / f['reviews_s']:.2f} | {r['peak_mib']:.0f} |"
            )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
