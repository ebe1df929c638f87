"""Where a training step's time goes: each part of the model timed alone, as a share of the whole step.

    python scripts/bench_step.py [--batch 64] [--length 220] [--threads 2] [--repeats 9] [--attention-dim 64]
        [--attention dot additive general multihead structured]

On one batch of random reviews (B reviews of about `--length` tokens, lengths within 10% of it as
the product's length buckets make them), for each attention (default: every mechanism of the
package, conf/attention/): the whole training step (forward, backward, gradient clipping, AdamW;
with the model's default GRU kernel, then with `rnn_kernel=padded`, the two directions one after the
other), and alone, forward + backward of the embedding with its dropout, the BiGRU encoder, the
attention pooling (also through autograd's own path instead of the model's fused Functions,
attnclf/models/attention.py), the classifier with the loss, and the optimizer step. For additive
attention also the three matrix products its key projection needs at the least (W_k k_t for every
token, forward, and the input and weight gradients), alone: the floor under its pooling. Medians of
`--repeats`, after a warm-up, all parts of every attention timed in turn in each repeat, and each
attention's whole step as a ratio to the first's (the default's). Timings, not a test.
"""

from __future__ import annotations

import argparse
import copy

import torch
import torch.nn.functional as F
from harness import medians_ms  # (scripts/harness.py: what the benchmarks share)

from attnclf.models.attention import AdditiveAttention
from attnclf.models.classifier import ClassifierNet, real_tokens
from attnclf.settings.attention import AttentionConfig, attention_order, package_attentions
from attnclf.settings.model import ModelConfig
from attnclf.training.module import adamw


def random_reviews(n: int, length: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n random reviews (ids (n, length), lengths (n,)) of lengths within 10% of `length`, as the product's
    length buckets make a batch; the first one exactly `length`."""
    ids = torch.randint(2, vocab, (n, length))
    lengths = torch.randint(int(0.9 * length), length + 1, (n,))
    lengths[0] = length
    return ids, lengths


def parts(args, attention: str) -> dict:
    torch.manual_seed(0)
    B, T = args.batch, args.length
    shape = ModelConfig(embed_dim=args.embed_dim, hidden_dim=args.hidden_dim, attention_dim=args.attention_dim)
    model = ClassifierNet(args.vocab, 2, AttentionConfig.named(attention), shape)
    opt = adamw(model, 2e-3, 0.01)
    ids, lengths = random_reviews(B, T, args.vocab)
    y = torch.randint(0, 2, (B,))
    mask = real_tokens(ids, lengths)  # (B, T)
    with torch.no_grad():
        x = model.embed(ids)
        out, final = model.encoder(x, lengths)
        context = model.attention(final.unsqueeze(1), out, out, mask)[0].squeeze(1)
    x, out, final, context = (t.detach().requires_grad_() for t in (x, out, final, context))

    serial = copy.deepcopy(model)  # the same weights, its directions one after the other
    serial.encoder.kernel = "padded"
    serial_opt = adamw(serial, 2e-3, 0.01)

    def step(model=model, opt=opt):
        loss = F.cross_entropy(model(ids, lengths)[0], y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def embedding():
        model.embed_dropout(model.embed(ids)).sum().backward()

    def encoder():
        x.grad = None
        o, f = model.encoder(x, lengths)
        (o.sum() + f.sum()).backward()

    def attention_pooling(values=out):
        out.grad = final.grad = None  # a fresh gradient, as in the model (no accumulating into the last one)
        model.attention(final.unsqueeze(1), out, values, mask)[0].sum().backward()

    def plain_pooling():  # values a view of the keys, not the same tensor: no fused Function, autograd's own path
        attention_pooling(out.view_as(out))

    def classifier():
        context.grad = None
        F.cross_entropy(model.fc(model.dropout(context)), y).backward()

    timed = {"whole step": step, "  same, padded kernel": lambda: step(serial, serial_opt)}
    timed |= {"embedding + dropout": embedding, "encoder (BiGRU)": encoder, "attention pooling": attention_pooling}
    timed["  same, autograd's path"] = plain_pooling
    if isinstance(model.attention, AdditiveAttention):
        # the floor under additive pooling: W_k k_t for every token, and its two backward products (input and
        # weight gradients), as three plain matmuls with nothing else
        keys = out.detach().reshape(B * T, -1)  # (B*T, 2H)
        w = model.attention.k_proj.weight.detach()  # (h, 2H)
        grad = torch.randn(B * T, w.size(0))  # (B*T, h)
        timed["  its key-projection matmuls"] = lambda: (keys @ w.t(), grad @ w, grad.t() @ keys)
    timed |= {"classifier + loss": classifier, "optimizer step": opt.step}
    return timed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--length", type=int, default=220, help="typical tokens per review in a batch")
    p.add_argument("--embed-dim", type=int, default=128)
    p.add_argument("--hidden-dim", type=int, default=128)
    p.add_argument("--attention-dim", type=int, default=None, help="model.attention_dim (default: the model's)")
    p.add_argument("--vocab", type=int, default=30000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--attention", nargs="+", default=package_attentions(), help="the mechanisms (conf/attention/)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    names = attention_order(args.attention)
    fns = {(a, name): fn for a in names for name, fn in parts(args, a).items()}
    ms = medians_ms(fns, args.repeats)
    results = {a: {name: t for (b, name), t in ms.items() if b == a} for a in names}
    print(
        f"batch {args.batch}, ~{args.length} tokens, embed {args.embed_dim}, hidden {args.hidden_dim}, "
        f"{args.threads} threads; forward + backward, median ms (share of the whole step)"
    )
    print(f"{'part':<28} " + " ".join(f"{a:>16}" for a in names))
    for name in dict.fromkeys(n for r in results.values() for n in r):
        cells = [f"{r[name]:8.1f} ({r[name] / r['whole step']:4.0%})" if name in r else "-" for r in results.values()]
        print(f"{name:<28} " + " ".join(f"{c:>16}" for c in cells))
    first = results[names[0]]["whole step"]
    print(
        f"{'whole step x ' + names[0] + chr(39) + 's':<28} "
        + " ".join(f"{r['whole step'] / first:>16.2f}" for r in results.values())
    )


if __name__ == "__main__":
    main()
