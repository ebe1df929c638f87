"""The server's HTTP side (FastAPI) over the served models: the JSON API (/health, /predict, /explain), the
explorer's pages (/, /browse) and the API's description (/docs, /openapi.json). The routes are in
attnclf.serving.routes, their requests and answers in attnclf.serving.schema.

Every refusal is one line with one log line: {"error": "<line>"} from an API route, a page saying it from a
page route; an unknown path is 404 and a wrong method 405 in the same form. A value a request sent is shown
cut to a short prefix. Nothing from a request is opened as a path or unpickled."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from attnclf.inference.trained import TrainedClassifier
from attnclf.presentation.explorer import Look, explorer_page
from attnclf.serving.batching import Batcher, Busy, ModelFailed
from attnclf.serving.body import BodyGuard, BodyProblem
from attnclf.serving.refusals import cut, refusal_of
from attnclf.serving.routes import PAGES, Api
from attnclf.settings.serve import ServeConfig

log = logging.getLogger("attnclf.serve")


@dataclass
class Model:
    """A served model: its name in requests, the classifier, its checkpoint, a line on where it came from, and
    the classifier /predict runs (`fast`: an int8 copy where quantize=int8; /explain and the pages take
    gradients, which int8 layers do not pass back, so they read `clf`)."""

    name: str
    clf: TrainedClassifier
    checkpoint: Path
    about: str
    fast: TrainedClassifier | None = None
    batcher: Batcher | None = None


def create_app(models: list[Model], s: ServeConfig) -> FastAPI:
    """The app over `models` (their batchers started with it, the model thread closed with it)."""
    # torch work one at a time
    executor = ThreadPoolExecutor(1, thread_name_prefix="attnclf-model")
    api = Api({m.name: m for m in models}, s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        for m in models:
            run_batch = partial((m.fast or m.clf).predict_readings, batch_tokens=s.batch_tokens)
            m.batcher = Batcher(run_batch, executor, s.batch_tokens, s.max_queue)
            m.batcher.start()
        # /browse's rows from the start, in the background: a first visit may not wait for them
        api.prepare_rows()
        yield
        api.preparing.cancel()
        for m in models:
            await m.batcher.stop()
        executor.shutdown(wait=True)

    app = FastAPI(
        title="attnclf",
        summary="text classifiers with attention, served",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.model_names = [m.name for m in models]
    app.state.max_text_chars = s.max_text_chars
    api.routes(app)
    app.openapi = partial(real_answers, app, app.openapi)
    add_error_handlers(app, s)
    app.add_middleware(BodyGuard, max_bytes=s.max_body_bytes, timeout=s.body_timeout)
    return app


def real_answers(app: FastAPI, generate) -> dict:
    """FastAPI's schema (made once), less the 422 'Validation Error' it adds to every route with parameters:
    the routes' own refusals are described by them (a page's over-long text is a 413)."""
    described = generate()
    for methods in described["paths"].values():
        for op in methods.values():
            if op["responses"].get("422", {}).get("description") == "Validation Error":
                del op["responses"]["422"]
    for name in ("HTTPValidationError", "ValidationError"):
        described.get("components", {}).get("schemas", {}).pop(name, None)
    return described


def answer(request: Request, status: int, message: str, headers: dict | None = None, level=logging.WARNING):
    """A refusal: one log line, and the line as JSON (an API route) or as a page (a page route)."""
    log.log(level, "%s %s -> %d: %s", request.method, cut(request.url.path), status, message)
    if request.url.path in PAGES:
        # (a refused key is not carried on)
        key = request.query_params.get("key") if status != 401 else None
        return HTMLResponse(
            explorer_page(kept_text(request), [], key, error=message), status_code=status, headers=headers
        )
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def kept_text(request: Request) -> Look:
    """A refused page's text box keeps the text it was sent, where the text itself was not what was refused
    (nothing typed is lost); pinned and the rest are dropped."""
    text = request.query_params.get("text", "")
    return Look(text=text if len(text) <= request.app.state.max_text_chars else "")


def add_error_handlers(app: FastAPI, s: ServeConfig) -> None:
    """Refusals, unknown paths and methods, a failed batch and anything unforeseen, each as one line."""

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, e: HTTPException):
        return on_refusal(request, e)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, e: RequestValidationError):
        fields = app.state.body_fields.get(request.url.path, [])
        # an unknown field is said first: the fields' own errors may come of the same slip
        first = min(e.errors(), key=lambda x: x["type"] != "extra_forbidden")
        status, message = refusal_of(first, s, app.state.model_names, fields)
        return answer(request, status, message)

    @app.exception_handler(Busy)
    async def on_busy(request: Request, e: Busy):
        return answer(request, 503, str(e))

    @app.exception_handler(ModelFailed)
    async def on_failed(request: Request, e: ModelFailed):
        return answer(request, 500, str(e))

    @app.exception_handler(Exception)
    # a fault of ours: the whole story in the log only
    async def on_error(request: Request, e: Exception):
        log.exception("%s %s failed", request.method, cut(request.url.path))
        message = f"the server failed on this request ({type(e).__name__}); its log says more"
        return JSONResponse({"error": message}, 500)


def on_refusal(request: Request, e: HTTPException):
    """An HTTPException as its one line; FastAPI's 400 for a body it could not read, by its cause."""
    cause = e.__cause__
    if isinstance(cause, BodyProblem):
        close = {"Connection": "close"} if cause.status == 408 else None
        return answer(request, cause.status, cause.message, close)
    if isinstance(cause, ClientDisconnect):
        return answer(request, 400, "the client went away before its body arrived", level=logging.INFO)
    if isinstance(cause, RecursionError):
        return answer(request, 400, "the body is not valid JSON: nested deeper than the JSON reader goes")
    if isinstance(cause, UnicodeDecodeError):
        return answer(request, 400, "the body is not UTF-8 text; send JSON in UTF-8")
    if e.status_code == 404 and e.detail == "Not Found":
        paths = list(dict.fromkeys(r.path for r in request.app.routes if r.path != "/favicon.ico"))
        return answer(request, 404, f"no such path: {cut(request.url.path)}; paths: {', '.join(paths)}")
    if e.status_code == 405:
        # every route of the path (GET and HEAD are two)
        methods = {m for r in request.app.routes if r.path == request.url.path for m in getattr(r, "methods", ())}
        allowed = ", ".join(sorted(methods))
        message = f"{request.method} is not allowed on {cut(request.url.path)}; allowed: {allowed}"
        return answer(request, 405, message, {"Allow": allowed})
    return answer(request, e.status_code, str(e.detail), e.headers)
