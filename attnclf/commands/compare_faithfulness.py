"""Put attnclf faithfulness's results for several checkpoints side by side: one Markdown table and one figure.

    attnclf compare-faithfulness RESULT [RESULT ...] [--out faithfulness.png]
    attnclf compare-faithfulness RESULT [RESULT ...] --by-attention [--aopc-out aopc.png]

RESULT: a faithfulness.json, or the folder that holds it (<run>/faithfulness_test). --by-attention: one
column per attention, each figure's mean ± sd over its runs (seeds), and ERASER's scores and (with human
rationales) plausibility for every importance source; --aopc-out: their AOPC, per attention, as a figure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from attnclf.commands.keyvalue import Keys, as_flags, usage
from attnclf.errors import AttnclfError
from attnclf.utils.jsonfile import not_measured


def load(path: str) -> dict:
    p = Path(path)
    # a run folder: its own results, where one set
    if p.is_dir() and not (p / "faithfulness.json").is_file():
        found = sorted(p.glob("faithfulness_*/faithfulness.json"))
        p = found[0].parent if len(found) == 1 else p
        if len(found) > 1:
            names = ", ".join(str(f.parent) for f in found)
            raise AttnclfError(f"{path} holds several faithfulness results; give one of: {names}")
    p = p / "faithfulness.json" if p.is_dir() else p
    if not p.is_file():
        raise AttnclfError(f"no faithfulness.json at {path} (run attnclf faithfulness first)")
    try:
        saved = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise AttnclfError(f"{p} is not JSON ({e.msg}, line {e.lineno}): run attnclf faithfulness again") from None
    if not isinstance(saved, dict) or "attention" not in saved or "checkpoint" not in saved:
        raise AttnclfError(f"{p} is not what attnclf faithfulness writes (no attention or checkpoint in it)")
    # a value not measured is null in the file
    r = not_measured(saved)
    r["_label"] = f"{r['attention']} ({Path(r['checkpoint']).parent.parent.name})"
    return r


def table(results: list[dict]) -> str:
    rows = [
        ("accuracy on the sample", lambda r: f"{r['accuracy']:.2%}"),
        ("tau vs gradient x input (mean ± sd)", lambda r: _tau(r, "gradient")),
        ("tau vs leave-one-out (mean ± sd)", lambda r: _tau(r, "loo")),
        ("tau gradient vs leave-one-out (yardstick)", lambda r: _tau_ref(r)),
        ("top-1 token = gradient's / LOO's", lambda r: "{:.1%} / {:.1%}".format(*_top1(r))),
    ]
    for k in results[0]["ks"]:
        for name in ("attention", "gradient", "loo", "random"):
            rows.append((f"flipped, top-{k[1:]} by {name} removed", _flip(name, k)))
    rows += [
        ("top-attention tokens removed to flip (median, share of review)", lambda r: _to_flip(r, "attention")),
        ("random tokens removed to flip (median, share of review)", lambda r: _to_flip(r, "random")),
        ("never flips (attention order)", lambda r: f"{r['tokens_to_flip']['attention']['never']:.1%}"),
        ("permuted weights: median output change (TV)", lambda r: f"{r['permutation']['median_tv']:.4f}"),
        ("permuted weights: reviews moving < 0.05", lambda r: f"{r['permutation']['share_tv_below_0.05']:.1%}"),
        ("Spearman(entropy, change)", lambda r: f"{r['permutation']['spearman_entropy_tv']:.3f}"),
        ("uniform weights: accuracy change", lambda r: f"{r['uniform']['accuracy_change']:+.2%}"),
        ("uniform weights: decisions changed", lambda r: f"{r['uniform']['decisions_changed']:.1%}"),
        ("seconds", lambda r: f"{r['total_seconds']:.0f}"),
    ]
    lines = ["| measure | " + " | ".join(r["_label"] for r in results) + " |", "|---|" + "---|" * len(results)]
    lines += [f"| {name} | " + " | ".join(fn(r) for r in results) + " |" for name, fn in rows]
    return "\n".join(lines)


def _tau(r, name):
    t = r["agreement"]["kendall_tau"][name]
    return f"{t['mean']:.3f} ± {t['sd']:.3f}"


def _tau_ref(r):
    t = r["agreement"]["kendall_tau_gradient_vs_loo"]
    return f"{t['mean']:.3f} ± {t['sd']:.3f}"


def _top1(r):
    return r["agreement"]["top1_same"]["gradient"], r["agreement"]["top1_same"]["loo"]


def _flip(name, k):
    return lambda r: f"{r['erasure'][name][k]['flipped']:.1%}"


def _to_flip(r, order):
    f = r["tokens_to_flip"][order]
    return f"{f['median_tokens']:g}, {f['median_fraction']:.1%}"


def by_attention(results: list[dict]) -> str:
    """One column per attention: mean ± sd over its runs of the headline figures, ERASER's AOPC and the
    plausibility scores of each importance source."""
    from attnclf.presentation.figures import attentions_of

    groups = {a: [r for r in results if r["attention"] == a] for a in attentions_of(results)}
    sources = list(results[0]["eraser"]["sources"])
    rows = [
        ("accuracy on the sample", lambda r: r["accuracy"], "{:.2%}"),
        ("tau vs leave-one-out (mean)", lambda r: r["agreement"]["kendall_tau"]["loo"]["mean"], "{:.3f}"),
        ("tau vs gradient x input (mean)", lambda r: r["agreement"]["kendall_tau"]["gradient"]["mean"], "{:.3f}"),
        ("flipped, top-1 by attention removed", lambda r: r["erasure"]["attention"][r["ks"][0]]["flipped"], "{:.1%}"),
        ("uniform weights: decisions changed", lambda r: r["uniform"]["decisions_changed"], "{:.1%}"),
    ]
    # Jain & Wallace's definition, and significance
    if all("magnitude" in r["agreement"] for r in results):
        for pair, name in (
            ("gradient", "attention vs gradient"),
            ("loo", "attention vs leave-one-out"),
            ("gradient_vs_loo", "gradient vs leave-one-out"),
        ):
            rows.append(
                (f"tau by magnitude, {name} (mean)", lambda r, p=pair: r["agreement"]["magnitude"][p]["mean"], "{:.3f}")
            )
            rows.append(
                (
                    f"  significant (p <= 0.05), {name}",
                    lambda r, p=pair: r["agreement"]["magnitude"][p]["significant"],
                    "{:.2f}",
                )
            )
    for score, better in (("comprehensiveness", "higher"), ("sufficiency", "lower")):
        for n in sources:
            rows.append(
                (
                    f"AOPC {score}, {n} ({better}: more faithful)",
                    lambda r, n=n, score=score: r["eraser"]["sources"][n][f"aopc_{score}"],
                    "{:.3f}",
                )
            )
    if all("plausibility" in r for r in results):
        for score, name in (("token_f1", "token F1"), ("auprc", "AUPRC"), ("iou_f1", "IOU-F1")):
            for n in sources:
                rows.append(
                    (
                        f"plausibility: {name}, {n}",
                        lambda r, n=n, score=score: r["plausibility"]["sources"][n][score],
                        "{:.3f}",
                    )
                )
    head = "| measure | " + " | ".join(f"{a} ({len(g)} runs)" for a, g in groups.items()) + " |"
    lines = [head, "|---|" + "---|" * len(groups)]
    for name, get, form in rows:
        cells = []
        for g in groups.values():
            v = np.array([get(r) for r in g], dtype=float)
            sd = form.format(v.std(ddof=1)) if len(v) > 1 else "-"
            cells.append(f"{form.format(v.mean())} ± {sd}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(results: list[dict], out: str):
    """Three panels of every run side by side, written to `out`; returns the figure (closed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    bins = np.linspace(-1, 1, 41)
    for r in results:
        tau = np.array([v for v in r["per_review"]["kendall_tau_loo"] if np.isfinite(v)])
        ax[0].hist(tau, bins=bins, histtype="step", linewidth=1.5, label=r["_label"])
    ax[0].set(title="Kendall tau, attention vs leave-one-out", xlabel="tau per review", ylabel="reviews")
    ks = results[0]["ks"]
    x = np.arange(len(ks))
    # a line style per run (styles repeat past four runs: every run is drawn), a colour per token order
    for r, style in zip(results, itertools.cycle(["-", "--", ":", "-."])):
        for name, colour in (("attention", "C3"), ("loo", "C0"), ("random", "C7")):
            ax[1].plot(
                x,
                [r["erasure"][name][k]["flipped"] for k in ks],
                style,
                color=colour,
                marker="o",
                label=f"{r['_label']}: by {name}",
            )
    ax[1].set_xticks(x, [k[1:] for k in ks])
    ax[1].set(title="decisions flipped after removing the top-k tokens", xlabel="k", ylabel="share of reviews")
    edges = np.linspace(0, 1.1, 23)
    for r in results:
        pr = r["per_review"]
        frac = [
            f / (n - 1) if np.isfinite(f) else 1.05 for f, n in zip(pr["tokens_to_flip"], pr["tokens"], strict=True)
        ]
        ax[2].hist(frac, bins=edges, histtype="step", linewidth=1.5, label=r["_label"])
    ax[2].set(title="top-attention tokens removed to flip (>1: never)", xlabel="share of the review", ylabel="reviews")
    for a in ax:
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return fig


KEYS = Keys(
    "compare-faithfulness",
    positional=(("results", "path"),),
    flags={"out": "--out", "aopc_out": "--aopc-out"},
    switches=frozenset({"by_attention"}),
)


def command(argv=None) -> int:
    argv = as_flags(list(sys.argv[1:] if argv is None else argv), KEYS)
    p = argparse.ArgumentParser(
        prog="attnclf compare-faithfulness",
        usage=usage(
            KEYS, "'results=[<faithfulness.json or run>,...]' [out=<png>] [by_attention=true] [aopc_out=<png>]"
        ),
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("results", nargs="+")
    p.add_argument("--out", help="write the figure (PNG) here")
    p.add_argument("--by-attention", action="store_true", help="one column per attention: mean ± sd over its runs")
    p.add_argument("--aopc-out", help="write ERASER's AOPC per attention and importance source (PNG) here")
    args = p.parse_args(argv)
    results = [load(x) for x in args.results]
    if (args.by_attention or args.aopc_out) and any("eraser" not in r for r in results):
        old = next(x for x, r in zip(args.results, results, strict=True) if "eraser" not in r)
        raise AttnclfError(f"{old} has no ERASER scores (made before them): run attnclf faithfulness on it again")
    print(by_attention(results) if args.by_attention else table(results))
    if args.aopc_out:
        from attnclf.presentation.figures import aopc_by_attention_figure

        aopc_by_attention_figure(results).savefig(args.aopc_out, dpi=110)
        print(f"figure written to {args.aopc_out}")
    if args.out:
        figure(results, args.out)
        print(f"figure written to {args.out}")
    return 0
