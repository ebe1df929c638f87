"""A study's trials as a table: number, state, value and each parameter; printed with rich at the end of
a sweep, and written as Markdown beside it (trials.md)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from rich.table import Table


def rows(study) -> tuple[list[str], list[list[str]]]:
    """(the header, a row a trial in the study's order): number, state, value, parameters."""
    names = sorted({k for t in study.trials for k in t.params})
    header = ["trial", "state", "value", *names]
    body = [[str(t.number), t.state.name, "" if t.value is None else f"{t.value:.4f}",
             *(shown(t.params.get(k, "")) for k in names)] for t in study.trials]  # fmt: skip
    return header, body


def shown(value) -> str:
    """A parameter's value: a float to 4 significant digits."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def trials_table(study) -> str:
    """The table as a terminal shows it (rich), as text."""
    header, body = rows(study)
    table = Table(*header, title=f"study {study.study_name}: {len(body)} trials")
    for row in body:
        table.add_row(*row)
    console = Console(width=max(100, 14 * len(header)), record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def write_trials(study, path: Path) -> None:
    """The table as Markdown, with the best trial named above it."""
    header, body = rows(study)
    best = study.best_trial
    lines = [f"# Study {study.study_name}", "", f"Best: trial {best.number}, value {best.value:.4f}.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in body]
    path.write_text("\n".join(lines) + "\n")
