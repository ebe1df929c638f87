"""The pages' queries as FastAPI dependencies: each key's type and limit is FastAPI's check (a 422 naming the
key), and the dependency hands the route one typed object (/browse's `Selection`, the explorer's `Look`)."""

# (no `from __future__ import annotations`: FastAPI reads the dependencies' annotations as objects)

import re
from typing import Annotated, Literal

from fastapi import Query
from pydantic import AfterValidator

from attnclf.presentation.browse import LENGTHS, Selection
from attnclf.presentation.explorer import MEASURES, SCALES, Look

# A key's value of the wrong form is refused in words (pydantic's value_error, said by serving/refusals.py),
# never as the pattern it failed.


def word_places(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"\d{1,6}(,\d{1,6})*", value):
        raise ValueError("give the places of the words to delete: whole numbers from 0, comma-separated, e.g. 3,17")
    return value


# the explorer's delete=: words' places among the text's tokens, comma-separated
Delete = Annotated[str | None, AfterValidator(word_places), Query(max_length=10_000, description="words to delete")]


def model_label(labels: dict[str, list[str]]):
    """said=model:label's check: a served model, and one of that model's labels."""

    def check(value: str) -> str:
        name, _, label = value.partition(":")
        if labels.get(name) is None or label not in labels[name]:
            each = "; ".join(f"{n}: {', '.join(ls)}" for n, ls in labels.items())
            raise ValueError(f"give model:label, a served model and one of its labels ({each}), e.g. {example(labels)}")
        return value

    return check


def example(labels: dict[str, list[str]]) -> str:
    name, names = next(iter(labels.items()))
    return f"{name}:{names[-1]}"


def selection_query(labels: dict[str, list[str]], orders: tuple[str, ...]):
    """/browse's and /browse.csv's query, over the served models (`labels`: each one's labels, by its name) and
    the `orders` offered."""
    names = tuple(labels)

    def selection(
        order: Literal[orders] = "row",
        word: Annotated[str | None, Query(max_length=100, description="a word the text holds")] = None,
        label: Annotated[str | None, Query(max_length=200, description="the true label")] = None,
        # ("": the form's "any")
        wrong: Annotated[Literal[(*names, "")] | None, Query(description="a model: the rows it misclassifies")] = None,
        length: Annotated[Literal[(*LENGTHS, "")] | None, Query(description="the text's tokens")] = None,
        truncated: Annotated[Literal["yes", "no", ""] | None, Query(description="cut by a model")] = None,
        said: Annotated[
            list[Annotated[str, AfterValidator(model_label(labels)), Query(max_length=300)]],
            Query(description="model:label, each: the rows that model gives that label"),
        ] = (),
        page: Annotated[int, Query(ge=1, le=10**6)] = 1,
    ) -> Selection:
        # an emptied form field is not a filter
        return Selection(
            order, word or None, label or None, wrong or None, length or None, truncated or None, tuple(said), page
        )

    return selection


def look_query(max_text_chars: int):
    """The explorer's (and /explain.json's) query: the text, the pinned original, the measure and scale."""

    def look(
        text: Annotated[str | None, Query(max_length=max_text_chars, description="a text every model reads")] = None,
        pinned: Annotated[
            str | None, Query(max_length=max_text_chars, description="the original an edit is compared with")
        ] = None,
        shade: Literal[tuple(m for m, *_ in MEASURES)] = "attention",
        scale: Literal[tuple(SCALES)] = Look.scale,
        row: Annotated[str | None, Query(description="a row of /browse")] = None,
    ) -> Look:
        return Look(text or "", pinned or None, shade, scale, row)

    return look
