"""The routes, over the served models by name. Each takes its request as the schema's models (pydantic checks
it) and gives its answer as one; the API key is a Security dependency (attnclf.serving.keys).

Texts are read (tokenised) off the event loop, so that a large request does not hold up the others; the model
work of /predict, /explain and the pages goes through each model's bounded queue (attnclf.serving.batching)."""

# (no `from __future__ import annotations`: the request models are made when the app is, and FastAPI reads
# the routes' annotations as objects)

import asyncio
import time
from collections import OrderedDict
from dataclasses import replace
from functools import partial
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from attnclf.data.text import tokenize, without_tokens
from attnclf.errors import AttnclfError
from attnclf.presentation.api_docs import docs_page
from attnclf.presentation.browse import (
    ORDERS,
    Selection,
    browse_csv,
    browse_page,
    last_page,
    preparing_page,
    selected,
)
from attnclf.presentation.explorer import Look, explorer_page
from attnclf.presentation.site import address
from attnclf.serving import schema
from attnclf.serving.browse import browse_rows
from attnclf.serving.explain import explain, prediction_json
from attnclf.serving.keys import key_required
from attnclf.serving.queries import Delete, look_query, selection_query
from attnclf.serving.refusals import cut, shown
from attnclf.settings.serve import ServeConfig

# the routes that answer pages (their refusals too)
PAGES = ("/", "/browse", "/docs")
# texts whose explanations are kept (an edit compared with its pinned original reads the original once)
KEPT_EXPLAINED = 32
# what the limits a client meets are called, as /docs lists them
LIMITS = ("max_texts", "max_text_chars", "max_body_bytes", "body_timeout", "max_queue", "batch_tokens")


async def json_content(request: Request) -> None:
    """A body's Content-Type: application/json (FastAPI reads no other as JSON)."""
    ctype = request.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        given = shown(ctype) if ctype else "(none)"
        raise HTTPException(415, f"Content-Type {given} is not accepted; send application/json")


def get_and_head(app: FastAPI, path: str, **kw):
    """A GET route that answers HEAD too (described once, as GET)."""

    def add(fn):
        app.get(path, **kw)(fn)
        app.head(path, **{**kw, "include_in_schema": False})(fn)
        return fn

    return add


def explain_weight(reading, within: int) -> int:
    """The texts an /explain of `reading` runs: each word deleted, the text, its gradient, and the flip
    search's deletions in three orders."""
    n = len(reading.ids)
    return n + 2 + 3 * min(within, n - 1)


