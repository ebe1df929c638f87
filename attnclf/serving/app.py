"""The server's HTTP side (FastAPI): the JSON API (/health, /predict, /explain), the explorer's pages (/,
/browse) and the API's description (/docs, /openapi.json), over the served models.

Every refusal is a 4xx (503 for a full queue) with {"error": "<one line>"} and one log line; an unknown path
is 404 and a wrong method 405 in the same form; nothing from a request is opened as a path or unpickled."""

from __future__ import annotations

import asyncio
import hmac
import logging
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException

from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier
from attnclf.presentation.explorer import ORDERS, browse_page, docs_page, explorer_page
from attnclf.serving import schema
from attnclf.serving.batching import Batcher, Busy
from attnclf.serving.browse import browse_rows
from attnclf.serving.explain import explain, prediction_json
from attnclf.serving.requests import Refused, json_body, model_of, one_text_of, text_of, texts_of
from attnclf.settings.serve import ServeConfig

log = logging.getLogger("attnclf.serve")
PATHS = ("/", "/browse", "/health", "/predict", "/explain", "/docs", "/openapi.json")


@dataclass
class Model:
    """A served model: its name in requests, the classifier, its checkpoint and a line on where it came from."""

    name: str
    clf: TrainedClassifier
    checkpoint: Path
    about: str
    batcher: Batcher | None = None


def error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def log_refusal(method: str, path: str, status: int, message: str) -> None:
    """The one log line of each refusal, JSON or page."""
    log.warning("%s %s -> %d: %s", method, path, status, message)


def refused(request: Request, status: int, message: str, headers: dict | None = None) -> JSONResponse:
    """A refusal: one log line, and the one-line JSON error."""
    log_refusal(request.method, request.url.path, status, message)
    return error(status, message, headers)


class KeyRequired:
    """Every path but /health answers only a request that carries the API key: the header X-API-Key, or
    Authorization: Bearer <key>, or (for a browser's links) the query parameter key=."""

    def __init__(self, app, key: str):
        self.app, self.key = app, key.encode()

    def given(self, scope) -> bytes:
        headers = dict(scope.get("headers") or [])
        bearer = headers.get(b"authorization", b"")
        if bearer.lower().startswith(b"bearer "):
            return bearer[7:].strip()
        if b"x-api-key" in headers:
            return headers[b"x-api-key"]
        return (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key") or [""])[0].encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] == "/health" or hmac.compare_digest(self.given(scope), self.key):
            return await self.app(scope, receive, send)
        message = "no API key, or a wrong one: send the header X-API-Key: <key> (or Authorization: Bearer <key>)"
        log_refusal(scope.get("method"), scope["path"], 401, message)
        await error(401, message)(scope, receive, send)


def create_app(models: list[Model], s: ServeConfig) -> FastAPI:
    """The app over `models` (their batchers started with it, the model thread closed with it)."""
    # torch work one at a time
    executor = ThreadPoolExecutor(1, thread_name_prefix="attnclf-model")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        for m in models:
            run_batch = partial(m.clf.predict_readings, batch_tokens=s.batch_tokens)
            m.batcher = Batcher(run_batch, executor, s.batch_tokens, s.max_queue)
            m.batcher.start()
        yield
        for m in models:
            await m.batcher.stop()
        executor.shutdown(wait=True)

    app = FastAPI(
        title="attnclf",
        summary="text classifiers with attention, served",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.model_names = [m.name for m in models]
    api = Api({m.name: m for m in models}, s, executor)
    api.routes(app)
    add_error_handlers(app)
    if s.api_key:
        app.add_middleware(KeyRequired, key=s.api_key)
    return app


def add_error_handlers(app: FastAPI) -> None:
    """Refusals, unknown paths and methods, and anything unforeseen, each as one line of JSON."""

    @app.exception_handler(Refused)
    async def on_refused(request: Request, e: Refused):
        return refused(request, e.status, e.message)

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, e: HTTPException):
        if e.status_code == 404:
            return refused(request, 404, f"no such path: {request.url.path}; paths: {', '.join(PATHS)}")
        if e.status_code == 405:
            allowed = (e.headers or {}).get("Allow", "")
            message = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
            return refused(request, 405, message, e.headers)
        return refused(request, e.status_code, str(e.detail), e.headers)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()))
        return refused(request, 422, f"{where}: {first.get('msg', 'not allowed')}")

    @app.exception_handler(Exception)
    # a fault of ours: the whole story in the log only
    async def on_error(request: Request, e: Exception):
        log.exception("%s %s failed", request.method, request.url.path)
        return error(500, f"the server failed on this request ({type(e).__name__}); its log says more")


