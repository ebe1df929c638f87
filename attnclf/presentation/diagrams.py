"""The comparison's diagrams across datasets: the critical-difference diagram (autorank's drawing) and the
Bayesian signed-rank probabilities of every pair. Each function returns a figure; the caller saves it."""

from __future__ import annotations

import math

from attnclf.presentation.figures import pyplot


def critical_difference_figure(ranking):
    """Demšar's critical-difference diagram of an attnclf/analysis/across_datasets.py Ranking, drawn by autorank
    (its own result where it ranked, else one built of the same figures: mean ranks, Friedman's p, Nemenyi's
    CD). Mechanisms joined by a bar are within the critical difference of each other."""
    import pandas as pd
    from autorank import plot_stats
    from autorank._util import RankResult

    result = ranking.autorank
    if result is None:
        ranks = pd.DataFrame({"meanrank": ranking.mean_ranks}).sort_values("meanrank")
        fields = dict.fromkeys(RankResult._fields)
        fields.update(rankdf=ranks, pvalue=ranking.friedman_p, cd=ranking.cd, omnibus="friedman", posthoc="nemenyi")
        fields.update(alpha=0.05, num_samples=len(ranking.datasets))
        result = RankResult(**fields)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(ranking.names) + 1.6))
    plot_stats(result, allow_insignificant=True, ax=ax)
    said = "n/a (fewer than 3)" if math.isnan(ranking.friedman_p) else f"{ranking.friedman_p:.3g}"
    fig.suptitle(
        f"mean rank over {len(ranking.datasets)} datasets; CD {ranking.cd:.2f} (Nemenyi), Friedman p {said}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def bayes_pairs_figure(pairs, rope_points: float):
    """Each pair's P(A better), P(practically equivalent), P(B better) over the datasets, as one bar."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(pairs) + 1.4))
    colours = ("tab:blue", "lightgrey", "tab:orange")
    for y, p in enumerate(pairs):
        left = 0.0
        for share, colour in zip((p.p_a, p.p_equivalent, p.p_b), colours, strict=True):
            ax.barh(y, share, left=left, color=colour, edgecolor="white")
            if share >= 0.08:
                ax.text(left + share / 2, y, f"{share:.2f}", ha="center", va="center", fontsize=8)
            left += share
    ax.set_yticks(range(len(pairs)), [f"{p.a} vs {p.b}" for p in pairs])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set(
        xlabel=f"probability: A better (blue), within ±{rope_points:g} points (grey), B better (orange)",
        title="Bayesian signed-rank test over the datasets (baycomp)",
    )
    fig.tight_layout()
    return fig
