"""Markdown: TensorBoard's text of a review with its top words in bold, and the faithfulness summary."""

from __future__ import annotations

import math

import numpy as np

from attnclf.presentation.figures import k_label


def top_words_marked(words: list[str], weights: np.ndarray, top_k: int) -> str:
    """The review's words, the `top_k` highest-weighted in bold with their weight."""
    top = set(np.argsort(-weights)[:top_k].tolist())
    return " ".join(f"**{w}**({weights[j]:.2f})" if j in top else w for j, w in enumerate(words))


def _agreement_row(label: str, signed: dict, size: dict, top1: float) -> str:
    """One row of the agreement table: a pair's tau signed and by magnitude, each with its significant share."""
    return (
        f"| {label} | {signed['mean']:.3f} ± {signed['sd']:.3f} | {signed['median']:.3f} | "
        f"{signed['significant']:.0%} | {top1:.1%} | {size['mean']:.3f} ± {size['sd']:.3f} | "
        f"{size['significant']:.0%} |"
    )


def faithfulness_markdown(r: dict) -> str:
    """attnclf faithfulness's summary.md from its faithfulness.json result: a section a measure."""
    lines = [
        f"# Faithfulness of {r['attention']} attention",
        "",
        f"`{r['checkpoint']}` on {r['reviews']} reviews of `{r['data']}` {r['split']} (seed {r['seed']}; "
        f"{sample_said(r)}; mean {r['mean_tokens']:.0f} tokens). Accuracy on them {r['accuracy']:.2%}. "
        f"{r['total_seconds']:.0f} s.",
        "",
        *agreement_lines(r["agreement"]),
        *erasure_lines(r["erasure"], r["ks"]),
        *(eraser_lines(r["eraser"]) if r.get("eraser") else []),
        *(plausibility_lines(r["plausibility"]) if r.get("plausibility") else []),
        *flip_lines(r["tokens_to_flip"]),
        *permutation_lines(r["permutation"]),
        *uniform_lines(r["uniform"]),
        *(states_lines(r["states"]) if "states" in r else []),
        *(adversarial_lines(r["adversarial"]) if "adversarial" in r else []),
    ]
    return "\n".join(lines)


def sample_said(r: dict) -> str:
    """Which reviews were measured: the sample's bounds and share, or the rationale set's."""
    if "rationales" not in r:
        least = f"{r['min_tokens']} to " if r.get("min_tokens", 1) > 1 else "at most "
        return f"reviews of {least}{r['max_tokens']} tokens, {r['eligible_share']:.0%} of the split"
    left = r["rationales"]["left_out"]
    return (
        "the reviews with rationales, read as the classifier reads"
        + (f" (at most {r['max_tokens']} tokens)" if r["max_tokens"] else " (whole)")
        + ": "
        f"{r['eligible_share']:.0%} of the {r['rationales']['read']} read"
        + (" (left out: " + ", ".join(f"{n} {kind}" for kind, n in left.items()) + ")" if left else "")
    )


def agreement_lines(a: dict) -> list[str]:
    """The Kendall tau table: each pair the attention is set against (and the yardstick), signed and by
    magnitude."""
    tau = a["kendall_tau"]
    pairs = [
        ("gradient x input", "gradient", tau["gradient"]),
        ("leave-one-out", "loo", tau["loo"]),
        ("(gradient vs leave-one-out)", "gradient_vs_loo", a["kendall_tau_gradient_vs_loo"]),
    ]
    pairs += [(name.replace("_", " "), name, t) for name, t in tau.items() if name not in ("gradient", "loo")]
    return [
        "## Agreement with other importance measures (Kendall tau per review)",
        "",
        "Signed: how much a token supports the predicted class. By magnitude (Jain & Wallace's definition): how "
        "far it moves the output either way (|gradient x input| with the attention weights held fixed, "
        "|leave-one-out|). Significant: the share of reviews whose tau has p <= 0.05.",
        "",
        "| attention vs | signed tau mean ± sd | median | significant | top-1 token the same | "
        "by magnitude: tau mean ± sd | significant |",
        "|---|---|---|---|---|---|---|",
        *(_agreement_row(label, t, a["magnitude"][name], a["top1_same"][name]) for label, name, t in pairs),
        "",
    ]


