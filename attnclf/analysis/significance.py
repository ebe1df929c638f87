"""How sure a comparison of two mechanisms is: pure functions over arrays (no torch, no files).

The evidence for a pair A, B on one dataset is k paired replicates (the same seed, or the same cross-validation
fold), each a per-example score of both runs on the same examples: 1/0 for right/wrong (accuracy), or any
per-example figure (a review's Kendall tau). From it:

- `difference`: B − A with a 95% interval that counts both sources of variation. The seeds' (or folds') spread
  of the per-replicate differences is the training variance; where every replicate classified the same test
  examples (a dataset's own test split), that test sample is shared and its error does not shrink with more
  seeds, so its variance is added once: the bootstrap variance of the mean over examples of the seeds'
  average per-example difference, less the seeds' own disagreement example by example (already in their
  spread). Under cross-validation each fold has its own held-out examples, whose
  sampling error is already in the folds' spread, and the folds' training sets overlap: Nadeau & Bengio's
  (2003) correction, the correlated t-test Benavoli et al. (2017) use, 1/k + n_test/n_train. The interval is
  Student's t with Welch–Satterthwaite's degrees of freedom for the sum of the two variances. Why not a
  bootstrap of the seeds too: with 2-5 seeds a bootstrap understates their spread by a factor (k−1)/k and
  has a handful of distinct means; t is exact for normal seed effects (the simulation in
  tests/test_study.py measures its false-positive rate).
- `mcnemar_tables` and `combined_mcnemar`: Dietterich's (1998) example-level test, McNemar's exact test on each
  replicate's discordant pairs, the replicates combined by Stouffer's method with each z signed by the
  direction of its replicate (two seeds that disagree in direction cancel, as they should).
- `aso_epsilon`: Almost Stochastic Order (Dror et al. 2019) over the replicates' scores, through deepsig.
- `prob_outperform`: P(B > A), Bouthillier et al.'s (2021) probability that B's run beats A's paired run.
- `more_for_power`: how many more replicates each would make the test reject at a level with 80% power, by
  simulating the study with the variances just measured and the difference just seen (Card et al. 2020).
- `verdict`: better and settled, practically equivalent (the interval inside ±rope), or not settled.
- `holm`: Holm's step-down correction, through statsmodels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
# points of accuracy (or of tau x 100) inside which two mechanisms are the same for a user (docs/usage.md, "How
# sure is a comparison", says why 0.2)
ROPE = 0.2
POWER = 0.8


@dataclass
class Difference:
    """B − A over k replicates (in the scores' own unit: a share for accuracy)."""

    mean: float
    lo: float
    hi: float
    p: float
    # the replicates' own differences, (k,)
    per_replicate: np.ndarray
    # the variance of the mean from the replicates' spread (training), and from the shared test sample
    seed_var: float
    example_var: float
    df: float
    # the spread of one replicate's difference (its sample variance; nan with one replicate)
    spread: float
    # Nadeau & Bengio's n_test / n_train under cross-validation (0: the replicates' own test split)
    overlap: float

    @property
    def replicates(self) -> int:
        return len(self.per_replicate)


def replicate_differences(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """(k,) each replicate's mean of B's per-example scores less A's."""
    return np.array([np.mean(y) - np.mean(x) for x, y in zip(a, b, strict=True)], dtype=np.float64)


def shared_example_variance(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The test sample's share of the variance of the mean difference when every replicate scored the same n
    examples: the bootstrap variance over examples of the replicates' average per-example difference, less
    the part of it that is the replicates' own disagreement (each example's variance across replicates over k,
    already in the replicates' spread), as a two-way analysis of variance splits them; 0 at the least."""
    d = np.stack([np.asarray(y, np.float64) - np.asarray(x, np.float64) for x, y in zip(a, b, strict=True)])
    k, n = d.shape
    per_example = d.mean(0)
    within = float(d.var(0, ddof=1).mean()) / k if k > 1 else 0.0
    return max(0.0, float(per_example.var()) - within) / n


def difference(
    a: list[np.ndarray], b: list[np.ndarray], shared: bool, overlap: float = 0.0, level: float = 0.95
) -> Difference:
    """B − A with its interval at `level` and a two-sided p for no difference. `shared`: every replicate scored
    the same examples (add their sampling variance once); `overlap`: n_test / n_train of the folds under
    cross-validation (0 otherwise)."""
    d = replicate_differences(a, b)
    k = len(d)
    example_var = shared_example_variance(a, b) if shared else 0.0
    spread = float(d.var(ddof=1)) if k > 1 else math.nan
    seed_var = spread * (1 / k + overlap) if k > 1 else math.nan
    return combine(d, seed_var, example_var, spread, overlap, level)


def satterthwaite_df(seed_var, total, k: int):
    """Welch–Satterthwaite's degrees of freedom of `total` = the seeds' variance (k − 1 of its own) + a variance
    known as good as exactly (the test sample's): inf where the seeds' is 0. Scalars or arrays (the simulation)."""
    seed_var, total = np.asarray(seed_var, np.float64), np.asarray(total, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(seed_var > 0, (k - 1) * (total / seed_var) ** 2, np.inf)


def combine(d: np.ndarray, seed_var: float, example_var: float, spread: float, overlap: float, level: float):
    """The interval and p of the mean of `d` with the two variances (Welch–Satterthwaite's degrees of freedom:
    the seeds' k − 1 where their variance is all, towards the normal where the test sample's dominates)."""
    from scipy import stats

    k, mean = len(d), float(np.mean(d))
    if not k > 1:
        return Difference(mean, -math.inf, math.inf, math.nan, d, seed_var, example_var, math.nan, spread, overlap)
    total = seed_var + example_var
    df = float(satterthwaite_df(seed_var, total, k))
    se = math.sqrt(total)
    if se == 0:
        return Difference(mean, mean, mean, 1.0 if mean == 0 else 0.0, d, seed_var, example_var, df, spread, overlap)
    q = stats.t.ppf(0.5 + level / 2, df)
    p = float(2 * stats.t.sf(abs(mean) / se, df))
    return Difference(mean, mean - q * se, mean + q * se, p, d, seed_var, example_var, df, spread, overlap)


@dataclass
class McNemar:
    """One replicate's discordant pairs: `b_only` examples B got right and A wrong, `a_only` the reverse."""

    a_only: int
    b_only: int
    p: float


def mcnemar_tables(a: list[np.ndarray], b: list[np.ndarray]) -> list[McNemar]:
    """McNemar's exact test (the binomial on the discordant pairs) of each replicate's right/wrong arrays."""
    from statsmodels.stats.contingency_tables import mcnemar

    out = []
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x, bool), np.asarray(y, bool)
        a_only, b_only = int((x & ~y).sum()), int((~x & y).sum())
        table = [[int((x & y).sum()), a_only], [b_only, int((~x & ~y).sum())]]
        p = 1.0 if a_only + b_only == 0 else float(mcnemar(table, exact=True).pvalue)
        out.append(McNemar(a_only, b_only, p))
    return out


def combined_mcnemar(tables: list[McNemar]) -> float:
    """One two-sided p over the replicates: each replicate's two-sided p as a z signed by which of the two it
    favours (Stouffer's method, equal weights), their sum over √k."""
    from scipy import stats

    if not tables:
        return math.nan
    z = [math.copysign(stats.norm.isf(min(t.p, 1.0) / 2), t.b_only - t.a_only) for t in tables]
    return float(2 * stats.norm.sf(abs(sum(z)) / math.sqrt(len(z))))


def aso_epsilon(a: list[float], b: list[float], comparisons: int = 1, seed: int = 0) -> float:
    """Almost Stochastic Order's ε_min that B's scores dominate A's (deepsig; Dror et al. 2019): near 0, B is
    almost always better; 0.5, neither; near 1, A is. `comparisons`: deepsig's own Bonferroni correction of
    the confidence level for that many pairs. nan with fewer than 2 scores each."""
    if len(a) < 2 or len(b) < 2:
        return math.nan
    import warnings

    from deepsig import aso

    # 200 bootstrap iterations, not deepsig's 1,000: the same ε_min to the second decimal here, at a fifth of the
    # time (identical scores make deepsig warn of a division by zero in its violation ratio: not the user's to act on)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        eps = aso(
            list(map(float, b)),
            list(map(float, a)),
            confidence_level=1 - ALPHA,
            num_comparisons=comparisons,
            num_bootstrap_iterations=200,
            show_progress=False,
            seed=seed,
        )
    return float(eps)


def prob_outperform(a: list[float], b: list[float]) -> float:
    """P(B > A): the share of paired replicates where B's score beats A's, a tie counting half (Bouthillier et
    al. 2021, who call B better in a useful sense where this is 0.75 or more)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not len(a):
        return math.nan
    return float(np.mean((b > a) + 0.5 * (b == a)))


def holm(p: dict) -> dict:
    """{key: Holm-adjusted p} (statsmodels' multipletests); a p that is nan stays nan, outside the family."""
    from statsmodels.stats.multitest import multipletests

    keys = [k for k, v in p.items() if not math.isnan(v)]
    out = {k: math.nan for k in p}
    if keys:
        adjusted = multipletests([p[k] for k in keys], method="holm")[1]
        out.update({k: float(v) for k, v in zip(keys, adjusted, strict=True)})
    return out


def rejections(d: np.ndarray, seed_var: np.ndarray, example_var: float, k: int, alpha: float) -> np.ndarray:
    """Vectorised `combine`'s decision: which of many simulated studies (rows of `d`, their means; `seed_var`
    each study's) reject no difference at `alpha`."""
    from scipy import stats

    total = seed_var + example_var
    df = satterthwaite_df(seed_var, total, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(d) / np.sqrt(total)
    return np.where(total > 0, 2 * stats.t.sf(t, df) < alpha, d != 0)


def more_for_power(
    diff: Difference, alpha: float, power: float = POWER, most: int = 100, sims: int = 4000, seed: int = 0
) -> int | None:
    """How many more replicates each would make `difference` reject at `alpha` with probability `power`, were
    the true difference what was seen and the variances what were measured: the study simulated (Card et al.
    2020), replicates' differences drawn normal with the measured spread, the shared test sample's error once
    a study. None: not within `most` more (the test sample's or the folds' overlap's variance alone is too
    large), or one replicate only (no spread measured)."""
    if diff.replicates < 2 or not math.isfinite(diff.spread):
        return None
    rng = np.random.default_rng(seed)
    sd = math.sqrt(diff.spread)
    for more in range(1, most + 1):
        k = diff.replicates + more
        draws = diff.mean + sd * rng.standard_normal((sims, k))
        means = draws.mean(1) + math.sqrt(diff.example_var) * rng.standard_normal(sims)
        seed_var = draws.var(1, ddof=1) * (1 / k + diff.overlap)
        if rejections(means, seed_var, diff.example_var, k, alpha).mean() >= power:
            return more
    return None


def decide(diff: Difference, p_adjusted: float, alpha: float, rope: float) -> str:
    """ "better" (no difference rejected at `alpha`, the interval on one side of 0), "equivalent" (the interval
    inside ±rope, in the scores' unit), or "not settled"."""
    if p_adjusted < alpha and (diff.lo > 0 or diff.hi < 0):
        return "better"
    if -rope <= diff.lo and diff.hi <= rope:
        return "equivalent"
    return "not settled"


@dataclass
class Verdict:
    kind: str  # "better", "equivalent", "not settled"
    text: str
    # not settled: more replicates each for 80% power (None: not within reach)
    more: int | None = None


def verdict(
    a: str, b: str, diff: Difference, p_adjusted: float, alpha: float, rope: float, scale: float, unit: str, more_alpha
) -> Verdict:
    """The pair's verdict in words. `scale`: the scores' unit to the words' (100: a share in points);
    `more_alpha`: the level the power simulation aims at (the strictest of the correction's steps)."""
    lo, hi, mean = diff.lo * scale, diff.hi * scale, diff.mean * scale
    kind = decide(diff, p_adjusted, alpha, rope / scale)
    if kind == "better":
        winner = b if mean > 0 else a
        return Verdict("better", f"{winner} better by {abs(mean):.2f} {unit} ({lo:+.2f} to {hi:+.2f}), settled")
    if kind == "equivalent":
        return Verdict("equivalent", f"practically equivalent (within ±{rope:g} {unit}: {lo:+.2f} to {hi:+.2f})")
    noun = "folds" if diff.overlap else "seeds"
    if diff.replicates < 2:
        return Verdict("not settled", f"not settled: one replicate each; a second would say how far {noun} vary")
    more = more_for_power(diff, more_alpha)
    if more is None:
        return Verdict("not settled", f"not settled: more than 100 more {noun} each would be needed at this size")
    return Verdict(
        "not settled",
        f"not settled: about {more} more {noun} each would settle a difference of this size with 80% power",
        more,
    )
