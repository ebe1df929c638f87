"""Training speed of the product against a tutorial-style loop, a bare loop, and the GRU kernel alone.

    python scripts/bench_train.py --data /path/to/imdb [--subset 5000] [--repeats 3] [--threads 2]
        [--attention dot] [--max-length 400] [--batch-size 64] [--embed-dim 128] [--hidden-dim 128]
        [--contenders doc bare product kernel [loader]] [-- hydra.override=value ...]

Four contenders, each one epoch over the same training reviews at the same sizes
and thread count, each in its own process (so that peak memory is its own), in
rotating order, `--repeats` times; the medians are printed:

1. doc:     a tutorial-style ClassifierNet (the form this project started
            from) in a bare PyTorch loop: nn.GRU fed (T, B, D) padded to the batch's
            longest review, random batches, no lengths, no mask, the first GRU
            output as the query, Adam.
2. bare:    this project's model (attnclf.models.classifier) in a bare loop: the product's
            batches and optimiser (AdamW, gradient clipping), no Lightning.
3. product: train(cfg) through Lightning, default callbacks and TensorBoard logging.
4. kernel:  nn.GRU (bidirectional, same sizes) forward + backward alone on the
            product's batches: no embedding, attention, loss or optimiser (on
            CPU, nn.GRU runs its two directions one after the other; the
            product's default `concurrent` kernel runs them at the same time).
On request (--contenders ... loader): the product's batches alone, no model.

`--interleaved`: instead, one process takes the first `--steps` training
batches and, batch by batch in alternating order, runs a training step of the
bare loop's model with its default GRU kernel, of the same model with
`rnn_kernel=padded`, and the kernel contender's step: no process-to-process
noise, so the closest comparison of the model against the kernel.

Figures: useful (non-padding) training tokens/s (time includes loading the
batches, excludes start-up and validation), evaluation reviews/s (the
validation reviews; doc: unsorted batches), peak RSS, and the ratios
product/doc, product/bare, product/kernel. Every contender runs with the same
allocator setting, `keep_freed_memory` (on unless `-- keep_freed_memory=false`).
Timings, not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import isolated  # (scripts/harness.py: what the benchmarks share)

ROOT = Path(__file__).resolve().parents[1]

CONTENDERS = ("doc", "bare", "product", "kernel")
EXTRA = ("loader",)  # on request: the product's batches alone, no model (the cost of loading data)


def overrides(args, out: Path) -> list[str]:
    ov = [
        f"attention={args.attention}",
        f"data.path={args.data}",
        f"data.train_size={args.subset}",
        f"data.val_size={args.val_size}",
        f"data.max_length={args.max_length}",
        f"data.batch_size={args.batch_size}",
        f"model.embed_dim={args.embed_dim}",
        f"model.hidden_dim={args.hidden_dim}",
        f"paths.output_dir={out}",
        f"num_threads={args.threads}",
        "trainer.max_epochs=1",
        "trainer.accelerator=cpu",
        "trainer.num_sanity_val_steps=0",
        "test=false",
    ]
    return ov + args.overrides


def compose_cfg(args, out: Path):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="train", overrides=overrides(args, out))


# --- 1. the tutorial-style classifier this project started from, as such a tutorial writes it ---


def doc_model(vocab_size: int, embed_dim: int, hidden_dim: int, attention: str):
    import torch
    import torch.nn.functional as F
    from torch import nn

    class ScaledDotProductAttention(nn.Module):
        def __init__(self, dropout=0.1):
            super().__init__()
            self.dropout = nn.Dropout(dropout)

        def forward(self, Q, K, V, mask=None):
            scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(K.size(-1))
            if mask is not None:
                scores = scores.masked_fill(~mask, -1e9)
            attn_weights = self.dropout(F.softmax(scores, dim=-1))
            return torch.matmul(attn_weights, V), attn_weights

    class AdditiveAttention(nn.Module):
        def __init__(self, query_dim, key_dim, hidden_dim):
            super().__init__()
            self.query_proj = nn.Linear(query_dim, hidden_dim, bias=False)
            self.key_proj = nn.Linear(key_dim, hidden_dim, bias=False)
            self.score_proj = nn.Linear(hidden_dim, 1, bias=False)

        def forward(self, query, keys, values, mask=None):
            # as written (q.unsqueeze(2), k.unsqueeze(1)) the classifier's (B, 1, D) query makes a
            # (B, 1, T) weight that the final bmm rejects; this is the intended (B, T, h) sum, at the same cost:
            q = self.query_proj(query)  # (B, 1, h)
            k = self.key_proj(keys)  # (B, T, h)
            scores = self.score_proj(torch.tanh(q + k)).squeeze(-1)  # (B, T)
            if mask is not None:
                scores = scores.masked_fill(~mask, -1e9)
            attn_weights = F.softmax(scores, dim=-1)
            context = torch.bmm(attn_weights.unsqueeze(1), values).squeeze(1)
            return context, attn_weights

    class AttentionClassifier(nn.Module):
        def __init__(self, vocab_size, embed_dim, hidden_dim, num_classes, attention_type="dot"):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embed_dim)
            self.rnn = nn.GRU(embed_dim, hidden_dim, bidirectional=True)
            if attention_type == "dot":
                self.attention = ScaledDotProductAttention()
            else:
                self.attention = AdditiveAttention(hidden_dim * 2, hidden_dim * 2, hidden_dim)
            self.fc = nn.Linear(hidden_dim * 2, num_classes)

        def forward(self, x, mask=None):
            x = self.embedding(x)
            x, _ = self.rnn(x.transpose(0, 1))
            x = x.transpose(0, 1)
            query = x[:, 0:1, :]
            context, _ = self.attention(query, x, x, mask)
            # the tutorial's context.squeeze(1); its additive form already returns (B, 2H)
            return self.fc(context.reshape(context.size(0), -1))

    return AttentionClassifier(vocab_size, embed_dim, hidden_dim, 2, attention)


# --- the workers: one contender, one epoch, in this process ---


def bare_model(cfg, vocab_size: int, **model_overrides):
    """This project's model and its training step as the product takes it (AdamW, gradient clipping), no Lightning."""
    from dataclasses import replace

    import torch
    import torch.nn.functional as F

    from attnclf.models.classifier import ClassifierNet
    from attnclf.settings.model import classifier_config
    from attnclf.training.module import adamw

    # the network alone: a random start, as the tutorial's
    config = classifier_config(cfg)
    settings = replace(config.model, **model_overrides)
    model = ClassifierNet(vocab_size, 2, config.attention, settings)
    opt = adamw(model, cfg.optimizer.lr, cfg.optimizer.weight_decay)

    def train_step(ids, lengths, y):
        logits, _ = model(ids, lengths)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.trainer.gradient_clip_val)
        opt.step()

    return model, train_step


