"""`faithfulness(cfg)`: can a checkpoint's attention maps be read as "the words the model used"?

Runs the measures of attnclf.analysis.measures on a fixed seeded sample of a split and writes, into
`<run folder>/faithfulness_<split>/` (or `output`): faithfulness.json, summary.md, summary.png and
TensorBoard events (scalars, histograms, the summary figure, and four reviews shaded by each measure).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, ListConfig

from attnclf.analysis import measures as F
from attnclf.errors import AttnclfError
from attnclf.inference.classifier import Classifier
from attnclf.inference.evaluate import split_as_trained
from attnclf.training.checkpoint import best_checkpoint, run_dir_of
from attnclf.utils.jsonfile import write_json

log = logging.getLogger(__name__)


def check_ks(ks) -> list[float]:
    """Erasure sizes: whole numbers >= 1 (tokens) or fractions in (0, 1) of the review's length."""
    if not isinstance(ks, (list, tuple, ListConfig)) or not ks:
        raise AttnclfError(f"ks={ks!r}; give a list of token counts (>= 1) or fractions in (0, 1), e.g. [1,3,5,0.1]")
    out = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not (0 < k < 1 or (k >= 1 and k == int(k))):
            raise AttnclfError(f"ks: {k!r} is out of range; allowed: whole numbers >= 1 or fractions in (0, 1)")
        out.append(float(k))
    return out


def sample(lengths: np.ndarray, reviews: int, max_tokens: int, seed: int, split: str) -> np.ndarray:
    """`reviews` positions drawn without replacement (seeded) among those of at most `max_tokens` tokens."""
    if not isinstance(reviews, int) or isinstance(reviews, bool) or reviews < 1:
        raise AttnclfError(f"reviews={reviews!r}; allowed: a whole number >= 1")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 2:
        raise AttnclfError(f"max_tokens={max_tokens!r}; allowed: a whole number >= 2")
    eligible = np.flatnonzero(lengths <= max_tokens)
    if reviews > len(eligible):
        raise AttnclfError(
            f"reviews={reviews} is more than split {split!r} has with at most {max_tokens} tokens "
            f"({len(eligible)} of {len(lengths)}); lower reviews or raise max_tokens"
        )
    return np.sort(np.random.default_rng(seed).choice(eligible, reviews, replace=False))


def summarize(x: np.ndarray) -> dict:
    x = np.asarray(x, dtype=float)
    ok = x[np.isfinite(x)]
    if not len(ok):
        return {"mean": float("nan"), "sd": float("nan"), "median": float("nan"), "n": 0}
    return {
        "mean": float(ok.mean()),
        "sd": float(ok.std(ddof=1)) if len(ok) > 1 else 0.0,
        "median": float(np.median(ok)),
        "n": int(len(ok)),
    }


