"""JSON files as a strict parser reads them (JavaScript's JSON.parse, jq): a value that is not a finite
number (nan, inf: "not measured here", such as peak GPU memory on a CPU) is written as null."""

from __future__ import annotations

import json
import math
from pathlib import Path

from attnclf.utils.files import write_text_atomic


def finite(value):
    """`value` with every float that is not finite replaced by None, in nested dicts, lists and tuples."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def not_measured(value):
    """The inverse of finite() for files whose nulls all stand for numbers not measured (faithfulness.json):
    every None, in nested dicts and lists, as nan, so that arithmetic and formatting work on them."""
    if value is None:
        return math.nan
    if isinstance(value, dict):
        return {k: not_measured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [not_measured(v) for v in value]
    return value


def dumps(value, **kwargs) -> str:
    """json.dumps that never writes NaN or Infinity (allow_nan=False would fail on them: they become null)."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def write_json(path: str | Path, value) -> None:
    """`value` as indented, strictly valid JSON in `path`, written whole or not at all (a full disk leaves no
    torn metrics.json that a later run or report would read)."""
    write_text_atomic(path, dumps(value, indent=2) + "\n")


def read_json(path: str | Path):
    """A JSON file written by write_json (nulls stay None)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
