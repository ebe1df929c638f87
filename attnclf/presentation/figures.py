"""Matplotlib figures: attention over a review's words, importance measures side by side, the confusion
matrix, the faithfulness summary and validation curves. Each function takes plain arrays and returns a
figure; the caller saves it or hands it to TensorBoard (attnclf/presentation/tensorboard.py)."""

from __future__ import annotations

import functools
import logging

import numpy as np

from attnclf.data.text import UNK
from attnclf.presentation.html import SPAN
from attnclf.settings.attention import attention_order, package_attentions

log = logging.getLogger(__name__)

# where a review never flipped, in the "share removed" histogram (past 1)
UNMEASURED_FLIP = 1.05
# fonts for the scripts matplotlib's own DejaVu Sans lacks (CJK, Arabic, Hebrew, Indic, Thai), each used
# where it is installed
FALLBACK_FONTS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
)
# drawn for a character no font found holds (DejaVu Sans has it)
NO_GLYPH = "\u25a1"
# the notes said in this process: each once (matplotlib's own warning comes for each character, every figure)
SAID: set[str] = set()


def pyplot():
    """matplotlib.pyplot on the Agg backend (files and TensorBoard images; no window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@functools.cache
def word_fonts() -> tuple[tuple[str, ...], frozenset[int]]:
    """The font families a word is drawn from (DejaVu Sans, then each fallback installed; matplotlib takes a
    character from the first that holds it) and the characters they hold between them."""
    from matplotlib import font_manager as fm

    installed = {f.name for f in fm.fontManager.ttflist}
    families = ("DejaVu Sans", *(f for f in FALLBACK_FONTS if f in installed))
    held = set()
    for family in families:
        held |= set(fm.get_font(fm.findfont(fm.FontProperties(family=family))).get_charmap())
    return families, frozenset(held)


def drawable(words: list[str]) -> list[str]:
    """The words (or a title, class names: text from the data) as a figure can draw them: a character that
    no font found holds becomes NO_GLYPH."""
    families, held = word_fonts()
    missing = {c for w in words for c in w if ord(c) not in held and not c.isspace()}
    if not missing:
        return words
    if "no glyph" not in SAID:
        SAID.add("no glyph")
        more = f" and {len(missing) - 1} more characters have" if len(missing) > 1 else " has"
        log.warning(
            f"figures: {min(missing)!r}{more} no glyph in the fonts found ({', '.join(families)}); "
            f"the figures draw {NO_GLYPH} for them (predictions and the HTML pages are unaffected); a font that "
            "has them, such as Debian's fonts-noto-cjk, draws them"
        )
    return ["".join(NO_GLYPH if c in missing else c for c in w) for w in words]


def readable_on(rgba) -> str:
    """Black or white, whichever reads better on a cell of colour `rgba` (by its luminance)."""
    r, g, b = rgba[:3]
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


def draw_weights(ax, words: list[str], weights, columns: int, signed: bool = False, uniform: bool = False):
    """The words in reading order on a grid `columns` wide, each cell coloured by its weight (`signed`: a
    diverging scale centred on 0; `uniform`: the weight times n, on a log scale white at 1 (uniform), red to
    SPAN times it, blue to 1/SPAN); each word in black or white, whichever reads on its cell."""
    from matplotlib.colors import LogNorm

    weights = np.asarray(weights, dtype=float)
    if uniform:
        total = weights.sum()
        weights = weights * len(weights) / total if total > 0 else np.ones_like(weights)
    rows = -(-len(words) // columns)
    grid = np.full(rows * columns, np.nan)
    grid[: len(words)] = weights[: len(words)]
    top = float(np.abs(weights).max()) if len(weights) else 0.0
    top = top or 1.0
    cmap, vmin = ("RdBu_r", -top) if signed else ("Reds", 0)
    scale = {"norm": LogNorm(1 / SPAN, SPAN, clip=True)} if uniform else {"vmin": vmin, "vmax": top}
    im = ax.imshow(grid.reshape(rows, columns), cmap="RdBu_r" if uniform else cmap, aspect="auto", **scale)
    families, _ = word_fonts()
    for j, (w, shown) in enumerate(zip(words, drawable([w[:12] for w in words]), strict=True)):
        colour = "grey" if w == UNK else readable_on(im.cmap(im.norm(weights[j])))
        ax.text(j % columns, j // columns, shown, ha="center", va="center", fontsize=7, color=colour, family=families)
    ax.set_xticks([])
    return im


def attention_heatmap(words: list[str], weights: np.ndarray, title: str, columns: int = 12):
    """A review's words in reading order, each shaded by its attention weight, with a colour bar."""
    plt = pyplot()
    rows = -(-len(words) // columns)
    fig, ax = plt.subplots(figsize=(columns * 0.95, 0.42 * rows + 0.9))
    im = draw_weights(ax, words, weights, columns)
    ax.set_yticks(range(rows), [str(r * columns) for r in range(rows)], fontsize=7)
    ax.set_ylabel("token index")
    ax.set_title(*drawable([title]), fontsize=9, family=word_fonts()[0])
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01, label="attention weight")
    fig.tight_layout()
    return fig


