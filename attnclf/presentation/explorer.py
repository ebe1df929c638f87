"""The explorer page: a text read by every served model side by side, each word shaded by attention,
|gradient x input| or |leave-one-out| on a scale chosen (relative to the text's highest, or to uniform), each
model's class probabilities as bars, its top words by each measure, and what flips its decision (the fewest
words, in each measure's order, whose deletion changes it). A word is deleted by clicking it (a button of a
plain form: no script) and an edited text is compared with the pinned original (Δp, both texts shaded). The
address holds the whole state (`Look`), so that a view can be shared. Every text shown is escaped."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from markupsafe import Markup

from attnclf.data.text import tokenize
from attnclf.presentation.html import SPAN, by_peak, by_uniform, shade_words
from attnclf.presentation.site import address, page_of, query_of

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
    """The explorer (templates/explorer.html): the text box, and where a text was given, each model's view side
    by side (`gold`: the row's true label, where the text is a test row; `about`: what reading it took and its
    limits)."""
    # a text shown is pinned (kept as the original), so that an edit of it is compared; the measure, scale and
    # row kept where not the defaults (the address a text opens at stays short)
    pinned = look.pinned if look.pinned is not None else (look.text or None)
    chosen = {k: v for k, v in look.query().items() if k in ("shade", "scale", "row")}
    text_fields = [(k, v) for k, v in {"pinned": pinned, **chosen, "key": key}.items() if v is not None]
    # (the page's state as each form's hidden fields: a button of the form then adds `delete`)
    fields = list({**look.query(), **({"key": key} if key else {})}.items())
    return page_of(
        "explorer.html",
        "attnclf explorer",
        key,
        look=look,
        text_fields=text_fields,
        unpin=address("/", key, **look.query(pinned=None, row=None)) if look.compared else None,
        error=error,
        views=[model_view(v, look) for v in views],
        fields=fields,
        shades=[(what, tab(look, key, shade=m, chosen=look.shade)) for m, what, *_ in MEASURES],
        scales=[(what, tab(look, key, scale=s, chosen=look.scale)) for s, what in SCALES.items()],
        gold=gold,
        about=about,
        download=address("/explain.json", key, **look.query(shade=None, scale=None)),
    )


def tab(look: Look, key: str | None, chosen: str, **change) -> str | None:
    """A choice's link (the address keeps it), or None for the one chosen."""
    return None if chosen in change.values() else address("/", key, **look.query(**change))


def measure_of(look: Look) -> tuple[str, str, str]:
    """The chosen measure: what it is called, /explain's key of its values and of its flip."""
    return next(tuple(rest) for m, *rest in MEASURES if m == look.shade)


def model_view(view: dict, look: Look) -> dict:
    """One model's reading as the page shows it: its name, run, decision (against the pinned original's), taus,
    what flips it, the text shaded by the chosen measure (each word a button that deletes it, the measure's
    flip words outlined), the pinned original shaded beside an edit, and its top words."""
    p, ex = view["prediction"], view["explained"]
    what, values_key, flip_key = measure_of(look)
    values = ex[values_key] if values_key != "weights" else p.weights
    scale = by_peak if look.scale == "max" else by_uniform
    # (html.shade_words escapes each word it writes: the shaded texts go in as they are)
    shaded = shade_words(p, values, what, scale, button=True, marked=ex["flip"][flip_key]["words"])
    return {
        "name": view["name"],
        "about": view["about"],
        "decision": decision(view, look),
        "tau_gradient": tau_shown(ex["tau"]["gradient"]),
        "tau_loo": tau_shown(ex["tau"]["leave_one_out"]),
        "truncated": p.truncated,
        "rows": len(ex["rows"]) if ex.get("rows") else None,
        "within": ex["flip_within"],
        "flips": flips(view),
        "legend": scale_legend(values, what, look.scale),
        "shaded": Markup(shaded),
        "pinned": pinned_view(view, look, what, scale),
        "tops": top_words(view),
    }


