"""Several runs' attention weights on the same reviews, one above the other: any number of runs, of any
attentions (dot, additive, general, multihead, structured, one of your own), in the order given.

    attnclf compare-attention 'ckpt=[<run>,<run>,...]' [data=/path/to/imdb] [n=6] [texts=FILE]
        [out=outputs/compare_attention]
    attnclf compare-attention <run> [<run> ...] [--data /path/to/imdb] [--n 6]
        [--out outputs/compare_attention] [--logdir outputs/compare_attention/tensorboard]

Each flag may be given as key=value too, as the other commands that read a checkpoint take their
arguments (ckpt=[a,b,c] for the checkpoints or run folders; min_tokens=, max_tokens= for --min-tokens ...).

Takes a fixed set of test reviews (the first --n of the test rows the first run recorded in its data.json, as
`attnclf eval` reads them, or of --data's test split, whose length is between --min-tokens and --max-tokens),
or --texts FILE
(one review per line), runs every checkpoint on them, and writes per review a
PNG (one heatmap a run, in the order given), one HTML page with the words shaded by each
attention, and the same figures to TensorBoard (`compare/review_<i>`). Each run is
named by its attention (and its run folder, where two runs share an attention).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnclf.commands.keyvalue import Keys, as_flags, usage
from attnclf.settings.run import checkpoints_given


def pick_reviews(clf, data: str | None, n: int, lo: int, hi: int) -> list[str]:
    """`n` test texts of `lo`..`hi` tokens (else the first n), from the test rows the first run recorded (its
    data.json, as attnclf eval reads them), or from `data` given over that record."""
    from attnclf.data.text import tokenize
    from attnclf.inference.as_trained import texts_as_trained

    test, _ = texts_as_trained(clf, "test", {"path": data} if data else {})
    chosen = [t for t in test if lo <= len(tokenize(t)) <= hi][:n]
    return chosen or list(test[:n])


KEYS = Keys(
    "compare-attention",
    positional=(("ckpt",),),
    flags={k: f"--{k.replace('_', '-')}" for k in ("data", "texts", "n", "min_tokens", "max_tokens", "out", "logdir")}
    | {"data.path": "--data"},
)


def named_runs(ckpts: list[Path]) -> dict:
    """{name: the run loaded (TrainedClassifier)}: each run by its attention's name, and by its run folder too
    where two share one (a run given twice: numbered)."""
    from attnclf.inference import TrainedClassifier
    from attnclf.training.checkpoint import run_dir_of

    runs = [TrainedClassifier.from_checkpoint(c) for c in ckpts]
    names = [r.module.hparams.attention for r in runs]
    named = {}
    for name, c, r in zip(names, ckpts, runs, strict=True):
        label = name if names.count(name) == 1 else f"{name} ({run_dir_of(c).name})"
        named[label if label not in named else f"{label} #{len(named) + 1}"] = r
    return named


def command(argv: list[str] | None = None) -> int:
    argv = as_flags(list(sys.argv[1:] if argv is None else argv), KEYS)
    p = argparse.ArgumentParser(
        prog="attnclf compare-attention",
        usage=usage(KEYS, "'ckpt=[<run>,<run>,...]' [texts=<file>] [data.path=<data>] [n=6] [out=<folder>]"),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("ckpt", nargs="+", help="checkpoints or run folders, one or more")
    p.add_argument("--data", default=None, help="other data than the first run's own (its data.json)")
    p.add_argument("--texts", type=Path, help="one review per line instead of test reviews")
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--min-tokens", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument(
        "--scale",
        choices=["uniform", "max"],
        default="uniform",
        help="the figures' colours: relative to uniform (a weight times n; default) or to the review's highest",
    )
    p.add_argument("--out", type=Path, default=Path("outputs/compare_attention"))
    p.add_argument("--logdir", type=Path, help="TensorBoard folder (default: <out>/tensorboard)")
    args = p.parse_args(argv)
    checkpoints_given(args.ckpt, "compare")
    # (the logic's imports after the checks: --help and a bad value answer at once)
    from attnclf.presentation.figures import attention_pair_figure
    from attnclf.presentation.html import Shaded, page, shade_words
    from attnclf.training.checkpoint import best_checkpoint

    models = named_runs([best_checkpoint(c) for c in args.ckpt])
    if args.texts:
        texts = [t for t in args.texts.read_text(encoding="utf-8").splitlines() if t.strip()][: args.n]
    else:
        texts = pick_reviews(next(iter(models.values())), args.data, args.n, args.min_tokens, args.max_tokens)
    preds = {name: clf.predict(texts) for name, clf in models.items()}

    from torch.utils.tensorboard import SummaryWriter

    args.out.mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(str(args.logdir or args.out / "tensorboard"))
    sections = []
    for i in range(len(texts)):
        pair = [(name, preds[name][i]) for name in models]
        fig = attention_pair_figure(
            [(f"{n}: predicted {q.label_name} (p={q.prob:.2f})", q.tokens, q.weights) for n, q in pair],
            uniform=args.scale == "uniform",
        )
        fig.savefig(args.out / f"review_{i}.png", dpi=110)
        writer.add_figure(f"compare/review_{i}", fig, close=True)
        sections.append((f"review {i}", [Shaded(shade_words(q), n, f"{q.label_name}, {q.prob:.2f}") for n, q in pair]))
    writer.close()
    compared = page(f"attention compared: {', '.join(models)}", sections)
    (args.out / "compare.html").write_text(compared, encoding="utf-8")
    print(f"{len(texts)} reviews: {args.out}/review_*.png, {args.out}/compare.html, TensorBoard compare/review_*")
    return 0
