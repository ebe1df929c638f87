"""Mechanisms compared across datasets (Demšar 2006; Benavoli et al. 2017), from a matrix of scores: one row a
dataset, one column a mechanism, each cell the mechanism's mean test accuracy on that dataset over its
replicates.

- Friedman's test of the mechanisms' ranks (scipy), with Nemenyi's critical difference of mean ranks: autorank
  computes both where there are 5 datasets or more (it refuses fewer); below that the same two by their
  definitions (scipy's Friedman; Demšar's CD = q_α √(k(k+1) / 6N), q_α the studentized range over √2).
- The Bayesian signed-rank test of every pair over the datasets with a region of practical equivalence
  (baycomp): P(A better), P(equivalent), P(B better).
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from dataclasses import dataclass

import numpy as np

# autorank ranks at least this many datasets
AUTORANK_LEAST = 5


@dataclass
class Ranking:
    """Friedman's test and Nemenyi's critical difference over the datasets (rows of `scores`)."""

    names: list[str]
    datasets: list[str]
    scores: np.ndarray
    # mean rank of each mechanism, 1 the best
    mean_ranks: dict[str, float]
    # nan with fewer than 3 mechanisms (Friedman's test needs 3)
    friedman_p: float
    cd: float
    # autorank's result where it ranked (5 datasets or more), else None
    autorank: object | None = None


def mean_ranks(scores: np.ndarray) -> np.ndarray:
    """(k,) each column's mean rank over the rows, 1 the highest score, ties sharing their mean rank."""
    from scipy.stats import rankdata

    return np.mean([rankdata(-row) for row in scores], axis=0)


def nemenyi_cd(k: int, n: int, alpha: float) -> float:
    """Nemenyi's critical difference of mean ranks for k mechanisms over n datasets (Demšar 2006, eq. 5)."""
    from scipy.stats import studentized_range

    q = studentized_range.ppf(1 - alpha, k, math.inf) / math.sqrt(2)
    return float(q * math.sqrt(k * (k + 1) / (6 * n)))


def rank(scores: np.ndarray, names: list[str], datasets: list[str], alpha: float = 0.05) -> Ranking:
    """The mechanisms ranked over the datasets."""
    from scipy.stats import friedmanchisquare

    k, n = len(names), len(datasets)
    p = float(friedmanchisquare(*scores.T).pvalue) if k >= 3 and n >= 2 else math.nan
    ranks = dict(zip(names, mean_ranks(scores).tolist(), strict=True))
    if n < AUTORANK_LEAST or k < 2:
        return Ranking(names, datasets, scores, ranks, p, nemenyi_cd(k, n, alpha))
    import pandas as pd
    from autorank import autorank

    # (autorank prints its table even when not verbose)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = pd.DataFrame(scores, columns=names, index=datasets)
        result = autorank(frame, alpha=alpha, force_mode="nonparametric", verbose=False)
    ranked = {str(m): float(r) for m, r in result.rankdf.meanrank.items()}
    return Ranking(names, datasets, scores, ranked, float(result.pvalue), float(result.cd), result)


@dataclass
class BayesPair:
    a: str
    b: str
    p_a: float
    p_equivalent: float
    p_b: float


def bayes_pairs(scores: np.ndarray, names: list[str], rope: float, seed: int = 0) -> list[BayesPair]:
    """Every pair's Bayesian signed-rank test over the datasets (baycomp; `rope` in the scores' unit)."""
    import itertools

    from baycomp import SignedRankTest

    out = []
    for i, j in itertools.combinations(range(len(names)), 2):
        p_a, p_rope, p_b = SignedRankTest.probs(scores[:, i], scores[:, j], rope=rope, random_state=seed)
        out.append(BayesPair(names[i], names[j], float(p_a), float(p_rope), float(p_b)))
    return out
