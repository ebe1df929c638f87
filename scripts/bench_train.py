"""Useful (non-padding) training tokens/s of the real pipeline on a fixed IMDb subset.

    python scripts/bench_train.py --data ../shared/data/imdb [--subset 5000] [--attention dot additive]

Runs `train(cfg)` (Lightning, default callbacks and TensorBoard logging) for one
epoch on a fixed subset of the training reviews, for each attention, and prints
useful training tokens/s and evaluation reviews/s. Timings, not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnclf.train import train  # noqa: E402


def product_run(args, attention: str, out: Path) -> dict:
    overrides = [
        f"attention={attention}",
        f"data.path={args.data}",
        f"data.train_size={args.subset}",
        f"data.max_length={args.max_length}",
        f"data.batch_size={args.batch_size}",
        f"model.embed_dim={args.embed_dim}",
        f"model.hidden_dim={args.hidden_dim}",
        f"paths.output_dir={out}",
        "trainer.max_epochs=1",
        "trainer.accelerator=cpu",
        "callbacks.rich_progress_bar=null",
        "trainer.enable_model_summary=false",
        "test=false",
        "trainer.num_sanity_val_steps=0",
        "data.val_size=1000",
    ]
    if args.threads:
        overrides.append(f"num_threads={args.threads}")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train", overrides=overrides + args.overrides)
    train(cfg)
    return json.loads((out / "metrics.json").read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb", help="Hub id or local IMDb folder")
    p.add_argument("--subset", type=int, default=5000, help="training reviews (a fixed random subset)")
    p.add_argument("--attention", nargs="+", default=["dot", "additive"], choices=["dot", "additive"])
    p.add_argument("--max-length", type=int, default=400)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--embed-dim", type=int, default=128)
    p.add_argument("--hidden-dim", type=int, default=128)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = PyTorch's default)")
    p.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. data.truncation=head")
    args = p.parse_args()

    rows = []
    for attention in args.attention:
        with tempfile.TemporaryDirectory() as tmp:
            m = product_run(args, attention, Path(tmp))
        rows.append((attention, m["train_tokens_per_sec"], m["eval_reviews_per_sec"], m["train_seconds"]))
    print(
        f"\nsubset {args.subset} reviews, max_length {args.max_length}, batch {args.batch_size}, "
        f"embed {args.embed_dim}, hidden {args.hidden_dim}"
    )
    print(f"{'attention':<10} {'train tokens/s':>15} {'eval reviews/s':>15} {'train s':>8}")
    for attention, tps, rps, secs in rows:
        print(f"{attention:<10} {tps:>15,.0f} {rps:>15,.0f} {secs:>8.1f}")


if __name__ == "__main__":
    main()