def measure(
    clf: Classifier, seqs: list[np.ndarray], labels: np.ndarray, ks: list[float], cfg: DictConfig
) -> tuple[dict, dict]:
    """All the measures on the reviews: (the JSON result, per-review arrays for figures)."""
    model = clf.module.model
    bt = int(cfg.batch_tokens)
    seconds: dict[str, float] = {}

    def timed(name, fn, *args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        seconds[name] = round(time.perf_counter() - t, 2)
        log.info("%s: %.1f s", name, seconds[name])
        return out

    attr = timed("gradient", F.attributions, model, seqs, bt)
    loo = timed("leave_one_out", F.leave_one_out, model, seqs, attr.probs, bt)
    rng = np.random.default_rng(cfg.seed)
    orders = {
        "attention": [F.ranking(w) for w in attr.weights],
        "gradient": [F.ranking(g) for g in attr.gradient],
        "loo": [F.ranking(np.nan_to_num(x, nan=0.0)) for x in loo],
        "random": [rng.permutation(len(s)) for s in seqs],
    }
    erasure = timed("erasure", F.erasure, model, seqs, attr.probs, orders, ks, bt)
    flip = timed("tokens_to_flip", F.tokens_to_flip, model, seqs, attr.probs, orders["attention"], bt)
    flip_random = timed("tokens_to_flip_random", F.tokens_to_flip, model, seqs, attr.probs, orders["random"], bt)
    tv, entropy = timed("permutation", F.permutation, model, seqs, int(cfg.permutations), int(cfg.seed), bt)
    uni = timed("uniform", F.uniform, model, seqs, bt)

    pred = attr.pred
    lengths = np.array([len(s) for s in seqs])
    tau = {"gradient": F.kendall(attr.weights, attr.gradient), "loo": F.kendall(attr.weights, loo)}
    tau_ref = F.kendall(attr.gradient, loo)  # two non-attention measures against each other: the yardstick
    flip_frac = share_removed(flip, lengths)
    edges = np.quantile(entropy, np.linspace(0, 1, 5))
    bins = np.clip(np.searchsorted(edges, entropy, side="right") - 1, 0, 3)
    result = {
        "accuracy": float((pred == labels).mean()),
        "agreement": {
            "kendall_tau": {name: summarize(t) for name, t in tau.items()},
            "kendall_tau_gradient_vs_loo": summarize(tau_ref),
            "top1_same": {
                "gradient": F.top1_agreement(attr.weights, attr.gradient),
                "loo": F.top1_agreement(attr.weights, loo),
                "gradient_vs_loo": F.top1_agreement(attr.gradient, loo),
            },
        },
        "erasure": erasure,
        "tokens_to_flip": {
            "attention": flip_summary(flip, flip_frac),
            "random": flip_summary(flip_random, share_removed(flip_random, lengths)),
        },
        "permutation": {
            "permutations": int(cfg.permutations),
            "median_tv": float(np.median(tv)),
            "mean_tv": float(np.mean(tv)),
            "share_tv_below_0.05": float(np.mean(tv < 0.05)),
            "spearman_entropy_tv": F.spearman(entropy, tv),
            "by_entropy_quartile": [
                {
                    "entropy_from": float(edges[b]),
                    "entropy_to": float(edges[b + 1]),
                    "median_tv": float(np.median(tv[bins == b])),
                    "reviews": int((bins == b).sum()),
                }
                for b in range(4)
                if (bins == b).any()
            ],
        },
        "uniform": {
            "accuracy": float((uni.argmax(-1) == labels).mean()),
            "accuracy_change": float((uni.argmax(-1) == labels).mean() - (pred == labels).mean()),
            "decisions_changed": float((uni.argmax(-1) != pred).mean()),
            "median_tv": float(np.median(0.5 * np.abs(uni - attr.probs).sum(-1))),
        },
        "seconds": seconds,
        # per review, in sample order (null where undefined), for comparing checkpoints
        "per_review": {
            "kendall_tau_gradient": _list(tau["gradient"]),
            "kendall_tau_loo": _list(tau["loo"]),
            "tokens_to_flip": _list(flip),
            "tokens": lengths.tolist(),
            "permutation_tv": _list(tv),
            "entropy": _list(entropy),
        },
    }
    arrays = {"attr": attr, "loo": loo, "tau": tau, "flip_frac": flip_frac, "tv": tv, "entropy": entropy}
    return result, arrays


def _list(x: np.ndarray) -> list:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(x, dtype=float)]


