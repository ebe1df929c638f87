"""The explorer page: a text read by every served model side by side, each word shaded by attention,
|gradient x input| or |leave-one-out| on a scale chosen (relative to the text's highest, or to uniform), each
model's class probabilities as bars, its top words by each measure, and what flips its decision (the fewest
words, in each measure's order, whose deletion changes it). A word is deleted by clicking it (a button of a
plain form: no script) and an edited text is compared with the pinned original (Δp, both texts shaded). The
address holds the whole state (`Look`), so that a view can be shared. Every text shown is escaped."""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass

from attnclf.data.text import tokenize
from attnclf.presentation.html import SPAN, by_peak, by_uniform, shade_words
from attnclf.presentation.site import head, link, query_of

# (the page's key, what the page calls it, /explain's key of its values and of its flip)
MEASURES = (
    ("attention", "attention weight", "weights", "attention"),
    ("gradient", "|gradient x input|", "gradient", "gradient"),
    ("loo", "|leave-one-out|", "leave_one_out", "leave_one_out"),
)
SCALES = {"uniform": "relative to uniform (a weight of 1/n)", "max": "relative to the text's highest"}


@dataclass
class Look:
    """What the explorer shows: its query's keys (a link keeps them all)."""

    text: str = ""
    # the original an edited text is compared with
    pinned: str | None = None
    # MEASURES' key: what shades the words
    shade: str = "attention"
    # SCALES' key: relative to uniform by default, so that near-uniform weights shade pale, not dark
    scale: str = "uniform"
    # a /browse row (its text, and its true label shown)
    row: str | None = None

    def query(self, **change) -> dict:
        """The keys that differ from the defaults, with `change` over them: a link's query."""
        return query_of(self, **change)

    @property
    def compared(self) -> bool:
        """An edit to compare: a pinned original other than the text."""
        return self.pinned is not None and self.pinned != self.text


def explorer_page(
    look: Look,
    views: list[dict],
    key: str | None = None,
    gold: str | None = None,
    error: str | None = None,
    about: str = "",
) -> str:
    """The explorer: the text box, and where a text was given, each model's view side by side (`gold`: the
    row's true label, where the text is a test row; `about`: what reading it took and its limits)."""
    parts = [
        head("attnclf explorer", key),
        "<p class='about'>Every served model reads the text; each word is shaded by the measure chosen below. "
        "Click a word to delete it: each model's new decision shows beside the pinned original's.</p>",
        text_form(look, key),
    ]
    if error:
        parts.append(f"<p class='error'>{html.escape(error)}</p>")
    if views:
        parts.append(choices(look, key))
        if gold is not None:
            parts.append(
                f"<p>true label{' of the pinned text' if look.compared else ''}: "
                f"<b class='gold'>{html.escape(gold)}</b></p>"
            )
        parts.append("<div class='models'>" + "".join(model_view(v, look, key) for v in views) + "</div>")
        download = link("/explain.json", key, **look.query(shade=None, scale=None))
        parts.append(
            f"<p class='about'>{html.escape(about)} · <a href='{download}' download>this analysis as JSON</a></p>"
        )
    return "\n".join(parts) + "\n"


def text_form(look: Look, key: str | None) -> str:
    """The text box; a text shown is pinned (kept as the original), so that an edit of it is compared."""
    pinned = look.pinned if look.pinned is not None else (look.text or None)
    # (the measure, scale and row where not the defaults: the address a text opens at stays short)
    chosen = {k: v for k, v in look.query().items() if k in ("shade", "scale", "row")}
    keep = {"pinned": pinned, **chosen, "key": key}
    hidden = "".join(
        f"<input type='hidden' name='{k}' value='{html.escape(v)}'>" for k, v in keep.items() if v is not None
    )
    unpin = (
        f" <a href='{link('/', key, **look.query(pinned=None, row=None))}'>unpin the original</a>"
        if look.compared
        else ""
    )
    return (
        "<form method='get' action='/'>"
        f"<textarea name='text' rows='4' placeholder='Type or paste a text'>{html.escape(look.text)}</textarea>"
        f"{hidden}<p><button type='submit'>Read it</button>{unpin}</p></form>"
    )


def choices(look: Look, key: str | None) -> str:
    """The measure that shades the words and its scale, as links (the address keeps the choice)."""

    def tab(change: dict, what: str, chosen: bool) -> str:
        return (
            f"<b>{html.escape(what)}</b>"
            if chosen
            else f"<a href='{link('/', key, **look.query(**change))}'>{html.escape(what)}</a>"
        )

    shades = "".join(tab({"shade": m}, what, m == look.shade) for m, what, *_ in MEASURES)
    scales = "".join(tab({"scale": s}, what, s == look.scale) for s, what in SCALES.items())
    return f"<p class='tabs'>shade by: {shades}</p><p class='tabs'>scale: {scales}</p>"


