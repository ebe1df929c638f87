"""What a regulariser costs a training step: regularizer=none, adversarial and virtual_adversarial, timed
in turn on the same batches, as the module runs them (training_step, backward, gradient clipping, AdamW).

    python scripts/bench_regularizer.py [--batch 64] [--unlabeled-batch 64] [--length 220] [--threads 2]
                                        [--repeats 7] [--attention dot]

Random reviews of about `--length` tokens (lengths within 10% of it, as the length buckets make them); the
virtual adversarial step reads a second batch of `--unlabeled-batch` such reviews. Medians of `--repeats`
after a warm-up, the three timed in turn in each repeat; the ratio to regularizer=none is what a training
epoch costs more (evaluation aside). Timings, not a test.
"""

from __future__ import annotations

import argparse

import torch
from bench_step import random_reviews  # (scripts/, this script's own folder)
from harness import medians_ms

from attnclf.settings.model import REGULARIZERS, ClassifierConfig, RegularizerConfig
from attnclf.training.module import ClassifierModule, adamw


class Module(ClassifierModule):
    """The module with a fixed unlabeled batch in place of the DataModule's."""

    unlabeled = None

    def unlabeled_batch(self):
        return self.unlabeled

    def log(self, *args, **kwargs):  # (no Trainer to log to)
        pass


def step_of(name: str, args, labelled, unlabeled):
    torch.manual_seed(0)
    module = Module(args.vocab, 2, ClassifierConfig(args.attention, regularizer=RegularizerConfig(name=name)))
    module.unlabeled = unlabeled
    opt = adamw(module.model, 2e-3, 0.01)

    def step():
        opt.zero_grad()
        module.training_step(labelled, 0).backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()

    return step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--unlabeled-batch", type=int, default=64)
    p.add_argument("--length", type=int, default=220, help="typical tokens per review in a batch")
    p.add_argument("--vocab", type=int, default=30000)
    p.add_argument("--attention", default="dot", choices=["dot", "additive"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    ids, lengths = random_reviews(args.batch, args.length, args.vocab)
    labelled = (ids, lengths, torch.randint(0, 2, (args.batch,)))
    u_ids, u_lengths = random_reviews(args.unlabeled_batch, args.length, args.vocab)
    unlabeled = (u_ids, u_lengths, torch.zeros(args.unlabeled_batch, dtype=torch.long))
    ms = medians_ms({name: step_of(name, args, labelled, unlabeled) for name in REGULARIZERS}, args.repeats)
    print(
        f"{args.attention} attention, batch {args.batch} x ~{args.length} tokens, unlabeled batch "
        f"{args.unlabeled_batch}, {args.threads} threads, median of {args.repeats}"
    )
    for name, t in ms.items():
        print(f"  regularizer={name:<20} {t:8.1f} ms a step   {t / ms['none']:.2f}x")


if __name__ == "__main__":
    main()
