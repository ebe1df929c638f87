"""HTML pages of reviews with their words shaded by attention: attnclf predict's `html=` and the scripts' pages.

The review is shown as its writer wrote it (case, punctuation, spacing); each word the model read is
shaded by its weight, and a legend says what the shading means."""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass

from markupsafe import Markup

from attnclf.data.text import TAG, token_spans
from attnclf.presentation.templating import render

STYLE = (
    "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto} p{line-height:1.8} "
    ".w{padding:1px 2px;border-radius:3px} .cut{color:#999} .flip{outline:2px solid #333} "
    "button.w{border:0;font:inherit;color:inherit;cursor:pointer;margin:0} "
    ".legend{display:inline-block;width:12em;height:0.9em;vertical-align:middle;border:1px solid #ccc;"
    "background:linear-gradient(to right,rgba(220,40,40,0),rgba(220,40,40,1))}</style>"
)


def by_peak(values: list[float]):
    """A word's colour relative to the text's highest value (the darkest): red, from none to full."""
    peak = max(values, default=0.0) or 1.0
    return lambda weight: f"rgba(220,40,40,{weight / peak:.3f})"


# the uniform scale's ends: a word's share of the text's total at 1/SPAN or SPAN times uniform (1/n) is full
SPAN = 8


def by_uniform(values: list[float]):
    """A word's colour relative to uniform: its share of the text's total against 1/n, white at 1/n, red above
    to full at SPAN/n, blue below to full at 1/(SPAN n): near-uniform weights shade pale, not dark."""
    total, n = sum(values), len(values)

    def colour(weight: float) -> str:
        ratio = weight * n / total if total > 0 else 1.0
        strength = min(1.0, abs(math.log(max(ratio, 1e-12), SPAN)))
        return f"rgba(220,40,40,{strength:.3f})" if ratio >= 1 else f"rgba(40,90,220,{strength:.3f})"

    return colour


def _shade(
    text: str, weight: float, colour, what: str, place: int | None = None, marked: bool = False, struck: bool = False
) -> str:
    """One word: shaded, its value on hover; with its `place` (among tokenize()'s tokens), a button of the
    form around it that deletes it; `marked`: outlined (a word whose deletion flips the decision); `struck`:
    struck through (a word an edit deleted)."""
    tag, button = ("button", f" name='delete' value='{place}'") if place is not None else ("span", "")
    tag = "del" if struck and place is None else tag
    return (
        f"<{tag} class='w{' flip' if marked else ''}'{button} title='{what} {weight:.4f}' "
        f"style='background:{colour(weight)}'>{html.escape(text)}</{tag}>"
    )


def _between(raw: str) -> str:
    """Text between two words as HTML: escaped, markup the tokenizer drops shown as what it means (a line
    break for <br />, else a space)."""
    parts, at = [], 0
    for m in TAG.finditer(raw):
        parts += [html.escape(raw[at : m.start()]), "<br>" if m.group().lower().startswith("<br") else " "]
        at = m.end()
    return "".join([*parts, html.escape(raw[at:])]).replace("\n", "<br>")


def shade_words(
    p, scores=None, what: str = "attention", scale=by_peak, button: bool = False, marked=(), struck=()
) -> str:
    """A Prediction's review as HTML: its own text, each word it read shaded by its attention weight (darker:
    more; `scale` makes the colours of the text's values), words left out by truncation in grey. Where the
    text's offsets cannot be traced (see token_spans), the words as the model read them. `scores` (one a word
    read, >= 0; None counts as 0), named `what`, shade in place of the weights. `button`: each read word a
    button that deletes it (in a form the caller writes); `marked`: the read words (places among those read)
    outlined; `struck`: the words (places among the text's tokens) struck through."""
    values = p.weights if scores is None else [0.0 if v is None else v for v in scores]
    colour, spans = scale(values), token_spans(p.text) if p.text else None
    places = p.positions or list(range(len(p.tokens)))
    marked, struck = {places[j] for j in marked}, set(struck)

    def word(text, i, v):
        return _shade(text, v, colour, what, i if button else None, i in marked, i in struck)

    if spans is None or not p.positions:
        return " ".join(word(t, i, v) for t, i, v in zip(p.tokens, places, values, strict=True))
    weight_at = dict(zip(p.positions, values, strict=True))
    out, at = [], 0
    for i, (start, end) in enumerate(spans):
        out.append(_between(p.text[at:start]))
        text = p.text[start:end]
        tag = "del" if i in struck else "span"
        out.append(word(text, i, weight_at[i]) if i in weight_at else f"<{tag} class='cut'>{html.escape(text)}</{tag}>")
        at = end
    out.append(_between(p.text[at:]))
    return "".join(out)


@dataclass
class Shaded:
    """One text of a `page`: its words shaded (html.shade_words' HTML), and the model that read it and what it
    said, where the page sets models side by side."""

    shaded: str
    name: str | None = None
    said: str = ""


def page(title: str, sections: list[tuple[str, list[Shaded]]], truncated: bool = False, about: str = "") -> str:
    """A whole HTML page of shaded texts (templates/shaded.html): title, the legend (`truncated`: it says what
    grey means), `about` in bold, then each section's heading and texts."""
    shown = [
        {"heading": heading, "texts": [{**asdict(t), "shaded": Markup(t.shaded)} for t in texts]}
        for heading, texts in sections
    ]
    # (STYLE is ours, put in as it is; each shaded text is escaped word by word by shade_words)
    return render("shaded.html", title=title, style=Markup(STYLE), truncated=truncated, about=about, sections=shown)


def predictions_page(preds: list, about: str = "", gold: list | None = None) -> str:
    """attnclf predict's html=: each review with its predicted label and probability, and its true label where
    the input has one (`gold`, None for a row without); `about` (the run and its attention) on top."""
    truncated = any(p.positions and len(p.positions) < len(token_spans(p.text) or p.positions) for p in preds)
    gold = gold or [None] * len(preds)

    def true(g) -> str:
        return "" if g is None else f", true label: {g}"

    sections = [
        (f"#{i + 1}: {p.label_name} ({p.prob:.3f}{true(g)})", [Shaded(shade_words(p))])
        for i, (p, g) in enumerate(zip(preds, gold, strict=True))
    ]
    return page("attention", sections, truncated, about)
