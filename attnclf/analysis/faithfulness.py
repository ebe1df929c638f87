"""The faithfulness measures over a sample of reviews, summarised (`measure`): what `attnclf faithfulness`
writes into faithfulness.json, and the seeded sample it reads (`sample`)."""

from __future__ import annotations

import logging
import time

import numpy as np

from attnclf.analysis import measures
from attnclf.analysis.adversarial import CANDIDATES, STEPS, adversarial_attention
from attnclf.analysis.attribution import importance
from attnclf.analysis.plausibility import plausibility
from attnclf.data.rationales import Aligned
from attnclf.errors import AttnclfError

log = logging.getLogger(__name__)

# a review's tau counts as significant at this p-value or below (Jain & Wallace's threshold, and their <=)
SIGNIFICANT = 0.05


def sample(
    lengths: np.ndarray, reviews: int, max_tokens: int, seed: int, split: str, min_tokens: int = 1
) -> np.ndarray:
    """`reviews` positions drawn without replacement (seeded) among those of `min_tokens` to `max_tokens` tokens."""
    eligible = np.flatnonzero(eligible_reviews(lengths, max_tokens, min_tokens))
    if reviews > len(eligible):
        least = f"{min_tokens} to " if min_tokens > 1 else "at most "
        raise AttnclfError(
            f"reviews={reviews} is more than split {split!r} has with {least}{max_tokens} tokens "
            f"({len(eligible)} of {len(lengths)}); lower reviews or raise max_tokens"
        )
    return np.sort(np.random.default_rng(seed).choice(eligible, reviews, replace=False))


def eligible_reviews(lengths: np.ndarray, max_tokens: int, min_tokens: int = 1) -> np.ndarray:
    """Which reviews the sample may draw: those of `min_tokens` to `max_tokens` tokens (a mask)."""
    return (lengths <= max_tokens) & (lengths >= min_tokens)


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


