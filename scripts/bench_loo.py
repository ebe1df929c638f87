"""Leave-one-out of one review, its deletions read whole against its states shared among them
(attnclf/models/deletions.py), at lengths from 16 to 1,000 tokens of a trained run's vocabulary, and reviews of
one length grouped as `attnclf faithfulness` groups them. Each pair one after the other in this process; the
ratio is the figure to compare.

    python scripts/bench_loo.py --ckpt <run> [--threads 2] [--lengths 16,32,64,100,174,400,1000]

Timings, not a test.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from attnclf.analysis import measures
from attnclf.inference.trained import TrainedClassifier
from attnclf.models.deletions import shares_states


def seconds(model, seqs, probs, share_from: int, repeat: int) -> float:
    """The mean seconds of leave_one_out over `seqs`, sharing states from `share_from` tokens on."""
    kept, measures.SHARED_FROM = measures.SHARED_FROM, share_from
    try:
        measures.leave_one_out(model, seqs[:1], probs[:1])
        t = time.perf_counter()
        for _ in range(repeat):
            measures.leave_one_out(model, seqs, probs)
        return (time.perf_counter() - t) / repeat
    finally:
        measures.SHARED_FROM = kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ckpt", required=True, help="a run folder or checkpoint (one layer of GRU, plain states)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lengths", default="16,32,64,100,174,400,1000", help="review lengths in tokens, comma-separated")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = TrainedClassifier.from_checkpoint(args.ckpt).module.model
    if not shares_states(model):
        raise SystemExit(f"error: {args.ckpt}'s encoder reads its deletions whole (one layer of GRU, plain states)")
    rng = np.random.default_rng(0)
    print("tokens | reviews | whole s | shared s | whole / shared")
    for n in (int(k) for k in args.lengths.split(",")):
        for count in (1, max(2, 4000 // n)):
            seqs = [rng.integers(2, model.embed.num_embeddings, n) for _ in range(count)]
            probs = measures.probabilities(model, seqs)
            repeat = 5 if n * count < 5000 else 1
            whole, shared = seconds(model, seqs, probs, 10**9, repeat), seconds(model, seqs, probs, 2, repeat)
            print(f"{n} | {count} | {whole:.4f} | {shared:.4f} | {whole / shared:.2f}")


if __name__ == "__main__":
    main()
