"""Value checks shared by every layer: one wording for each kind of bad value, one line each."""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnclf.errors import AttnclfError


def whole(value) -> bool:
    """`value` is a whole number (an int, not a bool: YAML's true is not 1 here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def number(value) -> bool:
    """`value` is an int or a float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def positive_int(key: str, value, null: str | None = None) -> None:
    """`value` is a whole number > 0 (or None, where `null` says what None means)."""
    if value is None and null:
        return
    if not whole(value) or value <= 0:
        raise AttnclfError(f"{key}={value!r} must be a positive integer" + (f" or null ({null})" if null else ""))


def at_least(key: str, value, low: int, means: str = "") -> None:
    """`value` is a whole number >= low, or None (the setting left to its library)."""
    if value is not None and (not whole(value) or value < low):
        raise AttnclfError(f"{key}={value!r} must be a whole number >= {low}{means}")


def positive_int_or_auto(key: str, value) -> None:
    """`value` is a whole number > 0, or "auto" (chosen from the data)."""
    if value != "auto" and (not whole(value) or value < 1):
        raise AttnclfError(f"{key}={value!r} must be a positive integer or auto")


def shown(value) -> str:
    """A value as the user wrote it: a float without a trailing .0 (optimizer.lr=-1, not -1.0)."""
    return f"{value:g}" if isinstance(value, float) else repr(value)


def positive_number(key: str, value) -> None:
    """`value` is a number > 0 (and finite)."""
    if not number(value) or not 0 < value < math.inf:
        raise AttnclfError(f"{key}={shown(value)} must be a number > 0")


def fraction(key: str, value) -> None:
    """`value` is a number in [0, 1)."""
    if not number(value) or not 0 <= value < 1:
        raise AttnclfError(f"{key}={shown(value)} must be in [0, 1)")


def one_of(key: str, value, allowed: Sequence[str]) -> None:
    """`value` is one of `allowed`."""
    if value not in allowed:
        raise AttnclfError(f"{key}={value!r}; allowed: {', '.join(allowed)}")


def repeated(values) -> list:
    """The values given more than once, each named once, in order (a list whose items must differ)."""
    values = list(values)
    return sorted({v for v in values if values.count(v) > 1})


def first_few(items, k: int = 5) -> str:
    """A list named in a message: its first `k` items, and how many more."""
    items = list(items)
    return ", ".join(map(str, items[:k])) + (f" and {len(items) - k} more" if len(items) > k else "")
