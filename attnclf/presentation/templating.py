"""The served pages' templates (attnclf/presentation/templates/), rendered by Jinja2 with autoescaping on: a
value put in a page is escaped unless a template marks it safe, so that no text a user or a model sends can
become markup. `render(name, **values)` gives the page as a string."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined

# (a value missing from a render is an error, not an empty string)
ENV = Environment(
    loader=PackageLoader("attnclf.presentation", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
# (presentation/site.py adds `address`, a link within the server carrying the API key, to its globals)


def render(name: str, **values) -> str:
    return ENV.get_template(name).render(**values)
