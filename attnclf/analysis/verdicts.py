"""Every pair of mechanisms on one dataset, judged from the runs' kept evidence: their per-example test
predictions (predictions_test.parquet) and, where `attnclf faithfulness` ran, their per-review Kendall tau.
The statistics are attnclf/analysis/significance.py's; this module reads the runs, pairs the examples and
chooses what each pair can be judged on.

A run is a dict as `attnclf report` loads it (its folder `dir`, `test/acc`, `seed`, `fold`, `attention`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attnclf.analysis import significance as sig
from attnclf.utils.predictions import PREDICTIONS, read_predictions

# where `attnclf faithfulness` writes its result for the test split
FAITHFULNESS = Path("faithfulness_test") / "faithfulness.json"


@dataclass
class Settings:
    """How a verdict is reached: the level, the region of practical equivalence for accuracy (points) and for
    tau, and the level the power simulation aims at is alpha over the pairs (the strictest step of Holm's)."""

    alpha: float = sig.ALPHA
    rope: float = sig.ROPE
    rope_tau: float = 0.02
    seed: int = 0

    @property
    def level(self) -> float:
        """The intervals' confidence: 1 − alpha (95% for the report; a study's looks use a smaller alpha)."""
        return 1 - self.alpha


@dataclass
class Evidence:
    """One pair's per-example scores, replicate by replicate; `level` is "examples" (the predictions of both
    runs of every replicate cover the same examples) or "seeds" (each replicate one accuracy: some file is
    missing or covers other examples, `why` says which)."""

    a: list[np.ndarray]
    b: list[np.ndarray]
    shared: bool
    overlap: float
    level: str
    why: str = ""
    # some run kept no predictions file (older than the file): said once for the whole report, not per pair
    missing: bool = False


@dataclass
class PairVerdict:
    a: str
    b: str
    evidence: Evidence
    diff: sig.Difference
    p_adjusted: float = math.nan
    mcnemar: list[sig.McNemar] = field(default_factory=list)
    mcnemar_p: float = math.nan
    mcnemar_adjusted: float = math.nan
    eps: float = math.nan
    p_outperform: float = math.nan
    verdict: sig.Verdict | None = None


def fold_overlap(run_dir: Path) -> float:
    """Nadeau & Bengio's n_test / n_train of a cross-validated run (its data.json: k folds, the validation share
    carved from the rest); 0 where the run tested on a split of its own."""
    record = run_dir / "data.json"
    if not record.exists():
        return 0.0
    carved = json.loads(record.read_text()).get("carved") or {}
    folds = carved.get("folds")
    if not folds or carved.get("fold") is None:
        return 0.0
    return 1 / ((folds - 1) * (1 - (carved.get("val_size") or 0.0)))


def accuracy_evidence(pairs: list[tuple[dict, dict]]) -> Evidence:
    """The pair's evidence on accuracy: each replicate's right/wrong arrays where both runs kept predictions of
    the same examples; else each replicate's accuracy alone (the seed level), with why."""
    a, b, rows, why, missing = [], [], [], "", False
    for x, y in pairs:
        px, py = (Path(m["dir"]) / PREDICTIONS for m in (x, y))
        if not (px.exists() and py.exists()):
            missing = True
            break
        fx, fy = read_predictions(px), read_predictions(py)
        if not fx.same_examples(fy):
            why = f"{x['dir'].name} and {y['dir'].name} predicted other test examples (rows or labels differ)"
            break
        a.append(fx.correct.astype(np.float64))
        b.append(fy.correct.astype(np.float64))
        rows.append(fx.rows)
    overlap = fold_overlap(Path(pairs[0][0]["dir"])) if pairs else 0.0
    if why or missing or not pairs:
        seeds_a = [np.array([x["test/acc"]]) for x, _ in pairs]
        seeds_b = [np.array([y["test/acc"]]) for _, y in pairs]
        return Evidence(seeds_a, seeds_b, False, overlap, "seeds", why, missing)
    shared = not overlap and all(np.array_equal(rows[0], r) for r in rows)
    return Evidence(a, b, shared, overlap, "examples")


def tau_evidence(pairs: list[tuple[dict, dict]], against: str) -> Evidence | None:
    """The pair's evidence on Kendall tau against `against` (gradient or loo), review by review where every run
    measured the same reviews; None where a run has no faithfulness result."""
    a, b, tokens = [], [], []
    for x, y in pairs:
        files = [Path(m["dir"]) / FAITHFULNESS for m in (x, y)]
        if not all(f.exists() for f in files):
            return None
        rx, ry = (json.loads(f.read_text())["per_review"] for f in files)
        tx, ty = (np.array(r[f"kendall_tau_{against}"], dtype=np.float64) for r in (rx, ry))
        if rx["tokens"] != ry["tokens"]:
            return None
        # a review whose tau is undefined in either run (a constant map): left out of both
        both = np.isfinite(tx) & np.isfinite(ty)
        a.append(tx[both])
        b.append(ty[both])
        tokens.append(rx["tokens"])
    shared = all(t == tokens[0] for t in tokens) and all(len(x) == len(a[0]) for x in a)
    return Evidence(a, b, shared, 0.0, "examples") if pairs else None


def judge_all(
    pairs_of: dict, evidence_of, s: Settings, scale: float, unit: str, rope: float, quick: bool = False
) -> list[PairVerdict]:
    """Every pair judged: `pairs_of` {(a, b): [(run a, run b), ...]}, `evidence_of` the pairs' Evidence (or
    None: the pair left out). The p-values Holm-corrected over the pairs judged (the interval test's and the
    example-level test's, each its own family). `quick`: without ASO (a second a pair), which the verdict does
    not read (a study's steps)."""
    judged = []
    for (a, b), pairs in pairs_of.items():
        ev = evidence_of(pairs) if pairs else None
        if ev is None:
            continue
        diff = sig.difference(ev.a, ev.b, ev.shared, ev.overlap, s.level)
        v = PairVerdict(a, b, ev, diff)
        if ev.level == "examples" and unit == "points":
            v.mcnemar = sig.mcnemar_tables(ev.a, ev.b)
            v.mcnemar_p = sig.combined_mcnemar(v.mcnemar)
        scores_a = [float(np.mean(x)) for x in ev.a]
        scores_b = [float(np.mean(y)) for y in ev.b]
        if not quick:
            v.eps = sig.aso_epsilon(scores_a, scores_b, comparisons=len(pairs_of), seed=s.seed)
        v.p_outperform = sig.prob_outperform(scores_a, scores_b)
        judged.append(v)
    adjusted = sig.holm({(v.a, v.b): v.diff.p for v in judged})
    mcnemar = sig.holm({(v.a, v.b): v.mcnemar_p for v in judged})
    strictest = s.alpha / max(len(judged), 1)
    for v in judged:
        v.p_adjusted, v.mcnemar_adjusted = adjusted[(v.a, v.b)], mcnemar[(v.a, v.b)]
        v.verdict = sig.verdict(v.a, v.b, v.diff, v.p_adjusted, s.alpha, rope, scale, unit, strictest)
    return judged