class Api:
    """The routes, over the served models by name."""

    def __init__(self, models: dict, s: ServeConfig):
        self.models, self.s = models, s
        self.names = list(models)
        self.browsed: list[dict] | None = None
        # the rows' preparation (started with the server) and how many models have read them
        self.preparing: asyncio.Task | None = None
        self.read_by = 0
        self.kept: OrderedDict = OrderedDict()
        # two first visits at once compute the rows once
        self.browsing = asyncio.Lock()

    def routes(self, app: FastAPI) -> None:
        self.api_routes(app)
        self.page_routes(app)

    def api_routes(self, app: FastAPI) -> None:
        predict_body, explain_body = schema.request_models(self.s, self.names)
        # what a refusal of an unknown field names as allowed
        app.state.body_fields = {
            "/predict": list(predict_body.model_fields),
            "/explain": list(explain_body.model_fields),
        }
        keyed = self.s.api_key is not None
        checks = [Depends(key_required(self.s.api_key)), Depends(json_content)]
        refusals = schema.answers(400, 408, 413, 415, 422, 500, 503, keyed=keyed)

        @get_and_head(app, "/health", response_model=schema.Health, summary="200 once every model is loaded")
        async def health():
            return {"status": "ok", "models": self.names}

        @app.post(
            "/predict",
            response_model=schema.PredictResponse,
            responses=refusals,
            dependencies=checks,
            summary="classify texts",
        )
        async def predict(body: predict_body):
            m = self.models[body.model or self.names[0]]
            readings = await asyncio.to_thread(lambda: [m.clf.read(t) for t in body.texts])
            preds = await m.batcher.submit(readings, [len(r.ids) for r in readings])
            return {"predictions": [prediction_json(m.name, p, m.clf.labels) for p in preds]}

        @app.post(
            "/explain",
            response_model=schema.ExplainResponse,
            responses=refusals,
            dependencies=checks,
            summary="one text, with what its decision rests on beside the attention",
        )
        async def explain_route(body: explain_body):
            m = self.models[body.model or self.names[0]]
            pred, explained = await self.explained(m, body.text)
            return {**prediction_json(m.name, pred, m.clf.labels), **explained}

    async def explained(self, m, text: str):
        """`text` read off the loop, then explained on the model thread in its turn in `m`'s queue (the last
        KEPT_EXPLAINED texts' answers kept)."""
        if (m.name, text) in self.kept:
            self.kept.move_to_end((m.name, text))
            return self.kept[m.name, text]
        reading = await asyncio.to_thread(m.clf.read, text)
        within = self.s.flip_within
        got = await m.batcher.run_alone(partial(explain, m.clf, reading, within), explain_weight(reading, within))
        self.kept[m.name, text] = got
        while len(self.kept) > KEPT_EXPLAINED:
            self.kept.popitem(last=False)
        return got

    def page_routes(self, app: FastAPI) -> None:
        key = Annotated[str | None, Depends(key_required(self.s.api_key))]
        self.explorer_routes(app, key)
        self.browse_routes(app, key)
        self.doc_routes(app, key)

    def explorer_routes(self, app: FastAPI, key) -> None:
        keyed = self.s.api_key is not None
        look = look_query(self.s.max_text_chars)

        @get_and_head(
            app,
            "/",
            response_class=HTMLResponse,
            responses=schema.answers(404, 413, 500, 503, keyed=keyed, page=True),
            summary="the explorer page",
        )
        async def explorer(
            key: key,
            shown: Annotated[Look, Depends(look)],
            delete: Delete = None,
        ):
            shown, gold = await self.opened(shown)
            if delete is not None:
                return RedirectResponse(address("/", key, **deleted(shown, delete).query()), 303)
            if not shown.text.strip():
                return HTMLResponse(explorer_page(shown, [], key, gold))
            start = time.perf_counter()
            views = await self.views(shown)
            about = self.reading_said(time.perf_counter() - start)
            return HTMLResponse(explorer_page(shown, views, key, gold, about=about))

        @get_and_head(
            app,
            "/explain.json",
            response_model=schema.Analysis,
            responses=schema.answers(404, 413, 422, 500, 503, keyed=keyed),
            summary="the explorer's analysis of a text (and of the pinned original) by every model: a download",
        )
        async def analysis(key: key, shown: Annotated[Look, Depends(look)]):
            shown, _ = await self.opened(shown)
            if not shown.text.strip():
                raise HTTPException(422, "text is empty; give the text to analyse (text=...)")
            body = {"text": shown.text, "pinned": shown.pinned, "models": await self.analysed(shown.text)}
            if shown.compared:
                body["pinned_models"] = await self.analysed(shown.pinned)
            return JSONResponse(
                schema.Analysis(**body).model_dump(mode="json"),
                headers={"Content-Disposition": "attachment; filename=explain.json"},
            )

    def browse_routes(self, app: FastAPI, key) -> None:
        keyed = self.s.api_key is not None
        orders = tuple(o for o in ORDERS if o != "disagree" or len(self.names) > 1)
        selection = selection_query({name: list(m.clf.labels) for name, m in self.models.items()}, orders)

        @get_and_head(
            app,
            "/browse",
            response_class=HTMLResponse,
            responses=schema.answers(404, 422, 500, 503, keyed=keyed, page=True),
            summary="the first model's test rows",
        )
        async def browse(key: key, sel: Annotated[Selection, Depends(selection)]):
            rows = await self.rows_or_progress()
            if isinstance(rows, str):
                return HTMLResponse(preparing_page(rows, key))
            chosen = selected(rows, sel)
            last, n = last_page(chosen), len(chosen)
            if sel.page > last:
                raise HTTPException(422, f"page={sel.page} is past the last page, {last}, of the {n} rows chosen")
            first = next(iter(self.models.values()))
            about = (
                f"{len(rows)} test rows of {first.about}, sampled with seed {self.s.seed}; each opens in the explorer"
            )
            return HTMLResponse(browse_page(rows, chosen, self.names, sel, about, key, orders))

        @get_and_head(
            app,
            "/browse.csv",
            response_class=Response,
            responses={200: {"content": {"text/csv": {}}}, **schema.answers(404, 422, 500, 503, keyed=keyed)},
            summary="the first model's test rows as CSV (a download)",
        )
        async def browse_table(key: key, sel: Annotated[Selection, Depends(selection)]):
            rows = await self.rows()
            return Response(
                browse_csv(rows, self.names, sel),
                media_type="text/csv; charset=utf-8",
                headers={"Content-Disposition": "attachment; filename=browse.csv"},
            )

    def doc_routes(self, app: FastAPI, key) -> None:
        @get_and_head(app, "/docs", response_class=HTMLResponse, include_in_schema=False)
        async def docs(request: Request, key: key):
            limits = [(k, str(getattr(self.s, k))) for k in LIMITS]
            return HTMLResponse(docs_page(request.app.openapi(), limits, key, str(request.base_url)))

        @get_and_head(app, "/openapi.json", include_in_schema=False)
        async def openapi(request: Request, key: key):
            return JSONResponse(request.app.openapi())

        # a browser asks for it on every visit: answered with nothing, and no log line
        @app.get("/favicon.ico", include_in_schema=False)
        async def favicon():
            return Response(status_code=204)

    async def views(self, shown: Look) -> list[dict]:
        """Each model's reading of the text, and of the pinned original where an edit is compared, for the page.
        Every model's reading is queued at once: the model thread goes from one to the next without a turn of
        the loop between them."""
        models = list(self.models.values())
        read = await asyncio.gather(*(self.explained(m, shown.text) for m in models))
        pinned = [None] * len(models)
        if shown.compared:
            pinned = await asyncio.gather(*(self.explained(m, shown.pinned) for m in models))
        out = []
        for m, (pred, said), was in zip(models, read, pinned, strict=True):
            view = {"name": m.name, "about": m.about, "labels": m.clf.labels, "prediction": pred, "explained": said}
            if was is not None:
                view["pinned"] = {"prediction": was[0], "explained": was[1]}
            out.append(view)
        return out

    async def analysed(self, text: str) -> dict:
        """Every model's /explain answer for `text`, by name."""
        out = {}
        for m in self.models.values():
            pred, explained = await self.explained(m, text)
            out[m.name] = {**prediction_json(m.name, pred, m.clf.labels), **explained}
        return out

    def reading_said(self, seconds: float) -> str:
        """What reading the text took, and the limits on a long text."""
        lengths = ", ".join(f"{m.name} {m.clf.max_length}" for m in self.models.values())
        return (
            f"Read in {seconds:.2f} s. Each model deletes every word it reads in turn (leave-one-out) and up to "
            f"{self.s.flip_within} words in each measure's order (flip_within): the time grows with the text's "
            f"length. A model reads at most its run's length (words: {lengths}); a text may hold "
            f"{self.s.max_text_chars} characters (max_text_chars)."
        )

    def prepare_rows(self) -> None:
        """/browse's rows computed from now on, in the background (the server starts answering meanwhile)."""
        if self.preparing is None:
            self.preparing = asyncio.create_task(self.rows())
            # (a failure is said when /browse asks for them)
            self.preparing.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def rows_or_progress(self) -> list[dict] | str:
        """The rows, where they are ready within browse_wait seconds; else a line on how far they have got."""
        self.prepare_rows()
        try:
            return await asyncio.wait_for(asyncio.shield(self.preparing), self.s.browse_wait)
        except TimeoutError:
            n = len(self.models)
            return (
                f"/browse is being prepared: {self.read_by} of {n} model{'s' if n != 1 else ''} have read its "
                f"{self.s.browse_rows} test rows (each reads them whole, and its gradients); this page looks again "
                "every 5 s, and opens at once once they are ready (they are then kept in the first run's folder)"
            )

    async def rows(self) -> list[dict]:
        """/browse's rows, computed at the first call in the first model's queue (then read from the run folder
        at later starts); 404 where the run's test rows are not at hand."""
        async with self.browsing:
            if self.browsed is None:
                s, models = self.s, list(self.models.values())
                job = partial(browse_rows, models, s.browse_rows, s.seed, s.batch_tokens, self.count_read)
                try:
                    # counted as no texts: the server's own work from its start takes the model thread in
                    # its turn, but refuses no request (counted as its rows, it filled max_queue: every
                    # request of a fresh server was a 503 until the rows were ready)
                    self.browsed = await models[0].batcher.run_alone(job, 0)
                except AttnclfError as e:
                    why = f"/browse reads the first model's test rows, which are not here: {e}"
                    raise HTTPException(404, why) from None
        return self.browsed

    def count_read(self, k: int) -> None:
        self.read_by = k

    async def opened(self, shown: Look) -> tuple[Look, str | None]:
        """The state a page opens at, and the true label where it names a /browse row: the row's text where no
        other text is given."""
        if shown.row is None:
            return shown, None
        text, gold = await self.row_text(shown.row)
        return (shown if shown.text else replace(shown, text=text)), gold

    async def row_text(self, row: str) -> tuple[str, str]:
        """The text and true label of /browse's row `row`."""
        rows = {str(r["row"]): r for r in await self.rows()}
        if row not in rows:
            first = ", ".join(list(rows)[:3])
            raise HTTPException(404, f"row={shown(row)} is not one of /browse's rows (its rows: {first}, ...)")
        return rows[row]["text"], rows[row]["label"]


def deleted(shown: Look, delete: str) -> Look:
    """The page's state once the words at `delete` (places among the text's tokens, comma-separated) are
    deleted: the text without them, compared with the pinned original (the text itself where none was)."""
    places = sorted({int(i) for i in delete.split(",")})
    n = len(tokenize(shown.text))
    if places[-1] >= n:
        raise HTTPException(422, f"delete={cut(delete)} is past the text's {n} words (0..{n - 1})")
    pinned = shown.pinned if shown.pinned is not None else shown.text
    return replace(shown, text=without_tokens(shown.text, places), pinned=pinned)