def kernel_gru(args, batch_size: int, longest: int):
    """The bare bidirectional nn.GRU, its forward on a (B, T) batch's shape, and its training step (no input grad)."""
    import torch
    from torch import nn

    model = nn.GRU(args.embed_dim, args.hidden_dim, batch_first=True, bidirectional=True)
    x = torch.randn(batch_size, longest, args.embed_dim)

    def forward(ids):
        return model(x[: ids.size(0), : ids.size(1)])[0]

    def train_step(ids, lengths, y):
        model.zero_grad(set_to_none=True)
        forward(ids).sum().backward()

    return model, forward, train_step


def worker(args) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    from attnclf.data.datamodule import TextDataModule
    from attnclf.data.dataset import collate
    from attnclf.settings.data import data_config
    from attnclf.utils.memory import keep_freed_memory

    name = args.worker
    out = Path(args.out)
    cfg = compose_cfg(args, out)
    torch.set_num_threads(args.threads)
    if cfg.keep_freed_memory:  # the same allocator setting for every contender (train(cfg) sets it for the product)
        keep_freed_memory()
    if name == "product":
        from attnclf.commands.train import train

        train(cfg)
        m = json.loads((out / "metrics.json").read_text())
        return {
            "tokens_per_sec": m["train_tokens_per_sec"],
            "reviews_per_sec": m["eval_reviews_per_sec"],
            "train_s": m["train_seconds"],
        }

    torch.manual_seed(args.seed)
    data = data_config(cfg.data)
    data.num_workers = 0
    dm = TextDataModule(data, seed=cfg.seed)
    dm.setup()
    train_set, val_set, vocab_size = dm.train_set, dm.val_set, len(dm.vocab)
    if name == "interleaved":
        return interleaved(args, cfg, dm, vocab_size)

    def doc_batches(dataset, batch_size, shuffle):
        order = np.random.default_rng(args.seed).permutation(len(dataset)) if shuffle else np.arange(len(dataset))
        for i in range(0, len(order), batch_size):
            yield collate([dataset[j] for j in order[i : i + batch_size]])

    if name == "doc":
        model = doc_model(vocab_size, args.embed_dim, args.hidden_dim, args.attention)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def train_step(ids, lengths, y):
            loss = F.cross_entropy(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        def eval_step(ids, lengths):
            model(ids)

        train_batches = lambda: doc_batches(train_set, data.batch_size, True)  # noqa: E731
        eval_batches = lambda: doc_batches(val_set, data.eval_batch_size, False)  # noqa: E731
    elif name == "bare":
        model, train_step = bare_model(cfg, vocab_size)

        def eval_step(ids, lengths):
            model(ids, lengths)

        train_batches, eval_batches = dm.train_dataloader, dm.val_dataloader
    elif name == "loader":
        model = nn.Identity()
        train_step = eval_step = lambda *batch: None  # noqa: E731
        train_batches, eval_batches = dm.train_dataloader, dm.val_dataloader
    else:  # kernel
        longest = int(max(train_set.lengths.max(), val_set.lengths.max()))
        model, forward, train_step = kernel_gru(args, max(data.batch_size, data.eval_batch_size), longest)

        def eval_step(ids, lengths):
            forward(ids)

        train_batches, eval_batches = dm.train_dataloader, dm.val_dataloader

    model.train()
    tokens = padded = 0
    t = time.perf_counter()
    for ids, lengths, y in train_batches():
        train_step(ids, lengths, y)
        tokens += int(lengths.sum())
        padded += ids.numel()
    train_s = time.perf_counter() - t
    model.eval()
    reviews = 0
    t = time.perf_counter()
    with torch.no_grad():
        for ids, lengths, _ in eval_batches():
            eval_step(ids, lengths)
            reviews += len(lengths)
    eval_s = time.perf_counter() - t
    return {
        "tokens_per_sec": tokens / train_s,
        "reviews_per_sec": reviews / eval_s,
        "train_s": train_s,
        "padding": 1 - tokens / padded,
    }


def interleaved(args, cfg, dm, vocab_size: int) -> dict:
    """Training steps of the model (default and padded GRU kernel) and of the kernel, alternating on each batch."""
    import torch

    steps = {}
    for kernel in ("auto", "padded"):
        torch.manual_seed(args.seed)
        model, step = bare_model(cfg, vocab_size, rnn_kernel=kernel)
        steps[f"model ({kernel})"] = step  # auto: concurrent with 2+ threads on batches of 100+ tokens
    steps["kernel"] = kernel_gru(args, cfg.data.batch_size, int(dm.train_set.lengths.max()))[2]
    seconds = dict.fromkeys(steps, 0.0)
    tokens = 0
    for i, (ids, lengths, y) in enumerate(dm.train_dataloader()):
        if i == args.steps:
            break
        order = list(steps) if i % 2 else list(reversed(steps))
        for name in order:
            t = time.perf_counter()
            steps[name](ids, lengths, y)
            seconds[name] += time.perf_counter() - t
        tokens += int(lengths.sum())
    return {name: tokens / s for name, s in seconds.items()}


def run_worker(args, name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        user = [a for a in sys.argv[1:] if a != "--quick"]
        argv = [sys.executable, __file__, "--worker", name, "--out", tmp, *(QUICK if args.quick else []), *user]
        proc = isolated(argv)
        return json.loads(proc.stdout.strip().splitlines()[-1])


QUICK = ["--subset", "64", "--val-size", "32", "--max-length", "64", "--batch-size", "16"]
QUICK += ["--embed-dim", "16", "--hidden-dim", "16", "--repeats", "1", "--threads", "1"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb", help="Hub id or local IMDb folder")
    p.add_argument("--subset", type=int, default=5000, help="training reviews (a fixed random subset)")
    p.add_argument("--val-size", type=int, default=1000, help="validation reviews (evaluation speed)")
    p.add_argument("--attention", default="dot", choices=["dot", "additive"])
    p.add_argument("--max-length", type=int, default=400)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--embed-dim", type=int, default=128)
    p.add_argument("--hidden-dim", type=int, default=128)
    p.add_argument("--threads", type=int, default=2, help="torch threads, the same for every contender")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=CONTENDERS + EXTRA)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a few seconds on tiny sizes: checks that it runs")
    p.add_argument("--interleaved", action="store_true", help="one process, steps alternating batch by batch")
    p.add_argument("--steps", type=int, default=40, help="--interleaved: training batches")
    p.add_argument("--worker", choices=CONTENDERS + EXTRA + ("interleaved",), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("overrides", nargs="*", help="extra Hydra overrides for every contender's config")
    args = p.parse_args()

    if args.worker:
        result = worker(args)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    if args.quick:  # tiny sizes, unless given
        args = p.parse_args([*QUICK, *sys.argv[1:]])

    if args.interleaved:
        r = run_worker(args, "interleaved")
        print(
            f"\n{args.attention} attention, first {args.steps} training batches of {args.subset} reviews, "
            f"{args.threads} threads, one process, alternating batch by batch"
        )
        for name, tps in r.items():
            if name == "peak_rss_mb":
                continue
            print(f"{name:<22} {tps:>9,.0f} useful train tokens/s   ratio to kernel {tps / r['kernel']:.2f}")
        return
    runs: dict[str, list[dict]] = {c: [] for c in args.contenders}
    for rep in range(args.repeats):
        k = rep % len(args.contenders)
        for name in args.contenders[k:] + args.contenders[:k]:  # rotate the order
            r = run_worker(args, name)
            runs[name].append(r)
            print(f"  repeat {rep + 1} {name:<8} {r['tokens_per_sec']:>9,.0f} tokens/s", file=sys.stderr)

    med = {c: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for c, rs in runs.items()}
    print(
        f"\n{args.attention} attention, {args.subset} reviews, max_length {args.max_length}, batch {args.batch_size}, "
        f"embed {args.embed_dim}, hidden {args.hidden_dim}, {args.threads} threads, median of {args.repeats}"
    )
    head = ("contender", "train tokens/s", "eval reviews/s", "peak RSS MB", "padding", "epoch s")
    print("{:<10} {:>15} {:>15} {:>12} {:>8} {:>8}".format(*head))
    for c, m in med.items():
        pad = f"{m['padding']:.0%}" if "padding" in m else "-"
        tps, rps, rss = m["tokens_per_sec"], m["reviews_per_sec"], m["peak_rss_mb"]
        print(f"{c:<10} {tps:>15,.0f} {rps:>15,.0f} {rss:>12,.0f} {pad:>8} {m['train_s']:>8.1f}")
    if "product" in med:
        for other in ("doc", "bare", "kernel"):
            if other in med:
                ratio = med["product"]["tokens_per_sec"] / med[other]["tokens_per_sec"]
                print(f"ratio product/{other}: {ratio:.2f}")


if __name__ == "__main__":
    main()
