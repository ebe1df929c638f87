"""attnclf study's steps (attnclf/commands/study.py takes the command line): each dataset's protocol and
replicates, the runs already in the study's folder, the pairs judged at their looks, what to add next and
why, and the runs launched as Hydra multiruns of `attnclf train`."""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from attnclf.analysis import sequential
from attnclf.errors import AttnclfError
from attnclf.settings.run import DEFAULT_SEED
from attnclf.settings.study import PROTOCOL_KEYS, SETTINGS, StudyConfig
from attnclf.utils.children import stops_with_this_process


@dataclass
class Dataset:
    name: str
    path: str
    # a test split of its own: replicates are seeds; else folds of cross-validation
    own_test: bool
    keys: list[str]


def protocol_of(name: str, path: str) -> Dataset:
    from attnclf.commands.compare_datasets import BUILT_IN, has_test_split

    keys = PROTOCOL_KEYS.get(name, [])
    own = BUILT_IN[name] if name in BUILT_IN else bool(keys) or has_test_split(str(Path(path).expanduser()))
    return Dataset(name, str(Path(path).expanduser()), own, keys)


def replicate_of(run: dict, ds: Dataset, folds: int) -> int | None:
    """A run's replicate index (seeds 1, 2, ...; or fold f of seed DEFAULT_SEED + i: i * folds + f); None for a
    run outside the protocol."""
    seed, fold = run.get("seed"), run.get("fold")
    if ds.own_test:
        return seed - 1 if fold is None and isinstance(seed, int) and seed >= 1 else None
    if fold is None or not isinstance(seed, int) or seed < DEFAULT_SEED:
        return None
    return (seed - DEFAULT_SEED) * folds + fold


