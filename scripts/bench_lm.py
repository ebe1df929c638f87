"""What pretraining's output layer costs: a full softmax over the vocabulary against the adaptive and the
sampled softmax (`lm.softmax`), each against the GRUs they sit on (one training step's forward + backward,
both directions).

    python scripts/bench_lm.py [--vocab 30000] [--batch 64] [--length 200] [--repeats 5] [--threads 2]
        [--samples 512]

Prints milliseconds per step for: the two GRUs alone; GRUs + each output layer (the adaptive softmax with
conf/pretrain.yaml's cutoffs, the sampled one with --samples words a batch), and each output layer's cost
as a multiple of the GRUs'.
"""

from __future__ import annotations

import argparse

import torch
from harness import medians_ms  # (scripts/harness.py: what the benchmarks share)
from torch import nn

from attnclf.models.language_model import AdaptiveSoftmax, SampledSoftmax, adaptive_cutoffs


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python scripts/bench_lm.py")
    p.add_argument("--vocab", type=int, default=30000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--length", type=int, default=200)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cutoffs", type=int, nargs="+", default=[2000, 10000], help="the adaptive softmax's (lm.cutoffs)")
    p.add_argument("--samples", type=int, default=512, help="the sampled softmax's words a batch (lm.samples)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    V, B, T, D = args.vocab, args.batch, args.length, args.dim
    embed = nn.Embedding(V, D)
    grus = nn.ModuleList([nn.GRU(D, D, batch_first=True) for _ in range(2)])
    full = nn.Linear(D, V)
    heads = {
        "adaptive": AdaptiveSoftmax(D, V, adaptive_cutoffs(args.cutoffs, V), div_value=4.0),
        "sampled": SampledSoftmax(D, V, args.samples),
    }
    # Zipf-distributed tokens, as text is: the adaptive softmax's head serves most of them
    ranks = torch.arange(1, V + 1, dtype=torch.float)
    ids = torch.multinomial(1.0 / ranks, B * T, replacement=True).view(B, T)
    target = ids[:, 1:].reshape(-1)

    def step(head: str) -> None:
        x = embed(ids)
        loss = 0
        for gru in grus:
            h = gru(x)[0][:, :-1].reshape(-1, D)
            if head == "full":
                loss = loss + nn.functional.cross_entropy(full(h), target)
            elif head in heads:
                loss = loss + heads[head](h, target)
            else:
                loss = loss + h.square().mean()
        loss.backward()

    results = medians_ms(
        {head: lambda head=head: step(head) for head in ("none", "adaptive", "sampled", "full")}, args.repeats
    )
    gru = results["none"]
    print(
        f"vocab {V}, batch {B} x {T} tokens, dim {D}, {args.threads} threads, adaptive cutoffs {args.cutoffs}; "
        f"sampled softmax {args.samples} words; median of {args.repeats} steps"
    )
    print(f"{'GRUs alone':<28}{gru:9.0f} ms")
    for head in ("adaptive", "sampled", "full"):
        extra = results[head] - gru
        label = f"GRUs + {head} softmax"
        print(f"{label:<28}{results[head]:9.0f} ms   output layer = {extra / gru:5.2f}x the GRUs")
    for head in ("adaptive", "sampled"):
        print(f"full / {head} output layer: {(results['full'] - gru) / max(results[head] - gru, 1e-9):.1f}x")
    print(f"a whole step, adaptive / sampled: {results['adaptive'] / results['sampled']:.2f}x")


if __name__ == "__main__":
    main()