def share_removed(count: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Tokens removed as a share of those that could be (all but one; nan for a one-token review)."""
    return np.divide(count, lengths - 1, out=np.full(len(count), np.nan), where=lengths > 1)


def flip_summary(count: np.ndarray, fraction: np.ndarray) -> dict:
    """Median and quartiles (lower: no averaging with a review that never flips, counted as inf)."""
    flipped = np.isfinite(count)
    q = np.quantile(np.where(flipped, count, np.inf), [0.25, 0.5, 0.75], method="lower")
    return {
        "median_tokens": float(q[1]),
        "median_fraction": float(np.quantile(np.where(flipped, fraction, np.inf), 0.5, method="lower")),
        "quartiles_tokens": [float(q[0]), float(q[2])],
        "never": float(1 - flipped.mean()),
    }


def faithfulness(cfg: DictConfig) -> dict:
    if not cfg.get("ckpt"):
        raise AttnclfError("give the checkpoint to examine: ckpt=<path to .ckpt or a run folder>")
    ckpt = best_checkpoint(cfg.ckpt)
    clf = Classifier.from_checkpoint(ckpt, cfg.get("device", "cpu"))
    ks = check_ks(cfg.ks)
    if not isinstance(cfg.permutations, int) or cfg.permutations < 1:
        raise AttnclfError(f"permutations={cfg.permutations!r}; allowed: a whole number >= 1")
    dataset = split_as_trained(cfg.data, clf)
    picked = sample(dataset.lengths, cfg.reviews, cfg.max_tokens, cfg.seed, cfg.data.split)
    seqs = [dataset.tokens(i).astype(np.int64) for i in picked]
    labels = dataset.labels[dataset.rows[picked]]
    log.info(
        "%d reviews of %s (at most %d tokens), %s attention",
        len(seqs),
        cfg.data.split,
        cfg.max_tokens,
        clf.module.hparams.attention,
    )

    t0 = time.perf_counter()
    result, arrays = measure(clf, seqs, labels, ks, cfg)
    result = {
        "checkpoint": str(ckpt),
        "attention": clf.module.hparams.attention,
        "data": str(cfg.data.path),
        "split": cfg.data.split,
        "reviews": len(seqs),
        "max_tokens": int(cfg.max_tokens),
        "eligible_share": float(np.mean(dataset.lengths <= cfg.max_tokens)),
        "mean_tokens": float(np.mean([len(s) for s in seqs])),
        "seed": int(cfg.seed),
        "ks": [F.k_name(k) for k in ks],
        **result,
        "total_seconds": round(time.perf_counter() - t0, 1),
    }
    out = Path(cfg.output) if cfg.get("output") else run_dir_of(ckpt) / f"faithfulness_{cfg.data.split}"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "faithfulness.json", result)
    fig = summary_figure(result, arrays)
    fig.savefig(out / "summary.png", dpi=110)
    summary = markdown(result)
    (out / "summary.md").write_text(summary)
    write_tensorboard(out, result, arrays, fig, clf, seqs)
    print(summary)
    print(f"written to {out}")
    return result


def markdown(r: dict) -> str:
    a, e, p, u = r["agreement"], r["erasure"], r["permutation"], r["uniform"]
    tau = a["kendall_tau"]
    lines = [
        f"# Faithfulness of {r['attention']} attention",
        "",
        f"`{r['checkpoint']}` on {r['reviews']} reviews of `{r['data']}` {r['split']} (seed {r['seed']}; reviews of "
        f"at most {r['max_tokens']} tokens, {r['eligible_share']:.0%} of the split; mean {r['mean_tokens']:.0f} "
        f"tokens). Accuracy on them {r['accuracy']:.2%}. {r['total_seconds']:.0f} s.",
        "",
        "## Agreement with other importance measures (Kendall tau per review)",
        "",
        "| attention vs | tau mean ± sd | median | top-1 token the same |",
        "|---|---|---|---|",
        f"| gradient x input | {tau['gradient']['mean']:.3f} ± {tau['gradient']['sd']:.3f} | "
        f"{tau['gradient']['median']:.3f} | {a['top1_same']['gradient']:.1%} |",
        f"| leave-one-out | {tau['loo']['mean']:.3f} ± {tau['loo']['sd']:.3f} | {tau['loo']['median']:.3f} | "
        f"{a['top1_same']['loo']:.1%} |",
        f"| (gradient vs leave-one-out) | {a['kendall_tau_gradient_vs_loo']['mean']:.3f} ± "
        f"{a['kendall_tau_gradient_vs_loo']['sd']:.3f} | {a['kendall_tau_gradient_vs_loo']['median']:.3f} | "
        f"{a['top1_same']['gradient_vs_loo']:.1%} |",
        "",
        "## Erasure: decisions flipped (mean drop in p(predicted)) after removing the top-k tokens",
        "",
        "| ranking | " + " | ".join(r["ks"]) + " |",
        "|---|" + "---|" * len(r["ks"]),
    ]
    for name, by_k in e.items():
        cells = [f"{by_k[k]['flipped']:.1%} ({by_k[k]['prob_drop']:+.3f})" for k in r["ks"]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Tokens removed, in order, until the decision flips",
        "",
        "| order | median tokens | quartiles | median share of the review | never flips |",
        "|---|---|---|---|---|",
    ]
    for name, f in r["tokens_to_flip"].items():
        q = f["quartiles_tokens"]
        lines.append(
            f"| {name} | {f['median_tokens']:g} | {q[0]:g} – {q[1]:g} | {f['median_fraction']:.1%} | {f['never']:.1%} |"
        )
    lines += [
        "",
        f"## Permuted weights ({p['permutations']} shuffles a review)",
        "",
        f"Median total-variation change of the output: {p['median_tv']:.4f} (mean {p['mean_tv']:.4f}); "
        f"{p['share_tv_below_0.05']:.1%} of reviews move less than 0.05. Spearman (entropy, change): "
        f"{p['spearman_entropy_tv']:.3f}.",
        "",
        "| attention entropy (nats) | median change | reviews |",
        "|---|---|---|",
        *[
            f"| {b['entropy_from']:.2f} – {b['entropy_to']:.2f} | {b['median_tv']:.4f} | {b['reviews']} |"
            for b in p["by_entropy_quartile"]
        ],
        "",
        "## Uniform weights",
        "",
        f"Accuracy {u['accuracy']:.2%} ({u['accuracy_change']:+.2%} against the model's own weights); "
        f"{u['decisions_changed']:.1%} of decisions change; median output change {u['median_tv']:.4f}.",
        "",
    ]
    return "\n".join(lines)


def summary_figure(r: dict, arrays: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5))
    bins = np.linspace(-1, 1, 41)
    for name, t in arrays["tau"].items():
        ax[0, 0].hist(t[np.isfinite(t)], bins=bins, alpha=0.6, label=f"vs {name}")
    ax[0, 0].set(title="Kendall tau of attention, per review", xlabel="tau", ylabel="reviews")
    ax[0, 0].legend(fontsize=8)
    ks = r["ks"]
    width = 0.8 / len(r["erasure"])
    for j, (name, by_k) in enumerate(r["erasure"].items()):
        ax[0, 1].bar(np.arange(len(ks)) + j * width, [by_k[k]["flipped"] for k in ks], width, label=name)
    ax[0, 1].set_xticks(np.arange(len(ks)) + 0.4 - width / 2, ks)
    ax[0, 1].set(title="decisions flipped after removing the top-k tokens", ylabel="share of reviews")
    ax[0, 1].legend(fontsize=8)
    frac = arrays["flip_frac"]
    ax[1, 0].hist(np.where(np.isfinite(frac), frac, 1.05), bins=np.linspace(0, 1.1, 23))
    ax[1, 0].set(
        title="share of the review removed (by attention) before the decision flips (>1: never)",
        xlabel="share of tokens",
        ylabel="reviews",
    )
    ax[1, 0].title.set_fontsize(9)
    ax[1, 1].scatter(arrays["entropy"], arrays["tv"], s=4, alpha=0.5)
    ax[1, 1].set(
        title="permuted weights: output change against attention entropy",
        xlabel="entropy (nats)",
        ylabel="median total variation",
    )
    fig.suptitle(f"{r['attention']} attention: {r['reviews']} {r['split']} reviews", fontsize=11)
    fig.tight_layout()
    return fig


def write_tensorboard(out: Path, r: dict, arrays: dict, fig, clf: Classifier, seqs: list[np.ndarray]) -> None:
    from torch.utils.tensorboard import SummaryWriter

    from attnclf.training.callbacks import importance_figure

    with SummaryWriter(str(out)) as tb:
        a = r["agreement"]
        for name, t in a["kendall_tau"].items():
            tb.add_scalar(f"faithfulness/kendall_tau_{name}", t["mean"], 0)
            tb.add_histogram(f"faithfulness/kendall_tau_{name}", np.nan_to_num(arrays["tau"][name]), 0)
        for name, v in a["top1_same"].items():
            tb.add_scalar(f"faithfulness/top1_same_{name}", v, 0)
        for name, by_k in r["erasure"].items():
            for k, v in by_k.items():
                tb.add_scalar(f"faithfulness/erasure_flipped/{name}_{k}", v["flipped"], 0)
        tb.add_scalar("faithfulness/tokens_to_flip_median", r["tokens_to_flip"]["attention"]["median_tokens"], 0)
        tb.add_scalar("faithfulness/permutation_median_tv", r["permutation"]["median_tv"], 0)
        tb.add_histogram("faithfulness/permutation_tv", arrays["tv"], 0)
        tb.add_scalar("faithfulness/uniform_accuracy_change", r["uniform"]["accuracy_change"], 0)
        tb.add_figure("faithfulness/summary", fig, 0, close=False)
        attr, loo = arrays["attr"], arrays["loo"]
        for i in range(min(4, len(seqs))):
            words = clf.vocab.decode(seqs[i])
            title = f"{r['attention']} attention | predicted: {clf.labels[attr.pred[i]]} (p={attr.probs[i].max():.2f})"
            rows = {"attention": attr.weights[i], "gradient x input": attr.gradient[i], "leave-one-out": loo[i]}
            tb.add_figure(f"faithfulness/review_{i}", importance_figure(words, rows, title), 0, close=True)


def load_all(runs: list[str], data: DictConfig, reviews: int, max_tokens: int, seed: int):
    """Each run's Classifier, and the same sampled reviews as each of them reads them."""
    clfs = [Classifier.from_checkpoint(best_checkpoint(r)) for r in runs]
    reading = {(c.max_length, c.truncation) for c in clfs}
    if len(reading) > 1:
        raise AttnclfError(f"the checkpoints read reviews differently (max_length, truncation): {sorted(reading)}")
    sets = [split_as_trained(data, c) for c in clfs]
    picked = sample(sets[0].lengths, reviews, max_tokens, seed, data.split)
    return clfs, [[s.tokens(i).astype(np.int64) for i in picked] for s in sets]
