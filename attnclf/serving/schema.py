"""The API described once: the requests and answers as pydantic models, which are the routes' parameters (their
checks) and the OpenAPI schema (/openapi.json, /docs) at once. The limits are the models' constraints, set from
the server's settings when the app is built; a field not described is refused."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from attnclf.settings.serve import ServeConfig

# a text holds something besides spaces
NOT_BLANK = r"\S"
FORBID = ConfigDict(extra="forbid")


class PredictionOut(BaseModel):
    model: str
    label: str = Field(description="the predicted class's name")
    prob: float = Field(description="the predicted class's probability")
    probs: dict[str, float] = Field(description="every class's probability, by name")
    tokens: list[str] = Field(description="the words the model read, in order (after truncation to the run's length)")
    weights: list[float] = Field(description="each read word's attention weight (as long as tokens)")
    truncated: bool = Field(description="true where the text had more words than the run reads")


class PredictResponse(BaseModel):
    predictions: list[PredictionOut] = Field(description="one per text, in order")


class FlipOut(BaseModel):
    count: int | None = Field(
        description="the fewest words, taken in the measure's order, whose deletion flips the decision; null "
        "where flip_within words do not"
    )
    words: list[int] = Field(description="those words' places among tokens (empty where count is null)")


class ExplainResponse(PredictionOut):
    gradient: list[float | None] = Field(description="|gradient x input| of each read word, weights held fixed")
    leave_one_out: list[float | None] = Field(description="|change of p(predicted)| with the word deleted")
    tau: dict[str, float | None] = Field(description="Kendall tau of the weights against gradient and leave_one_out")
    tau_p_value: dict[str, float | None] = Field(description="each tau's two-sided p-value")
    rows: list[list[float]] | None = Field(
        description="a mechanism with several rows of weights (multihead's heads, structured's hops): each row "
        "over the read words; `weights` is their mean. null where the mechanism has one row"
    )
    flip_within: int = Field(description="the most words the flip search deletes (the server's flip_within)")
    flip: dict[str, FlipOut] = Field(
        description="what flips the decision, searched in the order of attention, gradient and leave_one_out"
    )


class Analysis(BaseModel):
    text: str = Field(description="the text analysed")
    pinned: str | None = Field(description="the pinned original an edit is compared with (null: none)")
    models: dict[str, ExplainResponse] = Field(description="each model's /explain answer for the text, by name")
    pinned_models: dict[str, ExplainResponse] | None = Field(
        None, description="each model's /explain answer for the pinned original, where it differs from the text"
    )


class Health(BaseModel):
    status: Literal["ok"]
    models: list[str]


class ErrorOut(BaseModel):
    error: str = Field(description="one line naming the field and what is allowed")


def text_type(s: ServeConfig):
    """One text: a string with something besides spaces, of at most max_text_chars characters."""
    return Annotated[str, Field(min_length=1, max_length=s.max_text_chars, pattern=NOT_BLANK)]


def model_field(names: list[str]) -> tuple:
    """The `model` field: one of the served names; required where several are served."""
    served = Literal[tuple(names)]
    what = "the served model's name"
    if len(names) == 1:
        return served | None, Field(None, description=f"{what}; may be left out (one is served)")
    return served, Field(description=what)


def request_models(s: ServeConfig, names: list[str]) -> tuple[type[BaseModel], type[BaseModel]]:
    """/predict's and /explain's request bodies, their limits set from `s`."""
    text = text_type(s)
    predict = create_model(
        "PredictRequest",
        __config__=FORBID,
        texts=(list[text], Field(min_length=1, max_length=s.max_texts, description="the texts to classify")),
        model=model_field(names),
    )
    explain = create_model(
        "ExplainRequest",
        __config__=FORBID,
        text=(text, Field(description="one text")),
        model=model_field(names),
    )
    return predict, explain


def answers(*codes: int, keyed: bool = False, page: bool = False) -> dict:
    """The refusals a route gives (`codes`; 401 where a key is required), each described."""
    what = {
        400: "the body is not JSON (malformed, nested too deeply, not UTF-8)",
        401: "no API key, or a wrong one, or key= given more than once",
        404: "no such row of /browse, or /browse's test rows are not in the run folder",
        408: "the body did not arrive whole within body_timeout seconds (the connection is closed)",
        413: "a text, the list of texts or the body is over its limit",
        415: "the body is not application/json",
        422: "a field is missing or holds what is not allowed",
        500: "the model failed on the batch that held this request's texts",
        503: "the queue is full: try again shortly",
    }
    if keyed:
        codes = (*codes, 401)
    if page:
        return {c: {"description": what[c], "content": {"text/html": {}}} for c in sorted(codes)}
    return {c: {"model": ErrorOut, "description": what[c]} for c in sorted(codes)}
