"""The two attentions' weights on the same reviews, one above the other.

    attnclf compare-attention 'ckpt=[<dot run>,<additive run>]' [data=/path/to/imdb] [n=6] [texts=FILE]
        [out=outputs/compare_attention]
    attnclf compare-attention <ckpt_dot> <ckpt_additive> [--data /path/to/imdb] [--n 6]
        [--out outputs/compare_attention] [--logdir outputs/compare_attention/tensorboard]

Each flag may be given as key=value too, as the other commands that read a checkpoint take their
arguments (ckpt=[dot,additive] for the two checkpoints; min_tokens=, max_tokens= for --min-tokens ...).

Takes a fixed set of test reviews (the first --n of the test split, in its
order, whose length is between --min-tokens and --max-tokens), or --texts FILE
(one review per line), runs both checkpoints on them, and writes per review a
PNG (dot heatmap above additive), one HTML page with the words shaded by each
attention, and the same figures to TensorBoard (`compare/review_<i>`).
"""

from __future__ import annotations

import argparse
import html
import sys
from pathlib import Path

from attnclf.data.text import tokenize
from attnclf.errors import AttnclfError
from attnclf.inference import TrainedClassifier
from attnclf.presentation.figures import attention_pair_figure
from attnclf.presentation.html import page, shade_words


def pick_reviews(data: str, n: int, lo: int, hi: int) -> list[str]:
    from attnclf.data.loading import load_splits

    test = load_splits(data)["test"]["text"]
    chosen = [t for t in test if lo <= len(tokenize(t)) <= hi][:n]
    return chosen or list(test[:n])


KEYS = ("ckpt", "data", "texts", "n", "min_tokens", "max_tokens", "out", "logdir")


def as_flags(argv: list[str]) -> list[str]:
    """key=value arguments as the flags they stand for (ckpt=[a,b]: the two checkpoints); flags as given."""
    out = []
    for a in argv:
        key, eq, value = a.partition("=")
        if a.startswith("-") or not eq:
            out.append(a)
        elif key not in KEYS:
            raise AttnclfError(f"{key!r} is not a setting of compare-attention; allowed: {', '.join(KEYS)}")
        elif key == "ckpt":
            ckpts = [c.strip() for c in value.strip("[]").split(",") if c.strip()]
            if len(ckpts) != 2:
                raise AttnclfError(f"ckpt={value}: give two, the dot run's and the additive's: 'ckpt=[a,b]'")
            out += ckpts
        else:
            out += [f"--{key.replace('_', '-')}", value]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = as_flags(list(sys.argv[1:] if argv is None else argv))
    p = argparse.ArgumentParser(
        prog="attnclf compare-attention", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("ckpt_dot")
    p.add_argument("ckpt_additive")
    p.add_argument("--data", default="stanfordnlp/imdb")
    p.add_argument("--texts", type=Path, help="one review per line instead of test reviews")
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--min-tokens", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--out", type=Path, default=Path("outputs/compare_attention"))
    p.add_argument("--logdir", type=Path, help="TensorBoard folder (default: <out>/tensorboard)")
    args = p.parse_args(argv)

    models = {
        "dot": TrainedClassifier.from_checkpoint(args.ckpt_dot),
        "additive": TrainedClassifier.from_checkpoint(args.ckpt_additive),
    }
    for name, clf in models.items():
        if clf.module.hparams.attention != name:
            raise AttnclfError(f"{name} checkpoint was trained with attention={clf.module.hparams.attention}")
    if args.texts:
        texts = [t for t in args.texts.read_text(encoding="utf-8").splitlines() if t.strip()][: args.n]
    else:
        texts = pick_reviews(args.data, args.n, args.min_tokens, args.max_tokens)
    preds = {name: clf.predict(texts) for name, clf in models.items()}

    from torch.utils.tensorboard import SummaryWriter

    args.out.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(str(args.logdir or args.out / "tensorboard"))
    body = []
    for i in range(len(texts)):
        pair = [(name, preds[name][i]) for name in ("dot", "additive")]
        fig = attention_pair_figure(
            [(f"{n}: predicted {q.label_name} (p={q.prob:.2f})", q.tokens, q.weights) for n, q in pair]
        )
        fig.savefig(args.out / f"review_{i}.png", dpi=110)
        writer.add_figure(f"compare/review_{i}", fig, close=True)
        body.append(f"<h3>review {i}</h3>")
        body += [f"<p><b>{n}</b> ({html.escape(q.label_name)}, {q.prob:.2f}): {shade_words(q)}</p>" for n, q in pair]
    writer.close()
    (args.out / "compare.html").write_text(page("dot vs additive attention", body), encoding="utf-8")
    print(f"{len(texts)} reviews: {args.out}/review_*.png, {args.out}/compare.html, TensorBoard compare/review_*")
    return 0
