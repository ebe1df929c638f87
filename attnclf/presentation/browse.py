"""/browse: a run's sampled test rows with every served model's decision, filtered and ordered by a plain GET
form (no script), paged; each model's accuracy over the selected rows, overall and by slice, and the agreement
matrix of every two models, each number a link to its rows; /browse.csv, the same rows to download."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from attnclf.data.text import TAG, tokenize
from attnclf.presentation.site import address, page_of, query_of

# /browse?order=...: what comes first
ORDERS = {
    "row": "the sample's order",
    "disagree": "the models disagree",
    "tau": "attention and gradient disagree most (lowest tau)",
    "misclassified": "a model is wrong",
}


def ordered(rows: list[dict], order: str) -> list[dict]:
    """/browse's rows in the order asked for (ties keep the sample's order)."""

    def lowest_tau(r):
        taus = [m["tau"] for m in r["models"].values() if m["tau"] is not None]
        return min(taus) if taus else float("inf")

    keys = {
        "row": lambda r: 0,
        "disagree": lambda r: -len({m["label"] for m in r["models"].values()}),
        "tau": lowest_tau,
        "misclassified": lambda r: -sum(m["label"] != r["label"] for m in r["models"].values()),
    }
    return sorted(rows, key=keys[order])


# /browse's rows a page
PAGE_ROWS = 50
# the tau of /browse's columns (the page's header says it in short, the CSV's header whole)
TAU_COLUMN = "tau (Kendall, attention vs |gradient x input|)"


@dataclass
class Selection:
    """Which of /browse's rows show, in what order: its query's keys (the CSV takes the same, less `page`)."""

    order: str = "row"
    # a word the text holds (as the tokenizer reads it: any case)
    word: str | None = None
    # the true label
    label: str | None = None
    # a model's name: the rows it misclassifies
    wrong: str | None = None
    # a length bucket (LENGTHS): the text's tokens
    length: str | None = None
    # "yes": the rows some served model cut to its run's length; "no": the others
    truncated: str | None = None
    # "model:label", each: the rows that model gives that label (an agreement matrix's cell)
    said: tuple[str, ...] = ()
    page: int = 1

    def query(self, **change) -> dict:
        """The keys that differ from the defaults, with `change` over them: a link's query."""
        return query_of(self, **change)


def selected(rows: list[dict], sel: Selection) -> list[dict]:
    """The rows `sel` selects, in its order (every page)."""
    word = sel.word.lower() if sel.word else None
    said = [s.split(":", 1) for s in sel.said]
    return [
        r
        for r in ordered(rows, sel.order)
        if (sel.label is None or r["label"] == sel.label)
        and (sel.wrong is None or r["models"][sel.wrong]["label"] != r["label"])
        and (sel.length is None or length_of(r) == sel.length)
        and (sel.truncated is None or ("yes" if r["truncated"] else "no") == sel.truncated)
        and all(r["models"][m]["label"] == label for m, label in said)
        and (word is None or word in tokenize(r["text"]))
    ]


# /browse's length buckets (tokens): the query's value, and what the page says
LENGTHS = {"1-100": "≤100 tokens", "101-300": "101–300 tokens", "301-": ">300 tokens"}


def length_of(row: dict) -> str:
    """The length bucket of a row (LENGTHS' key)."""
    n = row["tokens"]
    return "1-100" if n <= 100 else "101-300" if n <= 300 else "301-"


