"""/docs: the API described from its OpenAPI schema, each endpoint with a curl example."""

from __future__ import annotations

import json

from attnclf.presentation.site import page_of


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
    # a route that reads a text from its query is shown with one
    asks_text = any(q.get("name") == "text" for q in op.get("parameters", []))
    parts.append(base.rstrip("/") + path + ("?text=a%20wonderful%20film" if asks_text else ""))
    return " ".join(parts)


def docs_page(
    schema: dict, limits: list[tuple[str, str]], key: str | None = None, base: str = "http://127.0.0.1:8000"
) -> str:
    """/docs: each endpoint of the OpenAPI schema with its request, its answers and a curl example (at `base`,
    the server's address), and the limits; its links carry the API key where one is in use (templates/docs.html)."""
    routes = []
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            body = request_body(op, schema)
            routes.append(
                {
                    "method": method,
                    "path": path,
                    "summary": op.get("summary", ""),
                    "body": json.dumps(body, indent=1) if body else None,
                    "answers": [(c, r.get("description", "")) for c, r in op.get("responses", {}).items()],
                    "example": curl_example(method, path, op, body, schema, base),
                }
            )
    keyed = bool(schema.get("components", {}).get("securitySchemes"))
    return page_of("docs.html", "attnclf API", key, keyed=keyed, routes=routes, limits=limits)