def seed_and_fold(r: int, ds: Dataset, folds: int) -> tuple[int, int | None]:
    return (r + 1, None) if ds.own_test else (DEFAULT_SEED + r // folds, r % folds)


def mechanism_name(choice: str) -> str:
    """What runs of `choice` (a package name, or module.Class) are called in their metrics."""
    from attnclf.settings.attention import name_of_class

    return choice if "." not in choice else name_of_class(choice)


def choice_keys(choice: str) -> list[str]:
    return [f"attention={choice}"] if "." not in choice else ["attention=custom", f"attention._target_={choice}"]


def existing(s: StudyConfig, ds: Dataset) -> tuple[dict, list[dict]]:
    """({mechanism: {replicate: run}}, every finished run) in the dataset's folder of the study."""
    from attnclf.commands.report import load_runs

    folder = Path(s.out) / ds.name
    runs = [m for m in load_runs(folder) if not math.isnan(m.get("test/acc", math.nan))] if folder.is_dir() else []
    by = {mechanism_name(c): {} for c in s.attention}
    for m in runs:
        r = replicate_of(m, ds, s.folds)
        if r is not None and m["attention"] in by:
            by[m["attention"]].setdefault(r, m)
    return by, runs


def judged(s: StudyConfig, by: dict) -> dict:
    """{(a, b): (replicates judged, PairVerdict)} of every pair at its last look reached, on its first
    replicates (runs of both on the same replicates), at the look's level."""
    from attnclf.analysis.verdicts import Settings, accuracy_evidence, judge_all

    counts = sequential.look_counts(s.first, s.looks)
    at = {}
    for a, b in itertools.combinations(list(by), 2):
        common = sorted(set(by[a]) & set(by[b]))
        look = sequential.judged_now(counts, len(common))
        if look:
            at[(a, b)] = [(by[a][r], by[b][r]) for r in common[:look]]
    settings = Settings(alpha=sequential.look_alpha(s.alpha, s.looks), rope=s.rope)
    verdicts = judge_all(at, accuracy_evidence, settings, 100, "points", s.rope, quick=True)
    return {(v.a, v.b): (len(at[(v.a, v.b)]), v) for v in verdicts}


def wanted(s: StudyConfig, by: dict) -> tuple[dict, list[str], bool]:
    """({mechanism: replicate count to reach}, why, whether it is the first step): `first` each to begin with;
    then the next look for both mechanisms of every pair not settled whose simulated count of more replicates
    is within the last look (the pairs judged only then)."""
    targets = {name: s.first for name, reps in by.items() if len(reps) < s.first}
    if targets:
        return targets, [f"the first step: {s.first} each"], True
    counts, why = sequential.look_counts(s.first, s.looks), []
    for (a, b), (k, v) in judged(s, by).items():
        nxt, more = sequential.next_look(counts, k), v.verdict.more
        # settled, past the last look, or out of reach within it: no more runs for this pair
        if v.verdict.kind != "not settled" or nxt is None or more is None or k + more > counts[-1]:
            continue
        for name in (a, b):
            targets[name] = max(targets.get(name, 0), nxt)
        why.append(f"{a} vs {b} at {k}: {v.verdict.text}")
    return targets, why, False


def to_add(s: StudyConfig, by: dict, targets: dict) -> dict[str, list[int]]:
    """{choice: the replicates it lacks up to its target}."""
    adds = {}
    for choice in s.attention:
        have = by[mechanism_name(choice)]
        missing = [r for r in range(targets.get(mechanism_name(choice), 0)) if r not in have]
        if missing:
            adds[choice] = missing
    return adds


def launch(s: StudyConfig, ds: Dataset, adds: dict[str, list[int]], step: int) -> None:
    """The runs `adds` asks for, as Hydra multiruns of attnclf train, each in OUT/<dataset>/step<k>_<i>: the
    package's mechanisms that lack the same replicates swept together, each class of the user's apart; seeds
    swept (a fold's replicates: one multirun a seed, its folds swept)."""
    for i, (which, seed, folds) in enumerate(multiruns(s, ds, adds)):
        cv = [f"data.folds={s.folds}", f"data.fold={','.join(map(str, folds))}"] if folds else []
        sweep = Path(s.out).resolve() / ds.name / f"step{step}_{i}"
        run = [*ds.keys, f"data.path={ds.path}", *cv, f"seed={seed}", *which, "callbacks.rich_progress_bar=null"]
        cmd = [sys.executable, "-m", "attnclf", "train", "-m", *run, *s.extra, f"hydra.sweep.dir={sweep}"]
        code = subprocess.run(cmd, **stops_with_this_process()).returncode
        if code != 0:
            raise AttnclfError(f"the runs of step {step} on {ds.name} failed (exit {code}): {' '.join(cmd)}")


def multiruns(s: StudyConfig, ds: Dataset, adds: dict[str, list[int]]) -> list[tuple[list[str], str, list[int]]]:
    """[(the attention keys, the seed sweep, the folds)] that make exactly the runs `adds` asks for."""
    groups: dict = {}
    for choice, reps in adds.items():
        kind = "package" if "." not in choice else choice
        by_seed: dict = {}
        for r in reps:
            seed, fold = seed_and_fold(r, ds, s.folds)
            by_seed.setdefault(seed, []).append(fold)
        parts = [(tuple(sorted(by_seed)), ())] if ds.own_test else [((k,), tuple(v)) for k, v in by_seed.items()]
        for seeds, folds in parts:
            groups.setdefault((kind, seeds, folds), []).append(choice)
    out = []
    for (kind, seeds, folds), choices in sorted(groups.items(), key=str):
        which = [f"attention={','.join(sorted(choices))}"] if kind == "package" else choice_keys(choices[0])
        out.append((which, ",".join(map(str, seeds)), list(folds)))
    return out


def seconds_a_run(runs: list[dict]) -> float:
    """A dataset's mean fit seconds a run so far (0: none yet, so it comes first)."""
    secs = [m.get("fit_seconds") for m in runs if isinstance(m.get("fit_seconds"), (int, float))]
    return sum(secs) / len(secs) if secs else 0.0


def keep_settings(s: StudyConfig) -> None:
    out = Path(s.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SETTINGS).write_text(json.dumps({**s.kept(), "budget": s.budget}, indent=2))


def first_checks(s: StudyConfig, datasets: list[Dataset]) -> None:
    """Each dataset's first run composed and its data read as train reads it, before any run starts."""
    from attnclf.commands.compare_datasets import first_run_refused

    for ds in datasets:
        keys = [*ds.keys, f"data.path={ds.path}", *choice_keys(s.attention[0]), *s.extra]
        if not ds.own_test:
            keys += [f"data.folds={s.folds}", "data.fold=0"]
        why = first_run_refused(keys)
        if why:
            raise AttnclfError(f"data: {ds.name} ({ds.path}): {why}")


def plan(s: StudyConfig, datasets: list[Dataset], seen: dict) -> tuple[list, int]:
    """[(dataset, its adds, why)] in the order to run them (every dataset's first step; then the dataset whose
    next look is the lowest, the cheapest of those first), and the runs the study holds now. `seen`: each
    dataset's judgement by its runs, so that only a dataset with new runs is judged again."""
    steps, total = [], 0
    for ds in datasets:
        by, runs = existing(s, ds)
        total += len(runs)
        key = (ds.name, frozenset(str(m["dir"]) for m in runs))
        if key not in seen:
            seen[key] = wanted(s, by)
        targets, why, first = seen[key]
        adds = to_add(s, by, targets)
        if adds:
            # the first step on every dataset first; then the lowest look to reach, the cheapest dataset first
            steps.append(((not first, max(targets.values()), seconds_a_run(runs)), ds, adds, why))
    steps.sort(key=lambda x: x[0])
    return [(ds, adds, why) for _, ds, adds, why in steps], total


def run_study(s: StudyConfig) -> int:
    keep_settings(s)
    datasets = [protocol_of(n, p) for n, p in s.data.items()]
    first_checks(s, datasets)
    noun = {True: "seeds", False: "folds"}
    # (a step's multiruns are OUT/<dataset>/step<k>_<i>)
    done = [int(m.group(1)) for p in Path(s.out).glob("*/step*") if (m := re.match(r"step(\d+)", p.name))]
    step, start = max(done, default=0) + 1, time.perf_counter()
    seen: dict = {}
    while True:
        steps, total = plan(s, datasets, seen)
        if not steps:
            print(f"study: every pair settled, equivalent, out of reach or past its last look ({total} runs)")
            break
        ds, adds, why = steps[0]
        runs = sum(len(r) for r in adds.values())
        if total + runs > s.budget:
            print(f"study: budget spent: {total} of {s.budget} runs; the next step ({ds.name}, {runs} runs) passes it")
            break
        said = ", ".join(f"{c} to {max(r) + 1}" for c, r in adds.items())
        print(f"step {step}: {ds.name}: {said} {noun[ds.own_test]} ({runs} runs); why: {'; '.join(why)}", flush=True)
        launch(s, ds, adds, step)
        step += 1
    print(f"study: {time.perf_counter() - start:.0f} s this call; the report:", flush=True)
    from attnclf.commands.report import command as report

    return report([str(Path(s.out).resolve())])