def importance_figure(words: list[str], rows: dict[str, np.ndarray], title: str, columns: int = 12):
    """A review's words shaded by several importance measures, one grid above the other: attention
    (>= 0) in reds, signed measures (gradient x input, leave-one-out) in red for the predicted class
    and blue against it, centred on 0."""
    plt = pyplot()
    grid_rows = -(-len(words) // columns)
    fig, axes = plt.subplots(len(rows), 1, figsize=(columns * 0.95, len(rows) * (0.42 * grid_rows + 0.6) + 0.5))
    for ax, (name, scores) in zip(np.atleast_1d(axes), rows.items(), strict=True):
        scores = np.nan_to_num(np.asarray(scores, dtype=float))
        im = draw_weights(ax, words, scores, columns, signed=bool((scores < 0).any()))
        ax.set_yticks([])
        ax.set_title(name, fontsize=8, loc="left")
        fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
    fig.suptitle(*drawable([title]), fontsize=9, family=word_fonts()[0])
    fig.tight_layout()
    return fig


def attention_pair_figure(rows: list[tuple[str, list[str], np.ndarray]], columns: int = 12, uniform: bool = True):
    """Several models' attention over the same review, one grid above the other: (title, words, weights), each
    with its colour scale: relative to uniform (a weight times n: near-uniform weights stay pale), or with
    `uniform` False relative to the review's highest."""
    plt = pyplot()
    grid_rows = -(-max(len(words) for _, words, _ in rows) // columns)
    fig, axes = plt.subplots(len(rows), 1, figsize=(columns * 0.95, len(rows) * (0.42 * grid_rows + 0.9)))
    for ax, (title, words, weights) in zip(np.atleast_1d(axes), rows, strict=True):
        im = draw_weights(ax, words, weights, columns, uniform=uniform)
        label = f"weight x n (1: uniform; {SPAN}x either way: full)" if uniform else "attention weight"
        fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01, label=label)
        ax.set_yticks([])
        ax.set_title(*drawable([title]), fontsize=9, family=word_fonts()[0])
    fig.tight_layout()
    return fig


def confusion_figure(confusion: np.ndarray, names: list[str]):
    """Counts per (true class, predicted class), class names on the axes."""
    plt = pyplot()
    n = len(names)
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * n, 1.0 + 0.6 * n))
    im = ax.imshow(confusion, cmap="Blues")
    for (i, j), v in np.ndenumerate(confusion):
        colour = readable_on(im.cmap(im.norm(v)))
        ax.text(j, i, str(int(v)), ha="center", va="center", fontsize=8, color=colour)
    # (class names are the data's own: any script)
    names, families = drawable(names), word_fonts()[0]
    ax.set_xticks(range(n), names, rotation=45, ha="right", fontsize=8, family=families)
    ax.set_yticks(range(n), names, fontsize=8, family=families)
    ax.set(xlabel="predicted", ylabel="true")
    fig.tight_layout()
    return fig


def k_label(name: str) -> str:
    """A faithfulness result's k as a reader says it: k3 -> "top 3", k10pct -> "top 10%"."""
    if name.endswith("pct"):
        return f"top {name[1:-3]}%"
    return f"top {name[1:]}"


