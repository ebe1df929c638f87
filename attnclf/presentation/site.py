"""What the served pages share: their style, their header (links to each page) and links that carry the API
key. Plain HTML and CSS, nothing fetched from elsewhere: the pages work offline."""

from __future__ import annotations

from dataclasses import asdict, replace
from urllib.parse import urlencode

from markupsafe import Markup

from attnclf.presentation.html import STYLE
from attnclf.presentation.templating import ENV, render

SITE_STYLE = (
    "<style>body{max-width:96em;padding:0 1em} *{box-sizing:border-box} textarea{width:100%;font:inherit} "
    "button{font:inherit;padding:.2em 1em} .models{display:grid;gap:1.5em;"
    "grid-template-columns:repeat(auto-fit,minmax(22em,1fr))} .model{border:1px solid #ddd;border-radius:6px;"
    "padding:0 1em} .about{color:#666;font-size:90%} .error{color:#b00} "
    "table{border-collapse:collapse} td,th{border-bottom:1px solid #eee;padding:2px 8px;text-align:left;"
    "vertical-align:top} .wrong{color:#b00} pre{background:#f6f6f6;padding:.5em;overflow:auto} "
    ".bar{display:inline-block;height:.8em;background:#4a7;vertical-align:middle} "
    ".track{display:inline-block;width:10em;background:#eee;vertical-align:middle;margin:0 .5em} "
    ".scale{display:inline-block;width:12em;height:.9em;vertical-align:middle;border:1px solid #ccc} "
    ".tabs a,.tabs b{margin-right:1em} .grid{display:flex;flex-wrap:wrap;gap:1.5em} .num{text-align:right} "
    ".matrices{display:grid;gap:1.5em;grid-template-columns:repeat(auto-fill,minmax(20em,1fr));align-items:start} "
    "del.w{text-decoration:line-through 2px}"
    "</style>"
)


def query_of(state, **change) -> dict:
    """A page's state (a dataclass of its query's keys) as a link's query: the keys that differ from the
    class's defaults, with `change` over them (None: left out)."""
    given = asdict(replace(state, **change))
    return {k: v for k, v in given.items() if v != getattr(type(state), k) and v is not None}


def address(path: str, key: str | None, **params) -> str:
    """An address within the server, carrying the API key where one is in use (a list value: the key
    repeated)."""
    query = {k: v for k, v in params.items() if v is not None}
    if key:
        query["key"] = key
    return path + ("?" + urlencode(query, doseq=True) if query else "")


# the templates' links: escaped where they are put, as every value is
ENV.globals["address"] = address


def head(title: str, key: str | None) -> str:
    """A page's head: its title, the style and the links to each page."""
    return page_of("head.html", title, key)


def page_of(template: str, title: str, key: str | None, refresh: int | None = None, **values) -> str:
    """A page rendered from `template`, which includes head.html: its title, the style and the links to each
    page (carrying `key`); `refresh`: seconds after which the browser asks for the page again, without script."""
    style = Markup(STYLE + SITE_STYLE)  # (ours: put in the page as it is)
    return render(template, title=title, key=key, refresh=refresh, style=style, **values)