def last_page(chosen: list[dict]) -> int:
    """The number of /browse's last page over the `chosen` rows (1 where there are none)."""
    return max(1, -(-len(chosen) // PAGE_ROWS))


def browse_page(
    rows: list[dict],
    chosen: list[dict],
    names: list[str],
    sel: Selection,
    about: str,
    key: str | None = None,
    offered=tuple(ORDERS),
) -> str:
    """/browse (templates/browse.html): the sampled test rows, each model's label, probability and tau; each row
    opens in the explorer. `chosen`: the rows `sel` selects (selected(rows, sel)), its page at most their
    last_page; `offered`: the orders that apply (the models' disagreement only where two or more are served)."""
    page = sel.page
    shown = chosen[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]
    orders = [
        (ORDERS[o], None if o == sel.order else address("/browse", key, **sel.query(order=o, page=1))) for o in offered
    ]
    return page_of(
        "browse.html",
        "attnclf: browse",
        key,
        about=about,
        orders=orders,
        form=filters(rows, names, sel, key),
        metrics_=metrics(chosen, names, sel, key),
        pages=paging(len(chosen), page, last_page(chosen), sel, key),
        download=address("/browse.csv", key, **sel.query(page=1)),
        names=names,
        tau_column=TAU_COLUMN,
        rows=[browse_row(r, names, key) for r in shown],
    )


def preparing_page(progress: str, key: str | None) -> str:
    """/browse while its rows are prepared: how far they have got, looked at again every 5 s without script
    (a meta refresh; templates/preparing.html)."""
    return page_of("preparing.html", "attnclf: browse (being prepared)", key, refresh=5, progress=progress)


def browse_row(r: dict, names: list[str], key: str | None) -> dict:
    """A row of the table: its link to the explorer, true label, each model's label, probability and tau, and
    its first words."""
    models = [
        {
            "label": m["label"],
            "prob": f"{m['prob']:.2f}",
            "tau": "n/a" if m["tau"] is None else f"{m['tau']:.2f}",
            "wrong": m["label"] != r["label"],
        }
        for m in (r["models"][n] for n in names)
    ]
    href = address("/", key, row=r["row"])
    return {"href": href, "row": r["row"], "label": r["label"], "models": models, "preview": snippet(r["text"])}


def snippet(text: str, n: int = 100) -> str:
    """A row's first words as plain text: markup the tokenizer drops (<br />) read as a space, white space
    run together, cut at the last whole word within `n` characters (… where cut)."""
    plain = " ".join(TAG.sub(" ", text).split())
    if len(plain) <= n:
        return plain
    cut = plain[: n + 1].rsplit(" ", 1)[0] if " " in plain[:n] else plain[:n]
    return cut.rstrip() + " …"


def filters(rows: list[dict], names: list[str], sel: Selection, key: str | None) -> dict:
    """The filters as a plain GET form (no script): a word, the true label, a model's mistakes, the length,
    whether a model cut the text; the order and the matrices' choices kept as hidden fields."""
    return {
        "hidden": [("order", sel.order), *(("said", s) for s in sel.said), *([("key", key)] if key else [])],
        "word": sel.word or "",
        "labels": sorted({r["label"] for r in rows}),
        "label": sel.label,
        "names": names,
        "wrong": sel.wrong,
        "lengths": list(LENGTHS.items()),
        "length": sel.length,
        "truncated": sel.truncated,
        "clear_href": address("/browse", key),
        "said": ", ".join(sel.said),
    }


def metrics(rows: list[dict], names: list[str], sel: Selection, key: str | None) -> dict:
    """Each model's accuracy over the selected `rows`, overall and by slice, and every two models' agreement
    matrix; each number a link to its rows."""
    slices = [("all selected", {})]
    slices += [(f"true label {v}", {"label": v}) for v in sorted({r["label"] for r in rows})]
    slices += [(v, {"length": k}) for k, v in LENGTHS.items()]
    slices += [("cut to a run's length", {"truncated": "yes"}), ("read whole", {"truncated": "no"})]
    lines = []
    for what, change in slices:
        # (the rows are the selection's already: only the slice's own key is left to filter by)
        these = selected(rows, Selection(**change))
        here = sel.query(**change, page=1)
        cells = [accuracy_cell(these, n, address("/browse", key, **{**here, "wrong": n})) for n in names]
        lines.append({"what": what, "href": address("/browse", key, **here), "count": len(these), "cells": cells})
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    matrices = [agreement_matrix(rows, a, b, sel, key) for a, b in pairs] if rows else []
    return {"names": names, "slices": lines, "any": bool(rows), "matrices": matrices}


def accuracy_cell(rows: list[dict], name: str, mistakes: str) -> dict | None:
    """A model's accuracy over `rows`, linked to the rows it gets wrong (`mistakes`); None where no rows."""
    if not rows:
        return None
    right = sum(r["models"][name]["label"] == r["label"] for r in rows)
    return {"href": mistakes, "accuracy": f"{right / len(rows):.1%}"}


def agreement_matrix(rows: list[dict], a: str, b: str, sel: Selection, key: str | None) -> dict:
    """Model a's label (rows) against model b's (columns): each cell its rows' count (a link to them) and how
    often each model is right there."""
    labels = sorted({r["label"] for r in rows} | {m["label"] for r in rows for m in r["models"].values()})
    lines = []
    for x in labels:
        cells = []
        for y in labels:
            these = [r for r in rows if r["models"][a]["label"] == x and r["models"][b]["label"] == y]
            right = f"right {share(these, x)}" if x == y else f"{a} right {share(these, x)}, {b} {share(these, y)}"
            href = address("/browse", key, **sel.query(said=(f"{a}:{x}", f"{b}:{y}"), page=1))
            cells.append({"href": href, "count": len(these), "right": right if these else ""})
        lines.append((x, cells))
    return {"a": a, "b": b, "labels": labels, "lines": lines}


def share(rows: list[dict], label: str) -> str:
    """How many of `rows` are truly `label`, as a percentage."""
    return f"{sum(r['label'] == label for r in rows) / len(rows):.0%}" if rows else ""


def paging(count: int, page: int, pages: int, sel: Selection, key: str | None) -> dict:
    """ "rows a-b of n", with links to the pages before and after (None where there is none)."""
    first, last = (page - 1) * PAGE_ROWS + 1, min(page * PAGE_ROWS, count)
    return {
        "said": f"rows {first}-{last} of {count}" if count else "no row is selected",
        "previous": address("/browse", key, **sel.query(page=page - 1)) if page > 1 else None,
        "next": address("/browse", key, **sel.query(page=page + 1)) if page < pages else None,
    }


def browse_csv(rows: list[dict], names: list[str], sel: Selection) -> str:
    """/browse's selected rows as CSV, every page, in its order: the row, its true label, each model's label,
    probability and tau, its tokens, whether a model cut it, and the whole text (the page shows its first words)."""
    out = io.StringIO()
    writer = csv.writer(out)
    columns = [f"{n} {c}" for n in names for c in ("label", "prob", TAU_COLUMN)]
    writer.writerow(["row", "true", *columns, "tokens", "truncated", "text"])
    for r in selected(rows, sel):
        models = [r["models"][n] for n in names]
        cells = [v for m in models for v in (m["label"], m["prob"], "" if m["tau"] is None else m["tau"])]
        writer.writerow([r["row"], r["label"], *cells, r["tokens"], "yes" if r["truncated"] else "no", r["text"]])
    return out.getvalue()
