"""Value checks shared by every layer: one wording for each kind of bad value, one line each."""

from __future__ import annotations

from collections.abc import Sequence

from attnclf.errors import AttnclfError


def positive_int(key: str, value, null: str | None = None) -> None:
    """`value` is a whole number > 0 (or None, where `null` says what None means)."""
    if value is None and null:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise AttnclfError(f"{key}={value!r} must be a positive integer" + (f" or null ({null})" if null else ""))


def one_of(key: str, value, allowed: Sequence[str]) -> None:
    """`value` is one of `allowed`."""
    if value not in allowed:
        raise AttnclfError(f"{key}={value!r}; allowed: {', '.join(allowed)}")
