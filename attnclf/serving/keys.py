"""The API key, as a FastAPI Security dependency: every route but /health answers only a request carrying it,
as the header X-API-Key, as Authorization: Bearer <key>, or (for a browser's links) as the query's key=. The
schema describes the three forms; the dependency gives the route the key it was given, so that a page's links
carry it on."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import HTTPException, Request, Security
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPAuthorizationCredentials, HTTPBearer

HEADER = APIKeyHeader(name="X-API-Key", auto_error=False, description="the API key")
BEARER = HTTPBearer(auto_error=False, description="the API key as a bearer token")
QUERY = APIKeyQuery(name="key", auto_error=False, description="the API key in the address (a browser's links)")
ASK = (
    "no API key, or a wrong one: send the header X-API-Key: <key> (or Authorization: Bearer <key>); "
    "in a browser, open /?key=<key>"
)


def key_required(expected: str | None):
    """The dependency: the key a request gave (None where the server asks none); 401 without the right one."""

    if expected is None:
        # (no scheme in the schema where none is asked)
        async def no_key() -> None:
            return None

        return no_key

    async def api_key(
        request: Request,
        header: Annotated[str | None, Security(HEADER)],
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
        query: Annotated[str | None, Security(QUERY)],
    ) -> str:
        # the check and the page's links must read one value
        if len(request.query_params.getlist("key")) > 1:
            raise HTTPException(401, "key= is given more than once; give it once")
        given = bearer.credentials if bearer else header if header is not None else query
        if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
            raise HTTPException(401, ASK)
        return given

    return api_key
