"""/browse: a run's sampled test rows with every served model's decision, filtered and ordered by a plain GET
form (no script), paged; each model's accuracy over the selected rows, overall and by slice, and the agreement
matrix of every two models, each number a link to its rows; /browse.csv, the same rows to download."""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass

from attnclf.data.text import TAG, tokenize
from attnclf.presentation.site import head, link, page_of, query_of

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
    """/browse: the sampled test rows, each model's label, probability and tau; each row opens in the explorer.
    `chosen`: the rows `sel` selects (selected(rows, sel)), its page at most their last_page; `offered`: the
    orders that apply (the models' disagreement only where two or more are served)."""
    orders = " · ".join(
        f"<b>{html.escape(ORDERS[o])}</b>"
        if o == sel.order
        else f"<a href='{link('/browse', key, **sel.query(order=o, page=1))}'>{html.escape(ORDERS[o])}</a>"
        for o in offered
    )
    page, pages = sel.page, last_page(chosen)
    shown = chosen[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]
    csv_query = sel.query(page=1)
    download = f"<a href='{link('/browse.csv', key, **csv_query)}' download>these rows as CSV</a>"
    header = "".join(f"<th>{html.escape(n)}</th><th title='{TAU_COLUMN}'>tau vs |grad x input|</th>" for n in names)
    return (
        head("attnclf: browse", key)
        + f"<p class='about'>{html.escape(about)}</p><p>First where: {orders}</p>"
        + filters_form(rows, names, sel, key)
        + metrics(chosen, names, sel, key)
        + f"<p>{paging(len(chosen), page, pages, sel, key)} · {download}</p>"
        + f"<table><tr><th>row</th><th>true</th>{header}<th>text</th></tr>\n"
        + "\n".join(browse_row(r, names, key) for r in shown)
        + "</table>\n"
    )


def preparing_page(progress: str, key: str | None) -> str:
    """/browse while its rows are prepared: how far they have got, looked at again every 5 s without script
    (a meta refresh; templates/preparing.html)."""
    return page_of("preparing.html", "attnclf: browse (being prepared)", key, refresh=5, progress=progress)


def browse_row(r: dict, names: list[str], key: str | None) -> str:
    cells = []
    for n in names:
        m = r["models"][n]
        wrong = " class='wrong'" if m["label"] != r["label"] else ""
        tau = "n/a" if m["tau"] is None else f"{m['tau']:.2f}"
        cells.append(f"<td{wrong}>{html.escape(m['label'])} ({m['prob']:.2f})</td><td>{tau}</td>")
    preview = snippet(r["text"])
    return (
        f"<tr><td><a href='{link('/', key, row=r['row'])}'>{r['row']}</a></td><td>{html.escape(r['label'])}</td>"
        + "".join(cells)
        + f"<td>{html.escape(preview)}</td></tr>"
    )


def snippet(text: str, n: int = 100) -> str:
    """A row's first words as plain text: markup the tokenizer drops (<br />) read as a space, white space
    run together, cut at the last whole word within `n` characters (… where cut)."""
    plain = " ".join(TAG.sub(" ", text).split())
    if len(plain) <= n:
        return plain
    cut = plain[: n + 1].rsplit(" ", 1)[0] if " " in plain[:n] else plain[:n]
    return cut.rstrip() + " …"


def filters_form(rows: list[dict], names: list[str], sel: Selection, key: str | None) -> str:
    """The filters as a plain GET form (no script): a word, the true label, a model's mistakes."""

    def options(values, chosen):
        first = "<option value=''>any</option>"
        return first + "".join(f"<option{' selected' if v == chosen else ''}>{html.escape(v)}</option>" for v in values)

    labels = sorted({r["label"] for r in rows})
    hidden = [("order", sel.order), *(("said", s) for s in sel.said), *([("key", key)] if key else [])]
    lengths = "".join(
        f"<option value='{k}'{' selected' if k == sel.length else ''}>{html.escape(v)}</option>"
        for k, v in LENGTHS.items()
    )
    said = f" · models said {html.escape(', '.join(sel.said))}" if sel.said else ""
    return (
        "<form method='get' action='/browse'>"
        + "".join(f"<input type='hidden' name='{k}' value='{html.escape(v)}'>" for k, v in hidden)
        + f"word <input name='word' value='{html.escape(sel.word or '')}'> "
        + f"true label <select name='label'>{options(labels, sel.label)}</select> "
        + f"misclassified by <select name='wrong'>{options(names, sel.wrong)}</select> "
        + f"length <select name='length'><option value=''>any</option>{lengths}</select> "
        + f"cut to a run's length <select name='truncated'>{options(['yes', 'no'], sel.truncated)}</select> "
        + f"<button>show</button> <a href='{link('/browse', key)}'>clear</a>{said}</form>"
    )