def tau_shown(tau: float | None) -> str:
    return "n/a" if tau is None else f"{tau:.2f}"


def decision(view: dict, look: Look) -> dict:
    """The predicted label and every class's probability as a bar; beside an edit, the pinned original's
    label and the change (Δp) of the original's class's probability."""
    p, labels = view["prediction"], view["labels"]
    digits = telling_digits(p.probs, labels.index(p.label_name))
    bars = [
        {"name": name, "width": f"{q:.1%}", "shown": f"{q:.{digits}f}", "predicted": name == p.label_name}
        for name, q in zip(labels, p.probs, strict=True)
    ]
    said = {"label": p.label_name, "prob": f"{p.prob:.3f}", "bars": bars, "was": None}
    if not look.compared or view.get("pinned") is None:
        return said
    was = view["pinned"]["prediction"]
    k = labels.index(was.label_name)
    delta = p.probs[k] - was.probs[k]
    return {
        **said,
        "was": was.label_name,
        "was_prob": f"{was.prob:.3f}",
        "now": f"{p.probs[k]:.3f}",
        "delta": f"{delta:+.3f}",
        "flipped": was.label_name != p.label_name,
    }


def telling_digits(probs: list[float], chosen: int) -> int:
    """The decimals (3 at least, 6 at most) at which the predicted class's probability reads above every other:
    after a flip two classes can both read 0.500."""
    for digits in range(3, 7):
        shown = [round(q, digits) for q in probs]
        if all(shown[chosen] > q for j, q in enumerate(shown) if j != chosen):
            return digits
    return 6


def flips(view: dict) -> list[dict]:
    """What flips the decision in each measure's order: a count (None: not within flip_within words), and the
    words' places among the text's tokens (a button deletes them)."""
    p, ex = view["prediction"], view["explained"]
    places = p.positions or list(range(len(p.tokens)))
    out = []
    for _, what, _, flip_key in MEASURES:
        f = ex["flip"][flip_key]
        words = ",".join(str(places[j]) for j in f["words"])
        out.append({"what": what, "key": flip_key, "count": f["count"], "words": words})
    return out


def scale_legend(values: list, what: str, scale: str) -> dict:
    """What the shading means, with its numbers: the text's highest (`peak`, the scale relative to it), or the
    shares at the uniform scale's ends and its white."""
    finite = [0.0 if v is None else v for v in values]
    if scale == "max":
        return {"what": what, "peak": f"{max(finite, default=0.0):.4g}"}
    n = len(finite)
    return {
        "what": what,
        "peak": None,
        "low": f"{1 / (SPAN * n):.3g}",
        "high": f"{SPAN / n:.3g}",
        "uniform": f"{1 / n:.3g}",
        "span": SPAN,
        "n": n,
    }


def pinned_view(view: dict, look: Look, what: str, scale) -> Markup | None:
    """The pinned original, shaded as the text is, the words the edit deleted struck through, beside an edit."""
    if not look.compared or view.get("pinned") is None:
        return None
    was = view["pinned"]
    values_key = measure_of(look)[1]
    values = was["prediction"].weights if values_key == "weights" else was["explained"][values_key]
    # (escaped word by word by html.shade_words)
    return Markup(shade_words(was["prediction"], values, what, scale, struck=deleted_places(look.pinned, look.text)))


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


def top_words(view: dict, k: int = 5) -> list[tuple[str, list]]:
    """The words each measure ranks highest, one entry a word: (word, its highest value, how many places hold
    it), by measure."""
    p, ex = view["prediction"], view["explained"]
    out = []
    for _, what, values_key, _ in MEASURES:
        values = p.weights if values_key == "weights" else [-1.0 if v is None else v for v in ex[values_key]]
        out.append((what, [(word, f"{value:.3g}", n) for word, value, n in by_word(p.tokens, values)[:k]]))
    return out