def measure_of(look: Look) -> tuple[str, str, str]:
    """The chosen measure: what it is called, /explain's key of its values and of its flip."""
    return next(tuple(rest) for m, *rest in MEASURES if m == look.shade)


def model_view(view: dict, look: Look, key: str | None) -> str:
    """One model's reading: its name, run, decision (against the pinned original's), taus, what flips it, and
    the text shaded by the chosen measure, each word a button that deletes it."""
    p, ex = view["prediction"], view["explained"]
    what, values_key, _ = measure_of(look)
    values = ex[values_key] if values_key != "weights" else p.weights
    notes = "<p class='about'>Cut to the run's length: the grey words were not read.</p>" if p.truncated else ""
    if ex.get("rows"):
        notes += f"<p class='about'>Its weights are the mean of its {len(ex['rows'])} rows (heads or hops).</p>"
    return (
        f"<section class='model' data-model='{html.escape(view['name'])}'><h2>{html.escape(view['name'])}</h2>"
        f"<p class='about'>{html.escape(view['about'])}</p>"
        + decision(view, look)
        + f"<p class='about'>{tau_text(ex['tau'])}</p>{notes}"
        + flips_text(view, look, key)
        + scale_legend(values, what, look.scale)
        + edit_form(view, look, key, values, what)
        + pinned_view(view, look, what)
        + top_words(view)
        + "</section>"
    )


def tau_text(tau: dict) -> str:
    def shown(v):
        return "n/a" if v is None else f"{v:.2f}"

    return (
        f"Kendall tau of the attention against |gradient x input| <b class='tau'>{shown(tau['gradient'])}</b>, "
        f"against |leave-one-out| <b class='tau'>{shown(tau['leave_one_out'])}</b>"
    )


def decision(view: dict, look: Look) -> str:
    """The predicted label and every class's probability as a bar; beside an edit, the pinned original's
    label and the change (Δp) of the original's class's probability."""
    p, labels = view["prediction"], view["labels"]
    digits = telling_digits(p.probs, labels.index(p.label_name))
    bars = "".join(
        f"<div class='probs{' predicted' if name == p.label_name else ''}'><span class='track'><span class='bar' "
        f"style='width:{q:.1%}'></span></span>"
        f"{'<b>' if name == p.label_name else ''}{html.escape(name)} {q:.{digits}f}"
        f"{' (predicted)</b>' if name == p.label_name else ''}</div>"
        for name, q in zip(labels, p.probs, strict=True)
    )
    said = f"<p>predicted <b class='label'>{html.escape(p.label_name)}</b> (p = <b class='prob'>{p.prob:.3f}</b>)</p>"
    if not look.compared or view.get("pinned") is None:
        return said + bars
    was = view["pinned"]["prediction"]
    k = labels.index(was.label_name)
    delta = p.probs[k] - was.probs[k]
    flipped = " (the decision flipped)" if was.label_name != p.label_name else ""
    return (
        said + bars + f"<p>pinned original: <b class='was'>{html.escape(was.label_name)}</b> (p = {was.prob:.3f}); "
        f"p({html.escape(was.label_name)}) now {p.probs[k]:.3f}, Δp = <b class='delta'>{delta:+.3f}</b>{flipped}</p>"
    )


def telling_digits(probs: list[float], chosen: int) -> int:
    """The decimals (3 at least, 6 at most) at which the predicted class's probability reads above every other:
    after a flip two classes can both read 0.500."""
    for digits in range(3, 7):
        shown = [round(q, digits) for q in probs]
        if all(shown[chosen] > q for j, q in enumerate(shown) if j != chosen):
            return digits
    return 6


def flips_text(view: dict, look: Look, key: str | None) -> str:
    """What flips the decision in each measure's order: a count, and a button that deletes those words."""
    p, ex = view["prediction"], view["explained"]
    within, places = ex["flip_within"], p.positions or list(range(len(p.tokens)))
    said = []
    for _, what, _, flip_key in MEASURES:
        f = ex["flip"][flip_key]
        if f["count"] is None:
            said.append(
                f"{html.escape(what)}: <b class='flips' data-measure='{flip_key}'>does not flip within "
                f"{within} words</b>"
            )
            continue
        words = ",".join(str(places[j]) for j in f["words"])
        said.append(
            f"{html.escape(what)}: <button class='flips' data-measure='{flip_key}' name='delete' value='{words}' "
            f"title='delete them'>{f['count']} word{'s' if f['count'] != 1 else ''}</button>"
        )
    return (
        f"<form method='get' action='/'>{hidden_look(look, key)}<p>What flips it (the fewest words deleted, "
        f"highest first, outlined for the chosen measure): {' · '.join(said)}</p></form>"
    )


