"""Summarise a multirun or sweep folder: ranking, and the attentions compared, every pair of them.

    attnclf report outputs/multirun/<date_time> [--objective val/acc] [--target 0.85]

Reads every run's metrics.json (and its TensorBoard scalars) under the folder,
prints the runs ranked by the objective and the best overrides, and writes
report.md and PNG plots into the folder:
- per attention: test accuracy mean +- sd and a 95% bootstrap interval over runs;
  for every pair of attentions present, the paired difference between runs that
  differ only in the attention (same seed, fold and every other setting) with a
  paired t-test and an exact sign-flip permutation test, each p-value corrected
  for the number of pairs (Holm);
- seconds per epoch, useful training tokens/s, evaluation reviews/s, and time
  to reach the target validation accuracy, each mean +- sd;
- validation accuracy against step and against wall-clock (val_acc.png);
- attention sharpness: entropy of the weights and the share on the top-5 tokens;
- by setting (every setting but the seed, as in the claim_* experiments): best
  validation accuracy, and the optimizer steps and seconds to the target, mean +- sd.

A run's setting is its composed config (Hydra's .hydra/config.yaml), so runs
that reach the same config through different overrides (a value an experiment
sets, or the same value given on the command line) are one setting; where a
run has no config.yaml, its overrides.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path

from attnclf.commands.keyvalue import Keys, as_flags, usage
from attnclf.errors import AttnclfError
from attnclf.settings.attention import attention_node, attention_order
from attnclf.utils.predictions import PREDICTIONS

# config keys that do not make a run a different setting: replicates (seeds, cross-validation folds), and
# where a run is logged and shown, which does not change what it learns (a group's keys: the prefix)
NOT_SETTINGS = ("seed", "ckpt_path", "data.fold", "logger", "paths", "callbacks.rich_progress_bar")


def is_setting(word: str) -> bool:
    """A `key=value` word that makes a run a different setting."""
    key = word.split("=", 1)[0]
    return not any(key == k or key.startswith(k + ".") for k in NOT_SETTINGS)


# config keys that say which data a run learned from: runs of different data are reported apart
DATA_KEYS = ("data.path", "data.name", "data.train_file")


def flatten(config: dict, prefix: str = "") -> list[str]:
    """["model.hidden_dim=128", ...]: a nested config as key=value words, in YAML's spelling."""
    words = []
    for key, value in config.items():
        if isinstance(value, dict):
            words += flatten(value, f"{prefix}{key}.")
        else:
            words.append(f"{prefix}{key}={json.dumps(value) if not isinstance(value, str) else value}")
    return words


def load_runs(root: Path) -> list[dict]:
    # PyYAML: OmegaConf's own dependency
    import yaml

    runs = []
    for path in sorted(root.rglob("metrics.json")):
        try:
            read = json.loads(path.read_text())
        # a torn or hand-edited file: that run left out
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            print(f"warning: {path} is not JSON ({getattr(e, 'msg', e)}); that run is left out", file=sys.stderr)
            continue
        # (a value not measured, such as test/acc with test=false, is null in the file: nan here)
        m = {k: math.nan if v is None else v for k, v in read.items()}
        overrides = path.parent / ".hydra" / "overrides.yaml"
        config = path.parent / ".hydra" / "config.yaml"
        m["dir"] = path.parent
        m["overrides"] = [ln[2:].strip() for ln in overrides.read_text().splitlines()] if overrides.exists() else []
        if config.exists():
            words = attention_words(flatten(yaml.safe_load(config.read_text()) or {}), m.get("attention"))
            # (a key set to null is no setting: runs from before the key existed read the same)
            m["setting"] = sorted(w for w in words if is_setting(w) and not w.endswith("=null"))
        else:
            m["setting"] = [o for o in m["overrides"] if is_setting(o)]
        # the run's data, as train.py recorded it
        record = path.parent / "data.json"
        if record.exists():
            r = json.loads(record.read_text())
            m["fold"] = r["data"]["fold"]
            data = [r["data"][key.split(".", 1)[1]] for key in DATA_KEYS]
        # a run from before data.json: its config's words
        else:
            words = flatten(yaml.safe_load(config.read_text()) or {}) if config.exists() else m["overrides"]
            fold = next((w.split("=", 1)[1] for w in words if w.startswith("data.fold=")), "null")
            m["fold"] = None if fold in ("null", "None") else int(fold)
            data = [w.split("=", 1)[1] for w in m["setting"] if w.split("=", 1)[0] in DATA_KEYS]
        m["data"] = " ".join(str(d) for d in data if d not in (None, "null", "None")) or "(the default data)"
        # the same files with classes mapped otherwise (binary SST from SST-5's files) are other data
        if record.exists() and r["data"].get("label_map"):
            m["data"] += " label_map=" + json.dumps(r["data"]["label_map"], sort_keys=True)
        runs.append(m)
    return runs


