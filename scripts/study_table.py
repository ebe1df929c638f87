"""docs/results.md's verdict table of a study ("Which attention, how sure"), from an `attnclf study` folder: every
pair on every dataset at the study's level, with what the seed-level-only report (each replicate one
accuracy, a paired t-test Holm-corrected over the pairs) would have needed to say the same, and the study's
cost in runs and hours.

    python scripts/study_table.py outputs/study

The seed-level need: the replicates each at which that test reaches 80% power for the difference seen, by
the same simulation (attnclf/analysis/significance.py: more_for_power) with only the seeds' accuracies, at
0.05 over the pairs (Holm's strictest step); "never" for an equivalence (that report had no such verdict).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from attnclf.analysis import sequential
from attnclf.analysis import significance as sig
from attnclf.settings.study import StudyConfig


def seed_level_need(v, pairs: int) -> str:
    """The replicates each the seed-level paired t-test would need to call this pair's difference, as text."""
    if v.verdict.kind == "equivalent":
        return "never (no equivalence verdict)"
    per = [np.array([float(np.mean(y) - np.mean(x))]) for x, y in zip(v.evidence.a, v.evidence.b, strict=True)]
    d = sig.difference([np.zeros(1)] * len(per), per, shared=False, overlap=v.diff.overlap)
    if d.replicates > 1 and d.p * pairs < 0.05:
        return f"{d.replicates} (as many)"
    more = sig.more_for_power(d, 0.05 / pairs)
    return "more than 100 more" if more is None else str(d.replicates + more)


def main(folder: Path) -> None:
    from attnclf.commands.study_runs import existing, judged, protocol_of

    s = StudyConfig(**{k: v for k, v in json.loads((folder / "study.json").read_text()).items()})
    print(f"Level of each look: {sequential.look_alpha(s.alpha, s.looks):.3g}; rope ±{s.rope:g} points\n")
    print("| dataset | A | B | replicates | B − A (points, interval) | verdict | seed-level report would need |")
    print("|---|---|---|---|---|---|---|")
    runs_all, seconds = 0, 0.0
    for name, path in s.data.items():
        by, runs = existing(s, protocol_of(name, path))
        runs_all += len(runs)
        seconds += sum(m.get("fit_seconds") or 0.0 for m in runs)
        for (a, b), (k, v) in judged(s, by).items():
            d = v.diff
            cells = [name, a, b, str(k), f"{d.mean * 100:+.2f} ({d.lo * 100:+.2f} to {d.hi * 100:+.2f})"]
            cells += [v.verdict.text, seed_level_need(v, len(by) * (len(by) - 1) // 2)]
            print("| " + " | ".join(cells) + " |")
    print(f"\n{runs_all} runs, {seconds / 3600:.1f} hours of fits (one thread a run)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
