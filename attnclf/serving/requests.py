"""A request's body read and checked by hand: every refusal is a `Refused` with its status and one line
naming the field and what is allowed."""

from __future__ import annotations

import json

from starlette.requests import Request


class Refused(Exception):
    """A request the server will not answer: its status (4xx, or 503 for a full queue) and one line."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def kind(value) -> str:
    """What a JSON value is, in words."""
    names = {
        bool: "true or false",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


async def json_body(request: Request, max_bytes: int):
    """The request's body as JSON: application/json of at most `max_bytes` bytes, read as it arrives."""
    ctype = request.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        raise Refused(415, f"Content-Type {ctype or '(none)'!r} is not accepted; send application/json")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise Refused(413, f"the body has {declared} bytes; at most {max_bytes} (max_body_bytes)")
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > max_bytes:
            raise Refused(413, f"the body has more than {max_bytes} bytes (max_body_bytes)")
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refused(400, "the body is not UTF-8 text; send JSON in UTF-8") from None
    except json.JSONDecodeError as e:
        raise Refused(400, f"the body is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None


def fields_of(body, allowed: tuple[str, ...], example: str) -> dict:
    """The body as an object holding only `allowed` keys."""
    if not isinstance(body, dict):
        raise Refused(422, f"the body is {kind(body)}; send an object: {example}")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise Refused(422, f"{unknown[0]!r} is not a field; allowed: {', '.join(allowed)}")
    return body


def text_of(value, where: str, max_chars: int) -> str:
    """One text: a string, not empty or only spaces, of at most `max_chars` characters."""
    if not isinstance(value, str):
        raise Refused(422, f"{where} is {kind(value)}; each text must be a string")
    if not value.strip():
        raise Refused(422, f"{where} is empty (or only spaces): nothing to classify")
    if len(value) > max_chars:
        raise Refused(413, f"{where} has {len(value)} characters; at most {max_chars} (max_text_chars)")
    return value


def texts_of(body, max_texts: int, max_chars: int) -> list[str]:
    """/predict's texts: a list of 1 to `max_texts` texts."""
    body = fields_of(body, ("texts", "model"), '{"texts": ["a review", ...]}')
    if "texts" not in body:
        raise Refused(422, 'texts is missing; send {"texts": ["a review", ...]}')
    texts = body["texts"]
    if not isinstance(texts, list):
        raise Refused(422, f'texts is {kind(texts)}; it must be a list of strings: ["a review", ...]')
    if not texts:
        raise Refused(422, f"texts is empty; give 1 to {max_texts} texts")
    if len(texts) > max_texts:
        raise Refused(413, f"texts holds {len(texts)} texts; at most {max_texts} a request (max_texts)")
    return [text_of(t, f"texts[{i}]", max_chars) for i, t in enumerate(texts)]


def one_text_of(body, max_chars: int) -> str:
    """/explain's text."""
    body = fields_of(body, ("text", "model"), '{"text": "a review", "model": "..."}')
    if "text" not in body:
        raise Refused(422, 'text is missing; send {"text": "a review"}')
    return text_of(body["text"], "text", max_chars)


def model_of(body: dict, names: list[str]) -> str:
    """The model a request names, one of `names` (left out: the one served, where one is)."""
    name = body.get("model")
    if name is None:
        if len(names) == 1:
            return names[0]
        raise Refused(422, f"model is missing: {len(names)} models are served; give one of: {', '.join(names)}")
    if not isinstance(name, str) or name not in names:
        shown = repr(name) if isinstance(name, str) else kind(name)
        raise Refused(422, f"model={shown} is not served; allowed: {', '.join(names)}")
    return name