def attention_words(words: list[str], name: str | None) -> list[str]:
    """A run's config words with its attention said as the command line says it: attention=<name> for its
    class (attention._target_), and only the keys of its own that differ from its YAML's (conf/attention/)."""
    if not name or not any(w.startswith("attention._target_=") for w in words):
        return words
    try:
        defaults = flatten({"attention": attention_node(name)})
    # a class of one's own: every key of its run is said
    except AttnclfError:
        defaults = []
    return [
        f"attention={name}" if w.startswith("attention._target_=") else w
        for w in words
        if w.startswith("attention._target_=") or w not in defaults
    ]


# the compare table, the by-setting table and the plot all read the same curves
@functools.cache
def curve(run_dir: Path, tag: str = "val/acc") -> list[tuple[int, float, float]]:
    """(step, seconds since the run's first event, value) of a scalar, from TensorBoard's event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = run_dir / "tensorboard"
    if not tb.exists():
        return []
    ea = EventAccumulator(str(tb), size_guidance={"scalars": 0})
    ea.Reload()
    if tag not in ea.Tags()["scalars"]:
        return []
    # (the log's opening, at the fit's start: not the first scalar, which may
    start = ea.FirstEventTimestamp()
    # be this very validation where a run validates once)
    return [(e.step, e.wall_time - start, e.value) for e in ea.Scalars(tag)]


def mean_sd(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return "-"
    sd = st.stdev(xs) if len(xs) > 1 else 0.0
    scale = 100 if all(0 <= x <= 1 for x in xs) else 1
    fmt = ".2f" if scale == 100 else (",.0f" if st.mean(xs) >= 100 else ".2f")
    return f"{st.mean(xs) * scale:{fmt}} ± {sd * scale:{fmt}}"


def bootstrap_ci(xs: list[float], reps: int = 10000, seed: int = 0) -> tuple[float, float]:
    import numpy as np

    rng = np.random.default_rng(seed)
    means = rng.choice(np.asarray(xs), size=(reps, len(xs)), replace=True).mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def sign_flip_p(diffs: list[float]) -> float:
    """Exact two-sided permutation test of mean(diffs) = 0 (paired, by flipping signs)."""
    observed = abs(sum(diffs))
    flips = list(itertools.product((1, -1), repeat=len(diffs)))
    return sum(abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-12 for signs in flips) / len(
        flips
    )


def paired_t_p(diffs: list[float]) -> float:
    """Two-sided paired t-test of mean(diffs) = 0; nan with fewer than 2 pairs or no spread."""
    from scipy import stats

    if len(diffs) < 2 or st.pstdev(diffs) == 0:
        return math.nan
    return float(stats.ttest_1samp(diffs, 0.0).pvalue)


def to_target(run: dict, target: float) -> tuple[int | None, float | None]:
    """(optimizer steps, seconds) at the first validation that reached the target accuracy."""
    for step, seconds, value in curve(run["dir"]):
        if value >= target:
            return step, seconds
    return None, None


def setting_of(run: dict, common: set[str]) -> str:
    """A run's setting (without the seed) less what every run shares: what sets it apart."""
    return " ".join(w for w in run["setting"] if w not in common) or "(defaults)"


def replicates(ms: list[dict]) -> str:
    """The seeds of a setting's runs, and how many cross-validation folds where they have folds."""
    seeds = ", ".join(str(s) for s in sorted({m["seed"] for m in ms}))
    folds = {m.get("fold") for m in ms} - {None}
    return (
        f"{seeds} ({len(folds)} folds)"
        if folds
        else ", ".join(str(m["seed"]) for m in sorted(ms, key=lambda m: m["seed"]))
    )


