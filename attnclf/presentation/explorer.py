"""The served pages: the explorer (a text read by every served model side by side, each word shaded by
attention, |gradient x input| or |leave-one-out|), /browse (a run's test rows to pick from) and /docs (the
API described from its OpenAPI schema). Plain HTML and CSS, nothing fetched from elsewhere: the pages work
offline. Every text shown is escaped."""

from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import asdict, dataclass, replace
from urllib.parse import urlencode

from attnclf.data.text import tokenize
from attnclf.presentation.html import STYLE, legend, shade_words

# (id, what the legend says, what a word's hover says)
MEASURES = (
    ("attention", "Attention weight", "attention"),
    ("gradient", "|gradient x input|", "|gradient x input|"),
    ("loo", "|leave-one-out|", "|leave-one-out|"),
)
EXPLORER_STYLE = (
    "<style>body{max-width:96em;padding:0 1em} *{box-sizing:border-box} textarea{width:100%;font:inherit} "
    "button{font:inherit;padding:.2em 1em} .models{display:grid;gap:1.5em;"
    "grid-template-columns:repeat(auto-fit,minmax(22em,1fr))} .model{border:1px solid #ddd;border-radius:6px;"
    "padding:0 1em} .by{display:none} .about{color:#666;font-size:90%} .error{color:#b00} "
    "table{border-collapse:collapse} td,th{border-bottom:1px solid #eee;padding:2px 8px;text-align:left;"
    "vertical-align:top} .wrong{color:#b00} pre{background:#f6f6f6;padding:.5em;overflow:auto} "
    + " ".join(f"#shade-{m}:checked ~ * .by-{m}, #shade-{m}:checked ~ .by-{m}{{display:block}}" for m, *_ in MEASURES)
    + "</style>"
)


def link(path: str, key: str | None, **params) -> str:
    """A link within the server, carrying the API key where one is in use."""
    query = {k: v for k, v in params.items() if v is not None}
    if key:
        query["key"] = key
    return html.escape(path + ("?" + urlencode(query) if query else ""))


def head(title: str, key: str | None) -> str:
    nav = f"<a href='{link('/', key)}'>explorer</a> · <a href='{link('/browse', key)}'>browse test rows</a> · "
    return (
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>{STYLE}{EXPLORER_STYLE}"
        f"<p><b>attnclf</b> · {nav}<a href='{link('/docs', key)}'>API</a></p>"
    )


def tau_text(tau: dict) -> str:
    def shown(v):
        return "n/a" if v is None else f"{v:.2f}"

    return (
        f"Kendall tau of the attention against |gradient x input| <b class='tau'>{shown(tau['gradient'])}</b>, "
        f"against |leave-one-out| <b class='tau'>{shown(tau['leave_one_out'])}</b>"
    )


def model_view(view: dict) -> str:
    """One model's reading: its name, run, decision, this text's taus and the text shaded three ways."""
    p, ex = view["prediction"], view["explained"]
    scores = {"attention": None, "gradient": ex["gradient"], "loo": ex["leave_one_out"]}
    shaded = "".join(f"<p class='by by-{m}'>{shade_words(p, scores[m], hover)}</p>" for m, _, hover in MEASURES)
    notes = "<p class='about'>Cut to the run's length: the grey words were not read.</p>" if p.truncated else ""
    rows = ex.get("rows")
    if rows:
        notes += f"<p class='about'>Its weights are the mean of its {len(rows)} rows (heads or hops).</p>"
    return (
        f"<section class='model' data-model='{html.escape(view['name'])}'><h2>{html.escape(view['name'])}</h2>"
        f"<p class='about'>{html.escape(view['about'])}</p>"
        f"<p>predicted <b class='label'>{html.escape(p.label_name)}</b> (p = {p.prob:.3f})</p>"
        f"<p class='about'>{tau_text(ex['tau'])}</p>{notes}{shaded}</section>"
    )