def hidden_look(look: Look, key: str | None) -> str:
    """The page's state as a form's hidden fields (a button of the form then adds `delete`)."""
    keep = {**look.query(), **({"key": key} if key else {})}
    return "".join(f"<input type='hidden' name='{k}' value='{html.escape(v)}'>" for k, v in keep.items())


def scale_legend(values: list, what: str, scale: str) -> str:
    """What the shading means, with its numbers."""
    finite = [0.0 if v is None else v for v in values]
    if scale == "max":
        top = max(finite, default=0.0)
        return (
            # (the red ramp every shaded page's legend draws: html.STYLE's .legend)
            f"<p class='about'>{html.escape(what)}: 0 <span class='legend'></span> {top:.4g} (the text's highest)</p>"
        )
    n = len(finite)
    return (
        f"<p class='about'>{html.escape(what)} as a share of the text's total: {1 / (SPAN * n):.3g} (1/{SPAN} of "
        "uniform) or less <span class='scale' style='background:linear-gradient(to right,rgba(40,90,220,1),"
        f"rgba(40,90,220,0),rgba(220,40,40,1))'></span> {SPAN / n:.3g} ({SPAN}x) or more; white: 1/n = "
        f"{1 / n:.3g} (n = {n} words)</p>"
    )


def edit_form(view: dict, look: Look, key: str | None, values: list, what: str) -> str:
    """The text shaded, each word a button of a plain form that deletes it; the chosen measure's flip words
    outlined."""
    p, ex = view["prediction"], view["explained"]
    _, _, flip_key = measure_of(look)
    scale = by_peak if look.scale == "max" else by_uniform
    shaded = shade_words(p, values, what, scale, button=True, marked=ex["flip"][flip_key]["words"])
    return f"<form method='get' action='/'>{hidden_look(look, key)}<p class='text'>{shaded}</p></form>"


def pinned_view(view: dict, look: Look, what: str) -> str:
    """The pinned original, shaded as the text is, beside an edit."""
    if not look.compared or view.get("pinned") is None:
        return ""
    was = view["pinned"]
    values_key = measure_of(look)[1]
    values = was["prediction"].weights if values_key == "weights" else was["explained"][values_key]
    scale = by_peak if look.scale == "max" else by_uniform
    shaded = shade_words(was["prediction"], values, what, scale, struck=deleted_places(look.pinned, look.text))
    said = "<p class='about'>pinned original (the words the edit deleted struck through):</p>"
    return f"{said}<p class='pinned'>{shaded}</p>"


def deleted_places(original: str, edited: str) -> list[int]:
    """The places (among `original`'s tokens) of the words `edited` lacks: what a deletion took out."""
    ops = difflib.SequenceMatcher(a=tokenize(original), b=tokenize(edited), autojunk=False).get_opcodes()
    return [i for op, a0, a1, _, _ in ops if op in ("delete", "replace") for i in range(a0, a1)]


def by_word(tokens: list[str], values: list[float]) -> list[tuple[str, float, int]]:
    """(word, its highest value, how many places hold it), highest first: one entry a word, however often the
    text holds it (places without a value, < 0, left out)."""
    best: dict[str, list] = {}
    for i, (t, v) in enumerate(zip(tokens, values, strict=True)):
        if v < 0:
            continue
        entry = best.setdefault(t, [v, i, 0])
        entry[2] += 1
        if v > entry[0]:
            entry[0], entry[1] = v, i
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    return [(word, v, n) for word, (v, _, n) in ranked]


def top_words(view: dict, k: int = 5) -> str:
    """The words each measure ranks highest, one entry a word (its highest value, and how many places hold it
    where more than one), with their values."""
    p, ex = view["prediction"], view["explained"]
    lines = []
    for _, what, values_key, _ in MEASURES:
        values = p.weights if values_key == "weights" else [-1.0 if v is None else v for v in ex[values_key]]
        top = by_word(p.tokens, values)[:k]
        words = ", ".join(f"{html.escape(word)} {value:.3g}{f' (×{n})' if n > 1 else ''}" for word, value, n in top)
        lines.append(f"<tr><th>{html.escape(what)}</th><td class='top'>{words}</td></tr>")
    return f"<table class='tops'><caption>top words</caption>{''.join(lines)}</table>"