def erasure_lines(e: dict, ks: list) -> list[str]:
    """Decisions flipped after removing each ranking's top tokens."""
    lines = [
        "## Erasure: decisions flipped (mean drop in p(predicted)) after removing the most important tokens",
        "",
        "| ranking | " + " | ".join(k_label(k) for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    for name, by_k in e.items():
        cells = [f"{by_k[k]['flipped']:.1%} ({by_k[k]['prob_drop']:+.3f})" for k in ks]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def eraser_lines(er: dict) -> list[str]:
    """ERASER's comprehensiveness and sufficiency, a source a row."""
    bins = er["bins"]
    # 1pct in the JSON, 1% to a reader
    shown = [b.replace("pct", "%") for b in bins]
    lines = [
        "",
        f"## ERASER: comprehensiveness and sufficiency ({er['reviews']} reviews of 2 tokens or more)",
        "",
        "Comprehensiveness: p(predicted) lost when a source's top tokens are deleted (higher: the decision "
        "rests on them); sufficiency: lost when only they are kept (lower: they are enough). Bins: the top "
        + ", ".join(shown)
        + " of a review's tokens (at least 1, at most all but 1); AOPC: the mean over them.",
        "",
        "| importance | AOPC comprehensiveness | AOPC sufficiency | "
        + " | ".join(f"comp. / suff. {b}" for b in shown)
        + " |",
        "|---|---|---|" + "---|" * len(bins),
    ]
    for name, v in er["sources"].items():
        cells = [f"{v['comprehensiveness'][b]:.3f} / {v['sufficiency'][b]:.3f}" for b in bins]
        lines.append(
            f"| {name} | {v['aopc_comprehensiveness']:.3f} | {v['aopc_sufficiency']:.3f} | " + " | ".join(cells) + " |"
        )
    return lines


def plausibility_lines(pl: dict) -> list[str]:
    """Each source's agreement with the tokens people marked."""
    lines = [
        "",
        f"## Plausibility: agreement with the tokens people marked ({pl['reviews']} reviews, "
        f"{pl['marked_share']:.1%} of their tokens marked)",
        "",
        "Token F1: the top tokens by a source, as many as were marked, against the marked ones; AUPRC: the "
        "area under its precision-recall curve against them; IOU-F1: its top tokens' runs as spans, matching "
        "a marked span at intersection over union >= 0.5 (per review, averaged; micro: counts summed). "
        "Higher: closer to what people marked.",
        "",
        "| importance | token F1 | AUPRC | IOU-F1 | IOU-F1 micro |",
        "|---|---|---|---|---|",
    ]
    for name, v in pl["sources"].items():
        lines.append(
            f"| {name} | {v['token_f1']:.3f} | {v['auprc']:.3f} | {v['iou_f1']:.3f} | {v['iou_f1_micro']:.3f} |"
        )
    return lines


def flip_lines(flips: dict) -> list[str]:
    """How many tokens, removed in each order, flip the decision."""
    lines = [
        "",
        "## Tokens removed, in order, until the decision flips",
        "",
        "| order | median tokens | quartiles | median share of the review | never flips |",
        "|---|---|---|---|---|",
    ]
    for name, f in flips.items():
        q = f["quartiles_tokens"]
        lines.append(
            f"| {name} | {f['median_tokens']:g} | {q[0]:g} – {q[1]:g} | {f['median_fraction']:.1%} | {f['never']:.1%} |"
        )
    return lines


def permutation_lines(p: dict) -> list[str]:
    """The output's change when the weights are shuffled, by the attention's entropy."""
    return [
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
    ]


def uniform_lines(u: dict) -> list[str]:
    """The model with uniform weights."""
    return [
        "",
        "## Uniform weights",
        "",
        f"Accuracy {u['accuracy']:.2%} ({u['accuracy_change']:+.2%} against the model's own weights); "
        f"{u['decisions_changed']:.1%} of decisions change; median output change {u['median_tv']:.4f}.",
        "",
    ]


def states_lines(st: dict) -> list[str]:
    """The encoder states' conicity and the share of tokens weighted exactly 0."""
    c, z = st["conicity"], st["zero_weight_share"]
    return [
        "## The states attention reads",
        "",
        f"Conicity of the encoder states (mean |cos| of each state with the review's mean state; near 1 they "
        f"point one way, and any weighting pools about the same vector) {c['mean']:.3f} (sd {c['sd']:.3f}); "
        f"share of real tokens weighted exactly 0 {z['mean']:.1%}.",
        "",
    ]


def adversarial_lines(adv: dict) -> list[str]:
    """summary.md's section on Jain & Wallace's adversarial attention search."""
    q = adv["quartiles_jsd"]
    return [
        f"## Adversarial attention (Jain & Wallace; output kept within {adv['epsilon']:g})",
        "",
        f"The largest Jensen-Shannon divergence (nats, at most ln 2 = 0.693) from the model's weights found "
        f"with the output moved at most {adv['epsilon']:g} ({adv['candidates']} candidates a review, "
        f"{adv['steps']} steps): median {adv['median_jsd']:.3f} (quartiles {q[0]:.3f} – {q[1]:.3f}), found "
        f"for {adv['found_within_epsilon']:.1%} of reviews; a random permutation of the weights: median "
        f"{adv['permuted_median_jsd']:.3f}. {adv['seconds_per_review']:.2f} s a review.",
        "",
        "| attention entropy (nats) | median max JSD | reviews |",
        "|---|---|---|",
        *[
            f"| {b['entropy_from']:.2f} – {b['entropy_to']:.2f} | {b['median_jsd']:.3f} | {b['reviews']} |"
            for b in adv["by_entropy_quartile"]
        ],
        "",
    ]


def attention_tests_markdown(r: dict) -> str:
    """The result as a table: accuracy, and the output's and weights' distance from the classifier's."""
    epochs = f"{r['epochs']} epoch{'' if r['epochs'] == 1 else 's'}"
    head = (
        f"# Wiegreffe & Pinter's {r['test']} test of {r['attention']} attention\n\n`{r['checkpoint']}`, "
        f"{epochs} a model, seed {r['seed']}, {r['total_seconds']:.0f} s.\n\n"
    )
    rows = r["weights"].items() if r["test"] == "diagnostic" else [(f"lambda {x['lambda']:g}", x) for x in r["lambdas"]]
    first = next(iter(rows))[1] if rows else None
    table = [
        "| model | test accuracy | TVD from the classifier's output | JSD from its weights (nats) |",
        "|---|---|---|---|",
    ]
    table += [
        f"| {name} | {v['accuracy']:.2%} | {v['tvd_from_base']:.3f} | {v['jsd_from_base']:.3f} |" for name, v in rows
    ]
    # the diagnostic's model, guided by each adversary's weights
    if r["test"] == "adversarial":
        table[0] += " the diagnostic with its weights |"
        table[1] += "---|"
        guided = [x["diagnostic"]["accuracy"] for x in r["lambdas"]]
        table[2:] = [f"{row} {acc:.2%} |" for row, acc in zip(table[2:], guided, strict=True)]
    base = f"\n\nThe classifier itself: {first['base_accuracy']:.2%} on the same {first['test_rows']} rows.\n"
    return head + "\n".join(table) + (base if first else "\n")


def _num(x: float, fmt: str = ".3g") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def examples_said(evidence) -> str:
    """How many test examples each replicate of a pair was judged on: one count where every replicate read the
    same examples, the range where folds held out their own; "-" where only the seeds' accuracies were read."""
    if evidence.level != "examples":
        return "-"
    sizes = sorted({len(x) for x in evidence.a})
    said = f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}-{sizes[-1]:,}"
    return f"the same {said}" if evidence.shared else said


def verdict_lines(judged: list, scale: float, unit: str, what: str, level: float = 0.95) -> list[str]:
    """The verdict table of every pair (attnclf/analysis/verdicts.py's PairVerdicts): B − A with its interval,
    the tests, and the verdict; a line under it for each pair judged at the seed level only, saying why."""
    lines = [
        f"| A | B | replicates | judged on | test examples a replicate | B − A ({unit}, {level * 100:g}% interval) | "
        f"p (Holm) | McNemar p (Holm) | ASO ε_min, B ≻ A | P(B > A) | verdict ({what}) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for v in judged:
        d = v.diff
        interval = f"{d.mean * scale:+.2f} ({d.lo * scale:+.2f} to {d.hi * scale:+.2f})"
        if not math.isfinite(d.lo):
            interval = f"{d.mean * scale:+.2f} (one replicate: no interval)"
        level = "examples" if v.evidence.level == "examples" else "seeds only"
        cells = [
            v.a,
            v.b,
            str(d.replicates),
            level,
            examples_said(v.evidence),
            interval,
            f"{_num(d.p)} ({_num(v.p_adjusted)})",
            f"{_num(v.mcnemar_p)} ({_num(v.mcnemar_adjusted)})" if v.mcnemar else "-",
            _num(v.eps, ".2f"),
            _num(v.p_outperform, ".2f"),
            v.verdict.text,
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if v.evidence.why:
            notes.append(f"- {v.a} and {v.b}: judged on the seeds' accuracies only: {v.evidence.why}.")
    return lines + ([""] + notes if notes else [])


def across_lines(ranking, pairs: list, rope: float) -> list[str]:
    """report.md's comparison across datasets: an attnclf/analysis/across_datasets.py Ranking as a table of each
    attention's mean test accuracy per dataset with the mean ranks, Friedman's p and Nemenyi's CD, and every
    pair's Bayesian signed-rank probabilities (BayesPairs); the figures report writes beside it, linked."""
    names, labels = ranking.names, ranking.datasets
    friedman = (
        f"Friedman's test over the {len(labels)} datasets: p = {ranking.friedman_p:.3g}"
        if not math.isnan(ranking.friedman_p)
        else "Friedman's test needs 3 attentions or more"
    )
    return [
        f"Each attention's mean test accuracy on each dataset (%), ranked within the dataset (1 the best). {friedman}"
        f"; Nemenyi's critical difference of mean ranks {ranking.cd:.2f} (two attentions whose mean ranks differ by "
        "less are joined in the diagram).",
        "",
        "| dataset | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
        *(
            f"| {d} | " + " | ".join(f"{x * 100:.2f}" for x in row) + " |"
            for d, row in zip(labels, ranking.scores, strict=True)
        ),
        "| mean rank | " + " | ".join(f"{ranking.mean_ranks[a]:.2f}" for a in names) + " |",
        "",
        "![critical-difference diagram](critical_difference.png)",
        "",
        f"Every pair over the datasets, Bayesian signed-rank test (baycomp), practically equivalent within ±{rope:g} "
        "points:",
        "",
        "| A | B | P(A better) | P(equivalent) | P(B better) |",
        "|---|---|---|---|---|",
        *(f"| {p.a} | {p.b} | {p.p_a:.3f} | {p.p_equivalent:.3f} | {p.p_b:.3f} |" for p in pairs),
        "",
        "![Bayesian signed-rank probabilities of every pair](bayes_across_datasets.png)",
    ]
