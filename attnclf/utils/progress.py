"""A progress display for a long stage outside training (word vectors, an evaluation): a bar with the
counts done and to do, the time so far and an estimate of what is left, as the training's own bar shows.
Only on a terminal: a log file or a pipe gets the stage's start and end lines alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def console() -> Console:
    """Where the displays go: the terminal's standard error (the training's bar shares it)."""
    return Console(stderr=True)


@contextmanager
def stage(what: str, total: int, unit: str, quiet: bool = False) -> Iterator[Callable[[int], None]]:
    """A bar for `total` `unit`s of `what`; yields the function that counts `n` more done. Nothing is shown
    where standard error is not a terminal, or where `quiet` (the command asked for no displays)."""
    out = console()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=out, disable=quiet or not out.is_terminal) as bar:
        task = bar.add_task(what, total=total)
        yield lambda n=1: bar.advance(task, n)