def metrics(rows: list[dict], names: list[str], sel: Selection, key: str | None) -> str:
    """Each model's accuracy over the selected `rows`, overall and by slice, and every two models' agreement
    matrix; each number a link to its rows."""
    slices = [("all selected", {})]
    slices += [(f"true label {v}", {"label": v}) for v in sorted({r["label"] for r in rows})]
    slices += [(v, {"length": k}) for k, v in LENGTHS.items()]
    slices += [("cut to a run's length", {"truncated": "yes"}), ("read whole", {"truncated": "no"})]
    head_row = "".join(f"<th>{html.escape(n)} accuracy</th>" for n in names)
    lines = []
    for what, change in slices:
        # (the rows are the selection's already: only the slice's own key is left to filter by)
        these = selected(rows, Selection(**change))
        here = sel.query(**change, page=1)
        cells = "".join(accuracy_cell(these, n, link("/browse", key, **{**here, "wrong": n})) for n in names)
        lines.append(
            f"<tr><td>{html.escape(what)}</td><td class='num'><a href='{link('/browse', key, **here)}'>"
            f"{len(these)}</a></td>{cells}</tr>"
        )
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    matrices = "".join(agreement_matrix(rows, a, b, sel, key) for a, b in pairs) if rows else ""
    return (
        "<details open><summary>Accuracy and agreement of the selected rows</summary>"
        f"<table class='metrics'><tr><th>slice</th><th>rows</th>{head_row}</tr>{''.join(lines)}</table>"
        + (
            f"<p>Every two models: rows one's label, columns the other's</p><div class='matrices'>{matrices}</div>"
            if pairs and rows
            else "<p class='about'>no rows: the selection holds none; clear a filter</p>"
            if not rows
            else ""
        )
        + "</details>"
    )


def accuracy_cell(rows: list[dict], name: str, mistakes: str) -> str:
    """A model's accuracy over `rows`, linked to the rows it gets wrong (`mistakes`)."""
    if not rows:
        return "<td class='num'>–</td>"
    right = sum(r["models"][name]["label"] == r["label"] for r in rows)
    return f"<td class='num'><a href='{mistakes}' title='the rows it gets wrong'>{right / len(rows):.1%}</a></td>"


def agreement_matrix(rows: list[dict], a: str, b: str, sel: Selection, key: str | None) -> str:
    """Model a's label (rows) against model b's (columns): each cell its rows' count (a link to them) and how
    often each model is right there."""
    labels = sorted({r["label"] for r in rows} | {m["label"] for r in rows for m in r["models"].values()})
    cols = "".join(f"<th>{html.escape(y)}</th>" for y in labels)
    lines = []
    for x in labels:
        cells = []
        for y in labels:
            said = (f"{a}:{x}", f"{b}:{y}")
            these = [r for r in rows if r["models"][a]["label"] == x and r["models"][b]["label"] == y]
            right = (
                f"right {share(these, x)}"
                if x == y
                else f"{html.escape(a)} right {share(these, x)}, {html.escape(b)} {share(these, y)}"
            )
            cells.append(
                f"<td class='cell'><a href='{link('/browse', key, **sel.query(said=said, page=1))}'>{len(these)}</a>"
                f"<br><span class='about'>{right if these else ''}</span></td>"
            )
        lines.append(f"<tr><th>{html.escape(x)}</th>{''.join(cells)}</tr>")
    return (
        f"<table class='matrix' data-pair='{html.escape(a)} {html.escape(b)}'><caption>{html.escape(a)} "
        f"(rows) against {html.escape(b)} (columns)</caption><tr><th></th>{cols}</tr>{''.join(lines)}</table>"
    )


def share(rows: list[dict], label: str) -> str:
    """How many of `rows` are truly `label`, as a percentage."""
    return f"{sum(r['label'] == label for r in rows) / len(rows):.0%}" if rows else ""


def paging(count: int, page: int, pages: int, sel: Selection, key: str | None) -> str:
    """ "rows a-b of n", with links to the pages before and after."""
    first, last = (page - 1) * PAGE_ROWS + 1, min(page * PAGE_ROWS, count)
    said = f"rows {first}-{last} of {count}" if count else "no row is selected"
    before = f"<a href='{link('/browse', key, **sel.query(page=page - 1))}'>previous</a> " if page > 1 else ""
    after = f" <a href='{link('/browse', key, **sel.query(page=page + 1))}'>next</a>" if page < pages else ""
    return before + said + after


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