def by_setting(runs: list[dict], target: float) -> list[str]:
    """One row per setting (everything but the seed): the claims' table."""
    common = set.intersection(*(set(m["setting"]) for m in runs))
    groups = defaultdict(list)
    for m in runs:
        groups[setting_of(m, common)].append(m)
    lines = [
        f"| setting | seeds | best val/acc % (mean ± sd) | test/acc % | steps to val/acc ≥ {target} | "
        f"s to val/acc ≥ {target} | train tokens/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting, ms in sorted(groups.items()):
        reach = [to_target(m, target) for m in ms]
        steps = [s for s, _ in reach if s is not None]
        secs = [t for _, t in reach if t is not None]
        cells = [
            setting,
            replicates(ms),
            mean_sd([m["val/acc"] for m in ms]),
            mean_sd([m.get("test/acc") for m in ms]),
            f"{mean_sd(steps)} ({len(steps)}/{len(ms)} reached)",
            mean_sd(secs),
            mean_sd([m.get("train_tokens_per_sec") for m in ms]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# what --objective can rank by, and which way is better
OBJECTIVES = {"val/acc": "max", "test/acc": "max", "test/loss": "min", "train_tokens_per_sec": "max"}


def ranked(runs: list[dict], objective: str) -> list[dict]:
    """Best first; runs without the value (nan: e.g. test=false) last."""
    sign = -1 if OBJECTIVES[objective] == "max" else 1

    def key(m: dict) -> tuple[bool, float]:
        v = m.get(objective, math.nan)
        return (v is None or math.isnan(v), sign * (v if v is not None and not math.isnan(v) else 0.0))

    return sorted(runs, key=key)


def rank(runs: list[dict], objective: str) -> list[str]:
    ranked_runs = ranked(runs, objective)
    lines = [f"| rank | {objective} | test/acc | attention | seed | overrides |", "|---|---|---|---|---|---|"]
    for i, m in enumerate(ranked_runs, 1):
        lines.append(
            f"| {i} | {m[objective]:.4f} | {m['test/acc']:.4f} | {m['attention']} | {m['seed']} | "
            f"{' '.join(m['overrides'])} |"
        )
    return lines


def compare(runs: list[dict], target: float) -> list[str]:
    by_att = defaultdict(list)
    for m in runs:
        by_att[m["attention"]].append(m)
    lines = [
        "| attention | runs | test/acc % (mean ± sd) | 95% interval | best val/acc % | s / epoch | "
        f"train tokens/s | eval reviews/s | s to val/acc ≥ {target} | attention entropy | top-5 share |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for att, ms in ((a, by_att[a]) for a in attention_order(by_att)):
        # nan: run with test=false
        accs = [m["test/acc"] for m in ms if not math.isnan(m["test/acc"])]
        lo, hi = bootstrap_ci(accs) if len(accs) > 1 else ((accs[0], accs[0]) if accs else (math.nan, math.nan))
        reach = [to_target(m, target)[1] for m in ms]
        reached = [x for x in reach if x is not None]

        def col(key: str, ms: list[dict] = ms) -> str:
            return mean_sd([m.get(key) for m in ms])

        per_epoch = mean_sd([m["fit_seconds"] / max(m["epochs"], 1) for m in ms])
        cells = [
            att,
            str(len(ms)),
            mean_sd(accs),
            f"{lo * 100:.2f} – {hi * 100:.2f}" if accs else "-",
            col("val/acc"),
            per_epoch,
            col("train_tokens_per_sec"),
            col("eval_reviews_per_sec"),
            f"{mean_sd(reached)} ({len(reached)}/{len(ms)} reached)",
            col("test/attn_entropy"),
            col("test/attn_top5"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    names = attention_order(by_att)
    pairs_of = {(a, b): paired_by_setting(runs, a, b) for a, b in itertools.combinations(names, 2)}
    if len(names) == 2:
        lines += pair_sentences(*names, pairs_of[tuple(names)])
    if len(names) > 2:
        lines += ["", *pairs_table(pairs_of)]
    return lines


def pair_sentences(a: str, b: str, pairs: list[tuple[dict, dict]]) -> list[str]:
    """Two attentions: their paired difference b − a in words, by each test."""
    if not pairs:
        return ["", f"No {a} and {b} runs differ only in the attention: nothing to pair."]
    diffs = [y["test/acc"] - x["test/acc"] for x, y in pairs]
    mean = st.mean(diffs) * 100
    who = b if mean > 0 else a
    settings = len({setting_key(x)[0] for x, _ in pairs})
    lines = []
    for test, p in (("paired t-test", paired_t_p(diffs)), ("exact sign-flip test", sign_flip_p(diffs))):
        verdict = (
            f"{who} is {abs(mean):.2f} pt more accurate, p = {p:.3g}"
            if p < 0.05
            else f"no significant difference (mean difference {b} − {a} {mean:+.2f} pt, p = {p:.3g})"
        )
        lines += [
            "",
            f"Paired runs that differ only in the attention ({len(pairs)} pairs over {settings} "
            f"setting(s), {test}): {verdict}.",
        ]
    if len(pairs) < 6:
        lines.append(
            f"(With {len(pairs)} pairs the sign-flip test's smallest possible p is {2 / 2 ** len(pairs):.3g}; "
            "the t-test assumes the differences are roughly normal.)"
        )
    return lines


def pairs_table(pairs_of: dict) -> list[str]:
    """Every pair of attentions: the paired difference B − A, each test's p and its Holm correction over the
    pairs compared (a family per test)."""
    from attnclf.analysis.significance import holm

    diffs = {k: [y["test/acc"] - x["test/acc"] for x, y in v] for k, v in pairs_of.items()}
    t_raw = {k: paired_t_p(d) for k, d in diffs.items() if d}
    flip_raw = {k: sign_flip_p(d) for k, d in diffs.items() if d}
    t_p = {k: (t_raw[k], v) for k, v in holm(t_raw).items()}
    flip_p = {k: (flip_raw[k], v) for k, v in holm(flip_raw).items()}
    lines = [
        f"Every pair of attentions: runs that differ only in the attention, paired (same seed, fold and setting); "
        f"p-values Holm-corrected over the {len(t_p)} pairs compared.",
        "",
        "| A | B | pairs | B − A (pt, mean ± sd) | paired t p | Holm | sign-flip p | Holm | verdict (Holm, t-test) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (a, b), d in diffs.items():
        if not d:
            lines.append(f"| {a} | {b} | 0 | - | - | - | - | - | nothing to pair |")
            continue
        (tp, t_holm), (fp, f_holm) = t_p[(a, b)], flip_p[(a, b)]
        mean = st.mean(d) * 100
        spread = f" ± {st.stdev(d) * 100:.2f}" if len(d) > 1 else ""
        verdict = f"{b if mean > 0 else a} more accurate" if t_holm < 0.05 else "no significant difference"
        lines.append(
            f"| {a} | {b} | {len(d)} | {mean:+.2f}{spread} | {tp:.3g} | {t_holm:.3g} | {fp:.3g} | {f_holm:.3g} | "
            f"{verdict} |"
        )
    return lines


def setting_key(run: dict) -> tuple[tuple, object]:
    """(everything but the attention, the seed and the fold; (the seed, the fold)): runs equal in both differ
    only in the attention (with k-fold cross-validation, two attentions are paired fold by fold). The attention
    is its name and its own keys (attention._target_, attention.<key>; attention=<name> in runs of before)."""
    setting = tuple(sorted(w for w in run["setting"] if not w.startswith(("attention=", "attention."))))
    return setting, (run["seed"], run.get("fold"))


def paired_by_setting(runs: list[dict], a: str, b: str) -> list[tuple[dict, dict]]:
    """(`a` run, `b` run) pairs that differ only in the attention, both with a test accuracy."""
    by_key: dict = defaultdict(dict)
    for m in runs:
        if m["attention"] in (a, b) and not math.isnan(m.get("test/acc", math.nan)):
            setting, seed = setting_key(m)
            by_key[(setting, seed)][m["attention"]] = m
    return [(v[a], v[b]) for _, v in sorted(by_key.items(), key=str) if len(v) == 2]


def plot(runs: list[dict], out: Path) -> None:
    from attnclf.presentation.figures import pyplot, validation_curves

    fig = validation_curves(runs, {str(m["dir"]): curve(m["dir"]) for m in runs})
    fig.savefig(out, dpi=110)
    pyplot().close(fig)


def show_markdown(text: str) -> None:
    """Markdown on the terminal (rich: tables drawn as tables)."""
    from rich.console import Console
    from rich.markdown import Markdown

    Console(width=160).print(Markdown(text))


def dataset_section(data: str, group: list[dict], i: int, several: bool, args) -> list[str]:
    """One dataset's part of report.md (its ranking and table printed too, its figure written)."""
    figure = f"val_acc_{i + 1}.png" if several else "val_acc.png"
    h = "###" if several else "##"
    head = []
    if several:
        head = [f"## Data: {data} ({len(group)} runs)", ""]
        print(f"\n{data}:")
    ranking = rank(group, args.objective)
    best = ranked(group, args.objective)[0]
    print("\n".join(ranking))
    print(f"\nbest: {args.objective} {best[args.objective]:.4f}  {' '.join(best['overrides']) or '(defaults)'}")
    plot(group, args.folder / figure)
    versus = compare(group, args.target)
    sure = how_sure(group, args.rope, *study_alpha(args.folder))
    # the tables report.md holds, on the terminal too
    show_markdown("\n".join([*versus, "", *sure]))
    return [
        *head,
        f"{h} The attentions compared",
        "",
        *versus,
        "",
        f"{h} How sure: every pair",
        "",
        *sure,
        "",
        f"![validation accuracy]({figure})",
        "",
        f"{h} By setting (everything but the seed; mean ± sd over seeds)",
        "",
        *by_setting(group, args.target),
        "",
        f"{h} Runs ranked by {args.objective}",
        "",
        *ranking,
        "",
    ]


def study_alpha(folder: Path) -> tuple[float, str]:
    """The level each pair is judged at: 0.05, or in a study's folder (its study.json) the level of its looks
    (alpha / looks: attnclf/analysis/sequential.py), and a sentence saying so."""
    kept = folder / "study.json"
    if not kept.exists():
        return 0.05, ""
    from attnclf.analysis.sequential import look_alpha

    s = json.loads(kept.read_text())
    alpha, looks = s.get("alpha", 0.05), s.get("looks", 1)
    level = look_alpha(alpha, looks)
    return level, f"A study's folder: each pair judged at {alpha:g} / {looks} looks = {level:.3g}."


def how_sure(group: list[dict], rope: float, alpha: float = 0.05, note: str = "") -> list[str]:
    """Every pair of attentions judged from the paired runs' test predictions (and per-review tau where
    `attnclf faithfulness` ran on both): attnclf/analysis/verdicts.py; the lines of report.md."""
    from attnclf.analysis.verdicts import Settings, accuracy_evidence, judge_all, tau_evidence
    from attnclf.presentation.markdown import verdict_lines

    names = attention_order({m["attention"] for m in group})
    pairs_of = {(a, b): paired_by_setting(group, a, b) for a, b in itertools.combinations(names, 2)}
    if not any(pairs_of.values()):
        return ["No two attentions have runs that differ only in the attention: nothing to judge."]
    s = Settings(alpha=alpha, rope=rope)
    judged = judge_all(pairs_of, accuracy_evidence, s, 100, "points", s.rope)
    lines = [
        f"Test accuracy, B − A, paired by seed or fold; p: the interval's test (seeds and the test sample), "
        f"Holm-corrected over the {len(judged)} pair(s); practically equivalent: the interval within ±{s.rope:g} "
        f'points (docs/usage.md, "How sure is a comparison"). {note}'.rstrip(),
        "",
    ]
    older = sum(not (Path(m["dir"]) / PREDICTIONS).exists() for m in group)
    if older:
        lines += [
            f"{older} of {len(group)} runs kept no test predictions (trained before runs kept them): each pair "
            "with one of them is judged on the seeds' accuracies alone.",
            "",
        ]
    lines += verdict_lines(judged, 100, "points", "accuracy", s.level)
    for against, said in (("gradient", "|gradient x input|"), ("loo", "leave-one-out")):
        taus = judge_all(pairs_of, lambda p, a=against: tau_evidence(p, a), s, 1, "tau", s.rope_tau)
        if taus:
            lines += ["", f"Kendall tau of the attention against {said}, B − A, review by review:", ""]
            lines += verdict_lines(taus, 1, "tau", f"which maps agree more with {said}", s.level)
    return lines


def dataset_label(group: list[dict], root: Path) -> str:
    """A dataset's short name: the folder its runs share right under the report's (compare-datasets' and
    study's layout: OUT/<name>/...), else its data's file or folder name."""
    firsts = {Path(m["dir"]).resolve().relative_to(root.resolve()).parts[0] for m in group}
    if len(firsts) == 1 and len(Path(group[0]["dir"]).resolve().relative_to(root.resolve()).parts) > 1:
        return firsts.pop()
    return Path(group[0]["data"].split(" label_map=")[0]).name or group[0]["data"]


def across_datasets(groups: dict, folder: Path, rope: float) -> list[str]:
    """The attentions that ran on every dataset ranked over the datasets (each one's mean test accuracy there):
    Friedman's test, the critical-difference diagram (critical_difference.png), and every pair's Bayesian
    signed-rank test with the ROPE (bayes_across_datasets.png); the lines of report.md."""
    import numpy as np

    from attnclf.analysis.across_datasets import bayes_pairs, rank
    from attnclf.presentation.diagrams import bayes_pairs_figure, critical_difference_figure
    from attnclf.presentation.figures import pyplot
    from attnclf.presentation.markdown import across_lines

    ordered = sorted(groups.items())
    names = [a for a in attention_order({m["attention"] for _, g in ordered for m in g})
             if all(any(m["attention"] == a for m in g) for _, g in ordered)]  # fmt: skip
    head = ["## Across datasets", ""]
    if len(names) < 2:
        return [*head, "Fewer than two attentions ran on every dataset: nothing to rank across them."]
    labels = [dataset_label(g, folder) for _, g in ordered]
    scores = np.array(
        [[np.nanmean([m["test/acc"] for m in g if m["attention"] == a]) for a in names] for _, g in ordered]
    )
    ranking = rank(scores, names, labels)
    pairs = bayes_pairs(scores, names, rope / 100)
    for fig, name in ((critical_difference_figure(ranking), "critical_difference.png"),
                      (bayes_pairs_figure(pairs, rope), "bayes_across_datasets.png")):  # fmt: skip
        fig.savefig(folder / name, dpi=110)
        pyplot().close(fig)
    return [*head, *across_lines(ranking, pairs, rope)]


def differences(groups: dict, path: Path) -> str:
    """The paired differences of every dataset in one figure: each attention's against the first (the
    default); its caption."""
    from attnclf.presentation.figures import differences_figure, pyplot

    rows, pairs = [], set()
    for data, group in sorted(groups.items()):
        names = attention_order({m["attention"] for m in group})
        for b in names[1:]:
            diffs = [y["test/acc"] - x["test/acc"] for x, y in paired_by_setting(group, names[0], b)]
            label = Path(data).name or data
            rows.append((label if len(names) == 2 else f"{label}: {b} − {names[0]}", diffs))
            pairs.add((names[0], b))
    fig = differences_figure([(label, diffs) for label, diffs in rows if diffs])
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return ", ".join(f"{b} − {a}" for a, b in sorted(pairs))


KEYS = Keys(
    "report",
    positional=(("path", "folder"),),
    flags={"objective": "--objective", "target": "--target", "rope": "--rope"},
)


def command(argv: list[str] | None = None) -> int:
    argv = as_flags(list(sys.argv[1:] if argv is None else argv), KEYS)
    p = argparse.ArgumentParser(
        prog="attnclf report",
        usage=usage(KEYS, "path=<folder> [objective=val/acc] [target=0.85] [rope=0.2]"),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("folder", type=Path)
    p.add_argument("--objective", default="val/acc", help=f"one of {', '.join(OBJECTIVES)}")
    p.add_argument("--target", type=float, default=0.85, help="validation accuracy for 'time to reach'")
    p.add_argument("--rope", type=float, default=0.2, help="points of accuracy within which two are equivalent")
    args = p.parse_args(argv)
    if not (math.isfinite(args.rope) and args.rope >= 0):
        print(f"error: rope={args.rope}; allowed: points of accuracy, 0 or more (e.g. 0.2)", file=sys.stderr)
        return 2
    if args.objective not in OBJECTIVES:
        print(f"error: --objective={args.objective!r}; allowed: {', '.join(OBJECTIVES)}", file=sys.stderr)
        return 2
    runs = load_runs(args.folder)
    if not runs:
        print(f"error: no metrics.json under {args.folder}", file=sys.stderr)
        return 2
    # runs of different data are never pooled or paired
    groups = defaultdict(list)
    for m in runs:
        groups[m["data"]].append(m)
    if len(groups) > 1:
        print(f"{len(runs)} runs of {len(groups)} datasets: reported one dataset at a time ({', '.join(groups)})")
    report = [
        f"# Report: {args.folder}",
        "",
        f"{len(runs)} runs" + (f" of {len(groups)} datasets." if len(groups) > 1 else "."),
        "",
    ]
    for i, (data, group) in enumerate(sorted(groups.items())):
        report += dataset_section(data, group, i, len(groups) > 1, args)
    # the per-dataset differences in one figure, and the mechanisms ranked over the datasets
    if len(groups) > 1:
        caption = differences(groups, args.folder / "differences.png")
        across = across_datasets(groups, args.folder, args.rope)
        show_markdown("\n".join(across))
        report[4:4] = [f"![{caption} per dataset](differences.png)", "", *across, ""]
    (args.folder / "report.md").write_text("\n".join(report))
    print(f"written {args.folder / 'report.md'} and its figures (val_acc*.png)")
    return 0
