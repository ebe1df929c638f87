"""The API's requests and answers as pydantic models: what /docs and /openapi.json describe. Requests are
checked by hand (attnclf.serving.requests), so that each refusal is one line naming the field."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PredictRequest(BaseModel):
    texts: list[str] = Field(description="the texts to classify, each non-empty (at most max_texts a request)")
    model: str | None = Field(None, description="the served model's name; may be left out where one is served")


class ExplainRequest(BaseModel):
    text: str = Field(description="one non-empty text")
    model: str | None = Field(None, description="the served model's name; may be left out where one is served")


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


class ExplainResponse(PredictionOut):
    gradient: list[float | None] = Field(description="|gradient x input| of each read word, weights held fixed")
    leave_one_out: list[float | None] = Field(description="|change of p(predicted)| with the word deleted")
    tau: dict[str, float | None] = Field(description="Kendall tau of the weights against gradient and leave_one_out")
    tau_p_value: dict[str, float | None] = Field(description="each tau's two-sided p-value")
    rows: list[list[float]] | None = Field(
        description="a mechanism with several rows of weights (multihead's heads, structured's hops): each row "
        "over the read words; `weights` is their mean. null where the mechanism has one row"
    )


class Health(BaseModel):
    status: str
    models: list[str]


class ErrorOut(BaseModel):
    error: str = Field(description="one line naming the field and what is allowed")


ERRORS = {
    code: {"model": ErrorOut, "description": what}
    for code, what in (
        (400, "the body is not JSON"),
        (401, "no API key, or a wrong one (where the server requires one)"),
        (413, "a text, the list of texts or the body is over its limit"),
        (415, "the body is not application/json"),
        (422, "a field is missing or holds what is not allowed"),
        (503, "the queue is full: try again shortly"),
    )
}


def body_of(model: type[BaseModel]) -> dict:
    """A request body's OpenAPI description (the route reads and checks the body itself)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}
