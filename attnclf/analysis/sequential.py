"""The study's stopping rule: when a pair of mechanisms is looked at, and at what level, so that looking again
and again does not inflate the false-positive rate (pure functions; `attnclf study` runs it).

A pair is judged only at fixed numbers of replicates (seeds or folds), the looks: `first`, then each about 1.5
times the last, `looks` of them in all (3, 5, 8, 12, 18 for first=3, looks=5). At each look every pair is
judged at alpha / looks (Bonferroni over the looks), Holm-corrected over the pairs of its dataset, and its
interval is the 1 − alpha / looks interval: "better" where no difference is rejected, "practically
equivalent" where that interval lies inside ±ROPE. A pair stops at the first look that settles it, or after
the last look. So for any one pair the chance of a false "better" over all its looks is at most alpha (a
union bound over the looks, each at alpha / looks), whatever the rule's choice of when to look; Holm keeps it so
over the pairs of a look. tests/test_study.py simulates pairs with no difference through this rule and
counts how often it calls one better.
"""

from __future__ import annotations

import math


def look_counts(first: int, looks: int, growth: float = 1.5) -> list[int]:
    """The replicate counts at which a pair is judged: `first`, then each at least one more and about `growth`
    times the last."""
    counts = [first]
    while len(counts) < looks:
        counts.append(max(counts[-1] + 1, math.ceil(counts[-1] * growth)))
    return counts


def look_alpha(alpha: float, looks: int) -> float:
    """The level of each look (Bonferroni over the looks)."""
    return alpha / looks


def next_look(counts: list[int], replicates: int) -> int | None:
    """The replicate count of the next look after `replicates` (None: the last look is past)."""
    return next((c for c in counts if c > replicates), None)


def judged_now(counts: list[int], replicates: int) -> int | None:
    """The look a pair of `replicates` replicates is judged at: the last look it has reached (None: before
    the first)."""
    reached = [c for c in counts if c <= replicates]
    return reached[-1] if reached else None