def explorer_page(
    text: str, views: list[dict], key: str | None = None, gold: str | None = None, error: str | None = None
) -> str:
    """The explorer: the text box, and where a text was given, each model's view side by side (`gold`: the
    row's true label, where the text is a test row)."""
    parts = [
        head("attnclf explorer", key),
        "<p class='about'>Every served model reads the text; each word is shaded by the measure chosen below, "
        "and each model says how far its attention agrees with what its decision rests on (Kendall tau).</p>",
        "<form method='get' action='/'>",
        f"<textarea name='text' rows='3' placeholder='Type or paste a text'>{html.escape(text)}</textarea>",
        f"<input type='hidden' name='key' value='{html.escape(key)}'>" if key else "",
        "<p><button type='submit'>Read it</button></p></form>",
    ]
    if error:
        parts.append(f"<p class='error'>{html.escape(error)}</p>")
    if views:
        parts += [
            f"<input type='radio' name='shade' id='shade-{m}'{' checked' if m == 'attention' else ''}>"
            f"<label for='shade-{m}'>{html.escape(what)}</label> "
            for m, what, _ in MEASURES
        ]
        truncated = any(v["prediction"].truncated for v in views)
        parts += [f"<div class='by by-{m}'>{legend(truncated, what)}</div>" for m, what, _ in MEASURES]
        if gold is not None:
            parts.append(f"<p>true label: <b class='gold'>{html.escape(gold)}</b></p>")
        parts.append("<div class='models'>" + "".join(model_view(v) for v in views) + "</div>")
    return "\n".join(parts) + "\n"


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
    page: int = 1

    def query(self, **change) -> dict:
        """The keys that differ from the defaults, with `change` over them: a link's query."""
        given = asdict(replace(self, **change))
        return {k: v for k, v in given.items() if v != getattr(Selection, k)}


def selected(rows: list[dict], sel: Selection) -> list[dict]:
    """The rows `sel` selects, in its order (every page)."""
    word = sel.word.lower() if sel.word else None
    return [
        r
        for r in ordered(rows, sel.order)
        if (sel.label is None or r["label"] == sel.label)
        and (sel.wrong is None or r["models"][sel.wrong]["label"] != r["label"])
        and (word is None or word in tokenize(r["text"]))
    ]