def faithfulness_figure(r: dict, arrays: dict):
    """The faithfulness command's four panels: agreement (Kendall tau), erasure, tokens to flip, and
    permuted weights against attention entropy."""
    from matplotlib.ticker import MaxNLocator

    plt = pyplot()
    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5))
    bins = np.linspace(-1, 1, 41)
    for name, t in arrays["tau"].items():
        ax[0, 0].hist(t[np.isfinite(t)], bins=bins, alpha=0.6, label=f"vs {name}")
    ax[0, 0].set(title="Kendall tau of attention, per review", xlabel="tau", ylabel="reviews")
    ax[0, 0].legend(fontsize=8)
    ks = r["ks"]
    width = 0.8 / len(r["erasure"])
    for j, (name, by_k) in enumerate(r["erasure"].items()):
        ax[0, 1].bar(np.arange(len(ks)) + j * width, [by_k[k]["flipped"] for k in ks], width, label=name)
    ax[0, 1].set_xticks(np.arange(len(ks)) + 0.4 - width / 2, [k_label(k) for k in ks])
    ax[0, 1].set(
        title="decisions flipped after removing the most important tokens",
        xlabel="tokens removed",
        ylabel="share of reviews",
    )
    ax[0, 1].legend(fontsize=8)
    frac = arrays["flip_frac"]
    ax[1, 0].hist(np.where(np.isfinite(frac), frac, UNMEASURED_FLIP), bins=np.linspace(0, 1.1, 23))
    ax[1, 0].set(
        title="share of the review removed (by attention) before the decision flips (>1: never)",
        xlabel="share of tokens",
        ylabel="reviews",
    )
    ax[1, 0].title.set_fontsize(9)
    # counts of reviews: whole numbers
    for hist in (ax[0, 0], ax[1, 0]):
        hist.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax[1, 1].scatter(arrays["entropy"], arrays["tv"], s=4, alpha=0.5)
    ax[1, 1].set(
        title="permuted weights: output change against attention entropy",
        xlabel="entropy (nats)",
        ylabel="median total variation",
    )
    fig.suptitle(f"{r['attention']} attention: {r['reviews']} {r['split']} reviews", fontsize=11)
    fig.tight_layout()
    return fig


