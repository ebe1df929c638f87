"""What each remedy costs a training step, as a multiple of the plain model's: the remedies table's time column
(docs/results.md, "Attention that explains").

    python scripts/bench_remedies.py [--length 20] [--batch 32] [--threads 1] [--repeats 15]

Jain & Wallace's classifier (experiment=jain_wallace: a BiLSTM of 128 a direction, 300-dim embedding) with
each remedy (plain softmax, orthogonal states, the diversity penalty, sparsemax, 1.5-entmax) and each
attention, one whole training step each (the LightningModule's loss with the penalty where there is one,
backward, AdamW) on the same batch of random reviews of about `--length` tokens (binary SST's sentences: 20;
IMDb's reviews as the reduced protocol reads them: 230). Medians of `--repeats`, after a warm-up, every model
timed in turn in each repeat. An epoch is the same number of steps for every remedy, so the ratio of step
times is the ratio of seconds an epoch. Timings, not a test.
"""

from __future__ import annotations

import argparse

import torch
from bench_step import random_reviews  # (scripts/, this script's own folder)
from harness import medians_ms  # (scripts/harness.py: what the benchmarks share)

from attnclf.settings.compose import compose_config
from attnclf.settings.model import classifier_config
from attnclf.training.module import ClassifierModule, adamw

REMEDIES = {
    "softmax": ["model.hidden_states=plain", "model.attention_normalizer=softmax"],
    "orthogonal": ["model.hidden_states=orthogonal"],
    "diversity": ["model.hidden_states=diversity"],
    "sparsemax": ["model.attention_normalizer=sparsemax"],
    "entmax15": ["model.attention_normalizer=entmax15"],
}


def step_of(attention: str, overrides: list[str], batch, vocab: int):
    """One training step of the classifier with these settings, as a callable."""
    cfg = compose_config("train", ["experiment=jain_wallace", f"attention={attention}", *overrides])
    config = classifier_config(cfg)
    torch.manual_seed(0)
    module = ClassifierModule(vocab, 2, config)
    module.log = lambda *args, **kwargs: None  # (no Trainer here)
    opt = adamw(module.model, config.optimizer.lr, config.optimizer.weight_decay)

    def step():
        opt.zero_grad(set_to_none=True)
        module.training_step(batch, 0).backward()
        opt.step()

    return step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--length", type=int, default=20)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--vocab", type=int, default=20000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    ids, lengths = random_reviews(args.batch, args.length, args.vocab)
    batch = (ids, lengths, torch.randint(0, 2, (args.batch,)))
    print(
        f"a training step, {args.batch} reviews of about {args.length} tokens, {args.threads} thread(s), "
        f"median of {args.repeats}"
    )
    for attention in ("dot", "additive"):
        steps = {name: step_of(attention, o, batch, args.vocab) for name, o in REMEDIES.items()}
        ms = medians_ms(steps, args.repeats, warmup=2)
        plain = ms["softmax"]
        said = ", ".join(f"{name} {t:.1f} ms (x{t / plain:.2f})" for name, t in ms.items())
        print(f"{attention}: {said}")


if __name__ == "__main__":
    main()