def browse_page(
    rows: list[dict], names: list[str], sel: Selection, about: str, key: str | None = None, offered=tuple(ORDERS)
) -> str:
    """/browse: the sampled test rows, each model's label, probability and tau; each row opens in the explorer.
    `offered`: the orders that apply (the models' disagreement only where two or more are served)."""
    orders = " · ".join(
        f"<b>{html.escape(ORDERS[o])}</b>"
        if o == sel.order
        else f"<a href='{link('/browse', key, **sel.query(order=o, page=1))}'>{html.escape(ORDERS[o])}</a>"
        for o in offered
    )
    chosen = selected(rows, sel)
    pages = max(1, -(-len(chosen) // PAGE_ROWS))
    page = min(sel.page, pages)
    shown = chosen[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]
    csv_query = sel.query(page=1)
    download = f"<a href='{link('/browse.csv', key, **csv_query)}' download>these rows as CSV</a>"
    header = "".join(f"<th>{html.escape(n)}</th><th title='{TAU_COLUMN}'>tau vs |grad x input|</th>" for n in names)
    return (
        head("attnclf: browse", key)
        + f"<p class='about'>{html.escape(about)}</p><p>First where: {orders}</p>"
        + filters_form(rows, names, sel, key)
        + f"<p>{paging(len(chosen), page, pages, sel, key)} · {download}</p>"
        + f"<table><tr><th>row</th><th>true</th>{header}<th>text</th></tr>\n"
        + "\n".join(browse_row(r, names, key) for r in shown)
        + "</table>\n"
    )


def browse_row(r: dict, names: list[str], key: str | None) -> str:
    cells = []
    for n in names:
        m = r["models"][n]
        wrong = " class='wrong'" if m["label"] != r["label"] else ""
        tau = "n/a" if m["tau"] is None else f"{m['tau']:.2f}"
        cells.append(f"<td{wrong}>{html.escape(m['label'])} ({m['prob']:.2f})</td><td>{tau}</td>")
    preview = " ".join(r["text"].split())[:100]
    return (
        f"<tr><td><a href='{link('/', key, row=r['row'])}'>{r['row']}</a></td><td>{html.escape(r['label'])}</td>"
        + "".join(cells)
        + f"<td>{html.escape(preview)}</td></tr>"
    )


def filters_form(rows: list[dict], names: list[str], sel: Selection, key: str | None) -> str:
    """The filters as a plain GET form (no script): a word, the true label, a model's mistakes."""

    def options(values, chosen):
        first = "<option value=''>any</option>"
        return first + "".join(f"<option{' selected' if v == chosen else ''}>{html.escape(v)}</option>" for v in values)

    labels = sorted({r["label"] for r in rows})
    hidden = {"order": sel.order, **({"key": key} if key else {})}
    return (
        "<form method='get' action='/browse'>"
        + "".join(f"<input type='hidden' name='{k}' value='{html.escape(v)}'>" for k, v in hidden.items())
        + f"word <input name='word' value='{html.escape(sel.word or '')}'> "
        + f"true label <select name='label'>{options(labels, sel.label)}</select> "
        + f"misclassified by <select name='wrong'>{options(names, sel.wrong)}</select> "
        + "<button>show</button></form>"
    )


def paging(count: int, page: int, pages: int, sel: Selection, key: str | None) -> str:
    """ "rows a-b of n", with links to the pages before and after."""
    first, last = (page - 1) * PAGE_ROWS + 1, min(page * PAGE_ROWS, count)
    said = f"rows {first}-{last} of {count}" if count else "no row is selected"
    before = f"<a href='{link('/browse', key, **sel.query(page=page - 1))}'>previous</a> " if page > 1 else ""
    after = f" <a href='{link('/browse', key, **sel.query(page=page + 1))}'>next</a>" if page < pages else ""
    return before + said + after


def browse_csv(rows: list[dict], names: list[str], sel: Selection) -> str:
    """/browse's selected rows as CSV, every page, in its order: the row, its true label, each model's label,
    probability and tau, and the whole text (the page shows its first words)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["row", "true", *(f"{n} {c}" for n in names for c in ("label", "prob", TAU_COLUMN)), "text"])
    for r in selected(rows, sel):
        models = [r["models"][n] for n in names]
        cells = [v for m in models for v in (m["label"], m["prob"], "" if m["tau"] is None else m["tau"])]
        writer.writerow([r["row"], r["label"], *cells, r["text"]])
    return out.getvalue()


def request_body(op: dict, schema: dict | None = None) -> dict | None:
    """A route's JSON request body's schema, its reference to the components followed where `schema` is given."""
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body and schema and "$ref" in body:
        return schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    return body


def curl_example(method: str, path: str, op: dict, body: dict | None, schema: dict, base: str) -> str:
    """A curl command for one route at `base` (the server's address) with its request `body`'s schema, the
    API key read from the environment where one is asked."""
    keyed = bool(schema.get("components", {}).get("securitySchemes")) and "security" in op
    parts = ["curl -s"]
    if keyed:
        parts.append('-H "X-API-Key: $ATTNCLF_API_KEY"')
    if method == "head":
        parts.append("-I")
    if body:
        example = {"texts": ["a wonderful film"]} if "texts" in json.dumps(body) else {"text": "a wonderful film"}
        parts.append(f"-H 'Content-Type: application/json' -d '{json.dumps(example)}'")
    parts.append(base.rstrip("/") + path)
    return " ".join(parts)


def docs_page(
    schema: dict, limits: list[tuple[str, str]], key: str | None = None, base: str = "http://127.0.0.1:8000"
) -> str:
    """/docs: each endpoint of the OpenAPI schema with its request, its answers and a curl example (at `base`,
    the server's address), and the limits; its links carry the API key where one is in use."""
    parts = [
        head("attnclf API", key),
        "<h1>attnclf API</h1>",
        f"<p>The whole schema, as OpenAPI JSON: <a href='{link('/openapi.json', key)}'>/openapi.json</a>.</p>",
    ]
    keyed = bool(schema.get("components", {}).get("securitySchemes"))
    if keyed:
        parts.append(
            "<p>Every endpoint but /health asks for the API key: the header X-API-Key, or Authorization: Bearer, "
            "or key= in the address.</p>"
        )
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            parts.append(f"<h2>{method.upper()} {html.escape(path)}</h2><p>{html.escape(op.get('summary', ''))}</p>")
            body = request_body(op, schema)
            if body:
                parts.append(f"<p>Request body:</p><pre>{html.escape(json.dumps(body, indent=1))}</pre>")
            codes = ", ".join(
                f"{c} {html.escape(r.get('description', ''))}" for c, r in op.get("responses", {}).items()
            )
            parts.append(f"<p>Answers: {codes}</p>")
            example = curl_example(method, path, op, body, schema, base)
            parts.append(f"<pre>{html.escape(example)}</pre>")
    parts.append("<h2>Limits</h2><ul>" + "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in limits))
    parts.append("</ul>")
    return "\n".join(parts) + "\n"
