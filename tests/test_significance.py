"""The comparison's statistics (attnclf/analysis/significance.py) against hand computations and the libraries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from attnclf.analysis import significance as sig


def right_wrong(n: int, accuracy: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < accuracy).astype(np.float64)


def test_the_interval_adds_the_seeds_spread_and_the_shared_test_samples_variance_by_hand():
    rows_a = ([1, 1, 0, 1, 0, 1, 1, 0], [1, 1, 0, 1, 0, 1, 1, 0], [1, 0, 0, 1, 0, 1, 1, 0])
    rows_b = ([1, 1, 1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 1, 1, 1])
    a = [np.array(x, dtype=np.float64) for x in rows_a]
    b = [np.array(x, dtype=np.float64) for x in rows_b]
    d = sig.difference(a, b, shared=True)
    per = np.array([2 / 8, 2 / 8, 3 / 8])
    assert np.allclose(d.per_replicate, per) and d.mean == pytest.approx(per.mean())
    # the seeds: the replicates' sample variance over k
    seed_var = per.var(ddof=1) / 3
    # the test sample: the per-example difference averaged over the seeds, its variance over n (ddof 0: the
    # bootstrap's), less each example's variance across the seeds over k (the seeds' own disagreement)
    per_example = np.array([y - x for x, y in zip(a, b, strict=True)])  # (3, 8)
    m = per_example.mean(0)
    example_var = (m.var() - per_example.var(0, ddof=1).mean() / 3) / 8
    assert example_var > 0
    assert d.seed_var == pytest.approx(seed_var) and d.example_var == pytest.approx(example_var)
    df = 2 * ((seed_var + example_var) / seed_var) ** 2
    half = stats.t.ppf(0.975, df) * math.sqrt(seed_var + example_var)
    assert (d.lo, d.hi) == pytest.approx((per.mean() - half, per.mean() + half))
    assert d.p == pytest.approx(2 * stats.t.sf(per.mean() / math.sqrt(seed_var + example_var), df))
    # cross-validation: no shared sample; the folds' overlap widens the seeds' part (Nadeau & Bengio)
    cv = sig.difference(a, b, shared=False, overlap=0.125)
    assert cv.example_var == 0 and cv.seed_var == pytest.approx(per.var(ddof=1) * (1 / 3 + 0.125))
    assert cv.df == 2


def test_the_shared_variance_is_the_bootstrap_of_the_examples_less_the_seeds_own():
    # one replicate: the bootstrap variance of its mean difference over the examples
    a, b = [right_wrong(2000, 0.8, 0)], [right_wrong(2000, 0.82, 10)]
    rng = np.random.default_rng(0)
    d = b[0] - a[0]
    boot = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(4000)]
    assert sig.shared_example_variance(a, b) == pytest.approx(np.var(boot), rel=0.1)
    # replicates that disagree at random, example by example, share no test-sample error: about 0
    a = [right_wrong(2000, 0.8, s) for s in range(8)]
    b = [right_wrong(2000, 0.8, s + 10) for s in range(8)]
    naive = np.mean([y - x for x, y in zip(a, b, strict=True)], 0).var() / 2000
    assert sig.shared_example_variance(a, b) < 0.1 * naive


def test_mcnemar_counts_only_the_discordant_examples_and_equals_the_exact_binomial():
    # 50 both right, 7 only A right, 19 only B right, 24 both wrong
    a = np.array([1] * 50 + [1] * 7 + [0] * 19 + [0] * 24, bool)
    b = np.array([1] * 50 + [0] * 7 + [1] * 19 + [0] * 24, bool)
    (t,) = sig.mcnemar_tables([a], [b])
    assert (t.a_only, t.b_only) == (7, 19)
    assert t.p == pytest.approx(stats.binomtest(7, 26, 0.5).pvalue)
    # more agreement changes nothing
    (u,) = sig.mcnemar_tables([np.r_[a, [True] * 500]], [np.r_[b, [True] * 500]])
    assert (u.a_only, u.b_only, u.p) == (7, 19, t.p)


def test_replicates_combine_signed_two_that_disagree_cancel():
    one = sig.McNemar(7, 19, 0.0290)
    other = sig.McNemar(19, 7, 0.0290)
    assert sig.combined_mcnemar([one, other]) == pytest.approx(1.0)
    z = stats.norm.isf(0.0290 / 2)
    assert sig.combined_mcnemar([one, one, one]) == pytest.approx(2 * stats.norm.sf(3 * z / math.sqrt(3)))
    assert sig.combined_mcnemar([one]) == pytest.approx(0.0290)


def test_holm_adjusts_each_p_by_its_rank_and_keeps_the_order():
    """Holm (1979) by hand: p sorted 0.005, 0.01, 0.03, 0.04 of m = 4 -> x4, x3, x2, x1, each at least the one
    before: 0.02, 0.03, 0.06, 0.06; a nan (no spread) stays outside the family."""
    got = sig.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005, "e": float("nan")})
    assert {k: round(v, 10) for k, v in got.items() if k != "e"} == {"d": 0.02, "a": 0.03, "c": 0.06, "b": 0.06}
    assert math.isnan(got["e"])
    # monotone in p, given in any order
    ps = {i: p for i, p in enumerate([0.04, 0.001, 0.03, 0.2, 0.011, 0.012])}
    adj = sig.holm(ps)
    order = sorted(ps, key=ps.get)
    assert all(adj[i] <= adj[j] for i, j in zip(order, order[1:], strict=False))


def test_aso_is_deepsigs_with_b_over_a_and_p_outperform_counts_ties_half():
    from deepsig import aso

    a, b = [0.80, 0.81, 0.79], [0.84, 0.85, 0.83]
    eps = sig.aso_epsilon(a, b, comparisons=3, seed=1)
    assert eps == aso(b, a, confidence_level=0.95, num_comparisons=3, num_bootstrap_iterations=200,
                      show_progress=False, seed=1)  # fmt: skip
    assert eps < 0.2 and sig.aso_epsilon(b, a, seed=1) > 0.8
    assert math.isnan(sig.aso_epsilon([0.8], [0.9]))
    assert sig.prob_outperform([0.8, 0.8, 0.9, 0.7], [0.9, 0.8, 0.85, 0.75]) == pytest.approx((1 + 0.5 + 0 + 1) / 4)


def exactly(n: int, right: int, shift: int) -> np.ndarray:
    """n examples, `right` of them right, the right ones starting at `shift` (wrapping)."""
    return np.roll((np.arange(n) < right).astype(np.float64), shift)


def judged(a, b, shared=True, p_adjusted=None):
    d = sig.difference(a, b, shared)
    p = d.p if p_adjusted is None else p_adjusted
    return sig.verdict("dot", "crippled", d, p, 0.05, 0.2, 100, "points", 0.05)


def test_verdicts_better_equivalent_and_not_settled():
    # a crippled mechanism, 2 seeds: settled
    a = [right_wrong(1000, 0.9, s) for s in (1, 2)]
    b = [right_wrong(1000, 0.5, s + 5) for s in (1, 2)]
    v = judged(a, b)
    assert v.kind == "better" and v.text.startswith("dot better by") and "settled" in v.text
    # the same mechanism, the same seeds: the same predictions, never "better"
    same = judged(a, [x.copy() for x in a])
    assert same.kind == "equivalent"
    # a small difference with seeds that vary: not settled, with how many more seeds
    noisy_a = [exactly(20000, 17000, 0)] * 3
    noisy_b = [exactly(20000, right, shift) for right, shift in ((17240, 30), (16840, 50), (17300, 20))]
    n = judged(noisy_a, noisy_b)
    assert n.kind == "not settled" and n.more is not None and f"about {n.more} more seeds" in n.text
    # the shared test sample's variance does not shrink with seeds: too small a test set never settles
    wide = [exactly(1000, right, shift) for right, shift in ((862, 40), (842, 90), (865, 130))]
    never = judged([exactly(1000, 850, 0)] * 3, wide)
    assert never.kind == "not settled" and never.more is None and "more than 100" in never.text


def test_power_by_simulation_agrees_with_the_noncentral_t():
    """Seeds alone (no shared sample): the one-sample t-test's power is the noncentral t's; the simulated count
    of more seeds must land where that puts it (within one)."""
    per = np.array([0.004, 0.012, 0.008])
    d = sig.combine(per, per.var(ddof=1) / 3, 0.0, per.var(ddof=1), 0.0, 0.95)
    more = sig.more_for_power(d, 0.05)
    effect = per.mean() / per.std(ddof=1)

    def power(k):
        crit = stats.t.ppf(0.975, k - 1)
        nc = effect * math.sqrt(k)
        return stats.nct.sf(crit, k - 1, nc) + stats.nct.cdf(-crit, k - 1, nc)

    exact = next(k for k in range(2, 200) if power(k) >= 0.8)
    assert abs((3 + more) - exact) <= 1, (more, exact)


def test_the_verdict_reads_holms_p_not_the_raw_one():
    """Three pairs each just under 0.05 alone: after Holm's correction none is settled."""
    from attnclf.analysis.verdicts import Evidence, Settings, judge_all

    # per-replicate differences whose seed-level test gives p of about 0.03-0.045 (no shared sample)
    pairs_of = {("dot", x): [None] * 4 for x in ("b", "c", "d")}
    per = {"b": [0.009, 0.013, 0.003, 0.011], "c": [0.011, 0.014, 0.003, 0.010], "d": [0.012, 0.013, 0.002, 0.011]}

    order = iter("bcd")

    def evidence_of(pairs):
        d = per[next(order)]
        return Evidence([np.zeros(1)] * 4, [np.array([x]) for x in d], False, 0.0, "seeds")

    judged = judge_all(pairs_of, evidence_of, Settings(), 100, "points", 0.2)
    assert all(v.diff.p < 0.05 for v in judged), [v.diff.p for v in judged]
    assert all(v.p_adjusted > 0.05 and v.verdict.kind != "better" for v in judged)