def aopc_figure(r: dict):
    """ERASER's AOPC of each importance source: comprehensiveness (higher: removing its top tokens costs the
    decision more) and sufficiency (lower: its top tokens alone keep it)."""
    plt = pyplot()
    sources = list(r["eraser"]["sources"])
    fig, ax = plt.subplots(figsize=(7, 3.6))
    x = np.arange(len(sources))
    for j, score in enumerate(("comprehensiveness", "sufficiency")):
        values = [r["eraser"]["sources"][n][f"aopc_{score}"] for n in sources]
        ax.bar(x + (j - 0.5) * 0.38, values, 0.38, label=f"{score} (AOPC)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, sources)
    bins = ", ".join(b.replace("pct", "%") for b in r["eraser"]["bins"])
    ax.set(
        title=f"{r['attention']} attention: ERASER AOPC over the top {bins} of tokens", ylabel="drop in p(predicted)"
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def adversarial_figure(r: dict, arrays: dict):
    """Jain & Wallace's adversarial attention: the largest JSD from the model's weights found within epsilon,
    per review (against a random permutation of the weights), and against the weights' own entropy."""
    plt = pyplot()
    adv, entropy = arrays["adversarial"], arrays["entropy"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    bins = np.linspace(0, np.log(2), 36)
    ax[0].hist(adv.jsd, bins=bins, alpha=0.7, label="adversarial, within epsilon")
    ax[0].hist(adv.permuted_jsd, bins=bins, alpha=0.5, label="the weights permuted at random")
    ax[0].set(
        title=f"{r['attention']} attention: max JSD within epsilon={r['adversarial']['epsilon']:g}",
        xlabel="JSD from the model's weights (nats; at most ln 2)",
        ylabel="reviews",
    )
    ax[0].legend(fontsize=8)
    ax[1].scatter(entropy, adv.jsd, s=6, alpha=0.5)
    ax[1].set(
        title="against the model's attention entropy",
        xlabel="entropy of the weights (nats)",
        ylabel="max JSD within epsilon",
    )
    for a in ax:
        a.title.set_fontsize(9)
    fig.tight_layout()
    return fig


def attentions_of(results: list[dict]) -> list[str]:
    """The attentions among results (each with an "attention"), the default first, then by name."""
    return attention_order(r["attention"] for r in results)


# matplotlib's sequential colour maps, one family an attention: light to dark shades tell its runs apart
FAMILIES = ("Blues", "Oranges", "Greens", "Purples", "Reds", "YlOrBr", "PuRd", "BuGn", "RdPu", "Greys")


def attention_families(names) -> dict[str, str]:
    """A colour family per attention, the same in every figure: the package's mechanisms in their fixed order
    (the default's first), an attention of one's own from the families left (by name; grey past them)."""
    known = attention_order(package_attentions())
    spare = iter(FAMILIES[len(known) :])
    return {
        n: FAMILIES[known.index(n)] if n in known[: len(FAMILIES)] else next(spare, "Greys")
        for n in attention_order(names)
    }


def attention_colour(family: str):
    """The colour that stands for a family where one colour is drawn (a bar, a legend)."""
    from matplotlib import colormaps

    return colormaps[family](0.7)


def aopc_by_attention_figure(results: list[dict]):
    """ERASER's AOPC of each importance source, per attention over its runs (bars: the mean; dots: each
    run): comprehensiveness (higher: more faithful) and sufficiency (lower: more faithful)."""
    plt = pyplot()
    atts = attentions_of(results)
    families = attention_families(atts)
    sources = list(results[0]["eraser"]["sources"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(len(sources))
    width = 0.8 / len(atts)
    for ax, score in zip(axes, ("comprehensiveness", "sufficiency"), strict=True):
        for j, att in enumerate(atts):
            runs = [r for r in results if r["attention"] == att]
            values = np.array([[r["eraser"]["sources"][n][f"aopc_{score}"] for n in sources] for r in runs])
            at = x + (j - (len(atts) - 1) / 2) * width
            colour = attention_colour(families[att])
            ax.bar(at, values.mean(0), width, color=colour, alpha=0.75, label=f"{att} ({len(runs)} runs)")
            for row in values:
                ax.plot(at, row, "o", color="black", ms=3)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, sources)
        better = "higher" if score == "comprehensiveness" else "lower"
        ax.set(title=f"AOPC {score} ({better}: more faithful)", ylabel="drop in p(predicted)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def run_colours(runs: list[dict]) -> dict[str, tuple]:
    """A colour per run (by its folder, `dir`): a family per attention (attention_families: dot blue, additive
    orange, general green, ...) and a shade of it per run, so that each seed's curve can be told apart."""
    from collections import defaultdict

    from matplotlib import colormaps

    by_att = defaultdict(list)
    for m in runs:
        by_att[m["attention"]].append(m)
    families = attention_families(by_att)
    colours = {}
    for att, ms in by_att.items():
        cmap = colormaps[families[att]]
        for i, m in enumerate(sorted(ms, key=lambda m: (m["seed"], str(m["dir"])))):
            colours[str(m["dir"])] = cmap(0.45 + 0.5 * i / max(len(ms) - 1, 1))
    return colours


def validation_curves(runs: list[dict], curves: dict[str, list[tuple[int, float, float]]]):
    """Validation accuracy of each run against optimizer steps and against wall-clock minutes;
    `curves[run dir]` holds (step, seconds, value) points."""
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    shade = run_colours(runs)
    for m in runs:
        c = curves.get(str(m["dir"]))
        if not c:
            continue
        steps, secs, vals = zip(*c, strict=True)
        kw = dict(color=shade[str(m["dir"])], alpha=0.85, marker="o", ms=3)
        a.plot(steps, vals, label=f"{m['attention']} s{m['seed']}", **kw)
        b.plot([s / 60 for s in secs], vals, **kw)
    a.set(xlabel="optimizer step", ylabel="val/acc", title="validation accuracy by step")
    b.set(xlabel="minutes", ylabel="val/acc", title="validation accuracy by wall-clock")
    # runs without curves: no legend to draw
    if a.get_legend_handles_labels()[0]:
        a.legend(fontsize=7)
    fig.tight_layout()
    return fig


def differences_figure(rows: list[tuple[str, list[float]]]):
    """Per dataset, the paired differences additive − dot (in points): each pair a dot, their mean with its
    95% t-interval as a bar, 0 marked. `rows`: (dataset, differences) in the order to draw them."""
    from scipy import stats

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(rows) + 1.4))
    for y, (_, diffs) in enumerate(rows):
        d = np.asarray(diffs, dtype=float) * 100
        ax.scatter(d, np.full(len(d), y), s=12, color="grey", alpha=0.6, zorder=2)
        if len(d) > 1:
            half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
            ax.errorbar(d.mean(), y, xerr=half, fmt="o", color="black", capsize=4, zorder=3)
        elif len(d):
            ax.plot(d.mean(), y, "o", color="black", zorder=3)
    ax.axvline(0, color="tab:red", lw=1)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set(
        xlabel="test accuracy, additive − dot (points): pairs, mean and 95% interval",
        title="additive against dot, paired by fold or seed",
    )
    fig.tight_layout()
    return fig


def adversarial_training_figure(r: dict):
    """Accuracy against the JSD from the classifier's weights, one point per lambda (W&P's curve)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    xs = [x["jsd_from_base"] for x in r["lambdas"]]
    ys = [x["accuracy"] for x in r["lambdas"]]
    ax.plot(xs, ys, "o-")
    for x, y, trained in zip(xs, ys, r["lambdas"], strict=True):
        ax.annotate(f"{trained['lambda']:g}", (x, y), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.axhline(r["lambdas"][0]["base_accuracy"], color="grey", lw=0.8, ls="--", label="the classifier")
    ax.set(
        title=f"{r['attention']} attention: adversarially trained models (lambda beside each)",
        xlabel="JSD of their weights from the classifier's (nats)",
        ylabel="test accuracy",
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
