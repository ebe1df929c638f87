"""A request's refusal in one line: pydantic's first error about a request, said as the field and what is
allowed, with its status (413 for a limit, 400 for a body that is not JSON, 422 for the rest)."""

from __future__ import annotations

from attnclf.serving.schema import NOT_BLANK
from attnclf.settings.serve import ServeConfig

# characters of a value a request sent that an answer or a log line shows
SHOWN = 40
EXAMPLES = {"texts": '{"texts": ["a review", ...]}', "text": '{"text": "a review"}'}


def cut(value, n: int = SHOWN) -> str:
    """A value a request sent, as shown back: its first `n` characters, and how long it was where longer."""
    text = str(value)
    return text if len(text) <= n else f"{text[:n]}... ({len(text)} characters)"


def shown(value) -> str:
    """A value, quoted (strings, cut) or said in words (anything else)."""
    if isinstance(value, str):
        return repr(cut(value))
    return kind(value)


def kind(value) -> str:
    """What a JSON value is, in words."""
    names = {bool: "true or false", int: "a number", float: "a number", str: "a string", list: "a list"}
    return names.get(type(value), {dict: "an object", type(None): "null"}.get(type(value), type(value).__name__))


def field_of(loc: tuple) -> tuple[str, str]:
    """(where the request put it, the field as said: texts[1], text, model)."""
    where, *path = loc
    said = "".join(f"[{p}]" if isinstance(p, int) else ("." if i else "") + str(p) for i, p in enumerate(path))
    return where, said


def refusal_of(error: dict, s: ServeConfig, names: list[str], fields: list[str]) -> tuple[int, str]:
    """(status, one line) for pydantic's error `error` on a request to a route whose body has `fields`."""
    kind_of, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    where, field = field_of(tuple(error["loc"]))
    body_field = field.split("[")[0]
    if kind_of == "json_invalid":
        return 400, f"the body is not valid JSON: {ctx.get('error', 'malformed')}"
    if kind_of in ("model_attributes_type", "model_type", "dict_type") and not field:
        return 422, f"the body is {kind(value)}; send an object"
    if kind_of == "missing" and field == "model":
        return 422, f"model is missing: {len(names)} models are served; give one of: {', '.join(names)}"
    if kind_of == "missing":
        return 422, f"{field} is missing; send {EXAMPLES.get(field, 'it')}"
    if kind_of == "extra_forbidden":
        return 422, f"{field!r} is not a field; allowed: {', '.join(fields)}"
    if kind_of == "literal_error" and field == "model":
        return 422, f"model={shown(value)} is not served; allowed: {', '.join(names)}"
    if kind_of == "literal_error":
        return 422, f"{field}={shown(value)}; allowed: {ctx.get('expected', '')}"
    if kind_of == "list_type":
        return 422, f'{field} is {kind(value)}; it must be a list of strings: ["a review", ...]'
    if kind_of == "too_short" and body_field == "texts":
        return 422, f"texts is empty; give 1 to {s.max_texts} texts"
    if kind_of == "too_long" and body_field == "texts":
        return 413, f"texts holds {len(value)} texts; at most {s.max_texts} a request (max_texts)"
    if kind_of == "string_type":
        return 422, f"{field} is {kind(value)}; each text must be a string"
    # (a text's pattern asks for something besides spaces; it is the only pattern today, the pages' keys being
    # checked in words, serving/queries.py, but a pattern added later must not read as an empty text)
    if kind_of == "string_too_short" or (kind_of == "string_pattern_mismatch" and ctx.get("pattern") == NOT_BLANK):
        return 422, f"{field} is empty (or only spaces): nothing to classify"
    # (a key's check in words: serving/queries.py)
    if kind_of == "value_error":
        return 422, f"{field}={shown(value)}: {ctx.get('error')}"
    if kind_of == "string_too_long":
        limit = ctx.get("max_length", s.max_text_chars)
        setting = " (max_text_chars)" if limit == s.max_text_chars else ""
        return 413, f"{field} has {len(value)} characters; at most {limit}{setting}"
    return 422, f"{field or where}: {error.get('msg', 'not allowed')}"