class Timer:
    """Calls a measure and keeps its seconds (`seconds`), said in the log as it ends."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def __call__(self, name: str, fn, *args, **kwargs):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        self.seconds[name] = round(time.perf_counter() - t, 2)
        log.info("%s: %.1f s", name, self.seconds[name])
        return out


def measure(
    model,
    seqs: list[np.ndarray],
    labels: np.ndarray,
    ks: list[float],
    cfg,
    marked: Aligned | None = None,
) -> tuple[dict, dict]:
    """All the measures of the classifier network `model` on the reviews: (the JSON result, per-review arrays
    for figures); with `marked` (the reviews' human rationales), each importance source's plausibility too.
    `cfg`: the faithfulness settings (batch_tokens, sources, seed, permutations, adversarial)."""
    bt, timed = cfg.batch_tokens, Timer()
    attr = timed("gradient", measures.attributions, model, seqs, bt)
    fixed = timed("gradient_fixed_weights", measures.attributions, model, seqs, bt, True)
    loo = timed("leave_one_out", measures.leave_one_out, model, seqs, attr.probs, bt)
    extra = {name: timed(name, importance, model, seqs, name, attr.pred, bt) for name in cfg.sources}  # Captum's
    orders = orders_of(attr, loo, extra, seqs, cfg.seed)
    erasure = timed("erasure", measures.erasure, model, seqs, attr.probs, orders, ks, bt)
    eraser = timed(
        "eraser", measures.comprehensiveness_sufficiency, model, seqs, attr.probs, orders, measures.ERASER_BINS, bt
    )
    flip = timed("tokens_to_flip", measures.tokens_to_flip, model, seqs, attr.probs, orders["attention"], bt)
    flip_random = timed("tokens_to_flip_random", measures.tokens_to_flip, model, seqs, attr.probs, orders["random"], bt)
    tv, entropy = timed("permutation", measures.permutation, model, seqs, cfg.permutations, cfg.seed, bt)
    uni = timed("uniform", measures.uniform, model, seqs, bt)
    cone, zeros = timed("states", measures.states_and_sparsity, model, seqs, bt)
    lengths = np.array([len(s) for s in seqs])
    agreed, tau = agreement(attr, fixed, loo, extra)
    flip_frac = share_removed(flip, lengths)
    result = {
        "accuracy": float((attr.pred == labels).mean()),
        "agreement": agreed,
        "erasure": erasure,
        # ERASER's scores (comprehensiveness, sufficiency, their AOPC) over its bins
        "eraser": {
            "bins": [measures.bin_name(b) for b in measures.ERASER_BINS],
            "reviews": int((lengths >= 2).sum()),
            "sources": eraser,
        },
        "tokens_to_flip": {
            "attention": flip_summary(flip, flip_frac),
            "random": flip_summary(flip_random, share_removed(flip_random, lengths)),
        },
        "permutation": permutation_summary(tv, entropy, cfg.permutations),
        "uniform": uniform_summary(uni, attr, labels),
        # Mohankumar et al.'s conicity of the encoder states, and the share of real tokens weighted exactly 0
        "states": {"conicity": summarize(cone), "zero_weight_share": summarize(zeros)},
        "seconds": timed.seconds,
        "seconds_per_review": seconds_per_review(timed.seconds, len(seqs), extra),
        # per review, in sample order (null where undefined), for comparing checkpoints
        "per_review": per_review_of(tau, flip, lengths, tv, entropy),
    }
    # agreement with the tokens people marked
    if marked is not None:
        result["plausibility"] = plausibility_of(attr, loo, orders, extra, marked)
    arrays = {"attr": attr, "loo": loo, "tau": tau, "flip_frac": flip_frac, "tv": tv, "entropy": entropy}
    # opt-in: a search of `steps` passes a batch
    if cfg.adversarial is not None:
        adv = timed("adversarial", adversarial_attention, model, seqs, cfg.adversarial, seed=cfg.seed, batch_tokens=bt)
        result["adversarial"] = adversarial_summary(adv, entropy, cfg.adversarial, timed.seconds["adversarial"])
        result["per_review"]["adversarial_jsd"] = _list(adv.jsd)
        arrays["adversarial"] = adv
    return result, arrays


def orders_of(attr, loo, extra: dict, seqs: list[np.ndarray], seed: int) -> dict:
    """Each importance source's ranking of each review's tokens, most important first; `random` a seeded
    permutation (the baseline)."""
    rng = np.random.default_rng(seed)
    return {
        "attention": [measures.ranking(w) for w in attr.weights],
        "gradient": [measures.ranking(g) for g in attr.gradient],
        "loo": [measures.ranking(np.nan_to_num(x, nan=0.0)) for x in loo],
        "random": [rng.permutation(len(s)) for s in seqs],
        **{name: [measures.ranking(v) for v in scores] for name, scores in extra.items()},
    }


def permutation_summary(tv: np.ndarray, entropy: np.ndarray, permutations: int) -> dict:
    """How much the output moves when the attention weights are permuted (total variation)."""
    return {
        "permutations": permutations,
        "median_tv": float(np.median(tv)),
        "mean_tv": float(np.mean(tv)),
        "share_tv_below_0.05": float(np.mean(tv < 0.05)),
        "spearman_entropy_tv": measures.spearman(entropy, tv),
        "by_entropy_quartile": by_entropy_quartile(entropy, tv, "tv"),
    }


def uniform_summary(uni: np.ndarray, attr, labels: np.ndarray) -> dict:
    """The model with uniform weights in place of its attention: accuracy and decisions against its own."""
    right, own = uni.argmax(-1) == labels, attr.pred == labels
    return {
        "accuracy": float(right.mean()),
        "accuracy_change": float(right.mean() - own.mean()),
        "decisions_changed": float((uni.argmax(-1) != attr.pred).mean()),
        "median_tv": float(np.median(0.5 * np.abs(uni - attr.probs).sum(-1))),
    }


def seconds_per_review(seconds: dict, reviews: int, extra: dict) -> dict:
    """What each importance source costs a review (the attention comes with the gradient's pass)."""
    keys = [
        ("gradient", "gradient"),
        ("gradient_fixed_weights", "gradient_fixed_weights"),
        ("loo", "leave_one_out"),
        *((n, n) for n in extra),
    ]
    return {name: seconds[key] / reviews for name, key in keys}


def per_review_of(tau: dict, flip, lengths: np.ndarray, tv: np.ndarray, entropy: np.ndarray) -> dict:
    """The per-review figures, in sample order (null where undefined)."""
    return {
        "kendall_tau_gradient": _list(tau["gradient"]),
        "kendall_tau_loo": _list(tau["loo"]),
        "kendall_tau_gradient_magnitude": _list(tau["gradient_magnitude"]),
        "kendall_tau_loo_magnitude": _list(tau["loo_magnitude"]),
        "tokens_to_flip": _list(flip),
        "tokens": lengths.tolist(),
        "permutation_tv": _list(tv),
        "entropy": _list(entropy),
    }


def plausibility_of(attr, loo, orders: dict, extra: dict, marked: Aligned) -> dict:
    """Each importance source's agreement with the tokens people marked (its AUPRC and token F1)."""
    scores = {
        "attention": attr.weights,
        "gradient": attr.gradient,
        "loo": [np.nan_to_num(x, nan=0.0) for x in loo],
        "random": [by_order(o) for o in orders["random"]],
        **extra,
    }
    sources = {name: plausibility(v, marked.gold, marked.spans) for name, v in scores.items()}
    marked_share = float(np.mean(np.concatenate(marked.gold)))
    return {"reviews": len(attr.weights), "marked_share": marked_share, "sources": sources}


def adversarial_summary(adv, entropy: np.ndarray, epsilon: float, seconds: float) -> dict:
    """The adversarial search's JSDs (nats): median and quartiles, by quartile of the attention's entropy, a
    random permutation's beside them, and the cost a review."""
    q = np.quantile(adv.jsd, [0.25, 0.5, 0.75])
    return {
        "epsilon": float(epsilon),
        "candidates": CANDIDATES,
        "steps": STEPS,
        "found_within_epsilon": float(adv.found.mean()),
        "median_jsd": float(q[1]),
        "quartiles_jsd": [float(q[0]), float(q[2])],
        "mean_jsd": float(adv.jsd.mean()),
        "mean_tv": float(adv.tv.mean()),
        "permuted_median_jsd": float(np.median(adv.permuted_jsd)),
        "by_entropy_quartile": by_entropy_quartile(entropy, adv.jsd, "jsd"),
        "seconds_per_review": seconds / max(len(adv.jsd), 1),
    }


def by_entropy_quartile(entropy: np.ndarray, values: np.ndarray, name: str) -> list[dict]:
    """The median of a per-review measure (`values`, reported as median_<name>) within each quartile of the
    attention weights' entropy, with the quartile's bounds and its reviews (empty quartiles left out)."""
    edges = np.quantile(entropy, np.linspace(0, 1, 5))
    bins = np.clip(np.searchsorted(edges, entropy, side="right") - 1, 0, 3)
    return [
        {
            "entropy_from": float(edges[b]),
            "entropy_to": float(edges[b + 1]),
            f"median_{name}": float(np.median(values[bins == b])),
            "reviews": int((bins == b).sum()),
        }
        for b in range(4)
        if (bins == b).any()
    ]


def tested(tau: np.ndarray, p: np.ndarray) -> dict:
    """A tau per review summarized, with the share of reviews (where defined) whose tau is significant."""
    ok = np.isfinite(p)
    return {**summarize(tau), "significant": float(np.mean(p[ok] <= SIGNIFICANT)) if ok.any() else float("nan")}


def agreement(
    attr: measures.Attributions, fixed: measures.Attributions, loo: list[np.ndarray], extra: dict | None = None
) -> tuple[dict, dict]:
    """Kendall tau per review between the attention, gradient x input and leave-one-out under two definitions,
    and the per-review taus. Signed: how much a token supports the predicted class (`attr.gradient`, the drop in
    p(predicted)). By magnitude, Jain & Wallace's: how far the token moves the output either way (|gradient x
    input| with the attention weights held fixed, `fixed.gradient`; |leave-one-out|); `gradient_with_attention`
    is |gradient x input| with the gradient through the weights too. Gradient against leave-one-out is the
    yardstick of what agreement between two importance measures looks like. `extra`: more sources (Captum's)
    by name, each against the attention under both definitions."""
    w, extra = attr.weights, extra or {}
    signed = {
        "gradient": measures.kendall_test(w, attr.gradient),
        "loo": measures.kendall_test(w, loo),
        **{name: measures.kendall_test(w, v) for name, v in extra.items()},
    }
    gradient, left_out = measures.magnitude(fixed.gradient), measures.magnitude(loo)
    by_size = {
        "gradient": measures.kendall_test(w, gradient),
        "loo": measures.kendall_test(w, left_out),
        "gradient_vs_loo": measures.kendall_test(gradient, left_out),
        "gradient_with_attention": measures.kendall_test(w, measures.magnitude(attr.gradient)),
        **{name: measures.kendall_test(w, measures.magnitude(v)) for name, v in extra.items()},
    }
    result = {
        "kendall_tau": {name: tested(*t) for name, t in signed.items()},
        "kendall_tau_gradient_vs_loo": tested(*measures.kendall_test(attr.gradient, loo)),
        "top1_same": {
            "gradient": measures.top1_agreement(w, attr.gradient),
            "loo": measures.top1_agreement(w, loo),
            "gradient_vs_loo": measures.top1_agreement(attr.gradient, loo),
            **{name: measures.top1_agreement(w, v) for name, v in extra.items()},
        },
        "magnitude": {name: tested(*t) for name, t in by_size.items()},
    }
    taus = {
        **{name: t[0] for name, t in signed.items()},
        "gradient_magnitude": by_size["gradient"][0],
        "loo_magnitude": by_size["loo"][0],
    }
    return result, taus


def by_order(order: np.ndarray) -> np.ndarray:
    """A score a token from a ranking (first: the highest), for the measures that take scores."""
    score = np.empty(len(order))
    score[order] = np.arange(len(order), 0, -1)
    return score


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