class Api:
    """The routes, over the served models by name."""

    def __init__(self, models: dict[str, Model], s: ServeConfig, executor):
        self.models, self.s, self.executor = models, s, executor
        self.names = list(models)
        self.browsed: list[dict] | None = None
        # two first visits at once compute the rows once
        self.browsing = asyncio.Lock()

    async def on_model_thread(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def routes(self, app: FastAPI) -> None:
        errors = schema.ERRORS
        app.get("/health", response_model=schema.Health, summary="200 once every model is loaded")(self.health)
        app.post(
            "/predict",
            summary="classify texts",
            responses={200: {"model": schema.PredictResponse}, **errors},
            openapi_extra=schema.body_of(schema.PredictRequest),
        )(self.predict)
        app.post(
            "/explain",
            summary="one text, with what its decision rests on beside the attention",
            responses={200: {"model": schema.ExplainResponse}, **errors},
            openapi_extra=schema.body_of(schema.ExplainRequest),
        )(self.explain)
        app.get("/", response_class=HTMLResponse, summary="the explorer page")(self.page)
        app.get("/browse", response_class=HTMLResponse, summary="the first model's test rows")(self.browse)
        app.get("/docs", response_class=HTMLResponse, include_in_schema=False)(self.docs)

    async def health(self):
        return {"status": "ok", "models": self.names}

    async def predict(self, request: Request):
        body = await json_body(request, self.s.max_body_bytes)
        texts = texts_of(body, self.s.max_texts, self.s.max_text_chars)
        m = self.models[model_of(body, self.names)]
        readings = [m.clf.read(t) for t in texts]
        try:
            preds = await m.batcher.submit(readings, [len(r.ids) for r in readings])
        except Busy as e:
            raise Refused(503, str(e)) from None
        return JSONResponse({"predictions": [prediction_json(m.name, p, m.clf.labels) for p in preds]})

    async def explain(self, request: Request):
        body = await json_body(request, self.s.max_body_bytes)
        text = one_text_of(body, self.s.max_text_chars)
        m = self.models[model_of(body, self.names)]
        pred, explained = await self.on_model_thread(explain, m.clf, m.clf.read(text))
        return JSONResponse({**prediction_json(m.name, pred, m.clf.labels), **explained})

    async def views(self, text: str) -> list[dict]:
        """Each model's reading of `text`, for the page."""
        out = []
        for m in self.models.values():
            pred, explained = await self.on_model_thread(explain, m.clf, m.clf.read(text))
            out.append({"name": m.name, "about": m.about, "prediction": pred, "explained": explained})
        return out

    async def rows(self) -> list[dict]:
        """/browse's rows, computed at the first call (then read from the run folder at later starts)."""
        async with self.browsing:
            if self.browsed is None:
                s, models = self.s, list(self.models.values())
                self.browsed = await self.on_model_thread(browse_rows, models, s.browse_rows, s.seed, s.batch_tokens)
        return self.browsed

    async def page(self, request: Request, text: str | None = None, row: str | None = None, key: str | None = None):
        gold, status, problem = None, 200, None
        try:
            if row is not None:
                text, gold = await self.row_text(row)
            if text:
                text_of(text, "text", self.s.max_text_chars)
        except Refused as e:
            status, problem = e.status, e.message
            log_refusal(request.method, request.url.path, status, problem)
        views = await self.views(text) if text and problem is None else []
        return HTMLResponse(explorer_page(text or "", views, key, gold, problem), status_code=status)

    async def row_text(self, row: str) -> tuple[str, str]:
        """The text and true label of /browse's row `row`."""
        rows = {str(r["row"]): r for r in await self.browse_rows_or_refuse()}
        if row not in rows:
            shown = ", ".join(list(rows)[:3])
            raise Refused(404, f"row={row!r} is not one of /browse's rows (its rows: {shown}, ...)")
        return rows[row]["text"], rows[row]["label"]

    async def browse_rows_or_refuse(self) -> list[dict]:
        try:
            return await self.rows()
        except AttnclfError as e:
            raise Refused(404, f"/browse reads the first model's test rows, which are not here: {e}") from None

    async def browse(self, request: Request, order: str = "row", key: str | None = None):
        if order not in ORDERS:
            raise Refused(422, f"order={order!r}; allowed: {', '.join(ORDERS)}")
        try:
            rows = await self.browse_rows_or_refuse()
        except Refused as e:
            log_refusal(request.method, request.url.path, e.status, e.message)
            return HTMLResponse(explorer_page("", [], key, None, e.message), status_code=e.status)
        first = next(iter(self.models.values()))
        about = f"{len(rows)} test rows of {first.about}, sampled with seed {self.s.seed}; each opens in the explorer"
        return HTMLResponse(browse_page(rows, self.names, order, about, key))

    async def docs(self, request: Request):
        limits = [
            (k, str(getattr(self.s, k)))
            for k in ("max_texts", "max_text_chars", "max_body_bytes", "max_queue", "batch_tokens")
        ]
        return HTMLResponse(docs_page(request.app.openapi(), limits))
