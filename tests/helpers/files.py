"""Files read as a test must read them."""

from __future__ import annotations

import json
from pathlib import Path


def strict_json(path: Path):
    """A JSON file read as a strict parser (JavaScript's JSON.parse, jq) reads it: NaN or Infinity fails."""

    def refuse(name):
        raise ValueError(f"{path} holds {name}, which is not JSON")

    return json.loads(Path(path).read_text(), parse_constant=refuse)
