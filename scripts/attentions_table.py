"""The attention table of docs/results.md ("Five attentions"), from the runs scripts/run_attentions.sh made: for
each attention, the mean ± sd over the seeds found of test accuracy and of the agreement and ERASER figures of
`attnclf faithfulness`, and the fastest seed's seconds an epoch with its ratio to the default attention's (a
run's time is wall-clock: a machine shared with other work only ever adds to it, so the fastest run is the one
nearest the model's own cost).

    python scripts/attentions_table.py outputs/attentions/imdb

Reads <folder>/<attention>_s<seed>/: metrics.json and faithfulness_test/faithfulness.json (a run without
either is left out). Prints a Markdown table; `attnclf report <folder>` gives the pairwise tests.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from harness import mean_sd_cell  # (scripts/harness.py: what the scripts share)

from attnclf.settings.attention import attention_order

RUN = re.compile(r"(?P<attention>\w+?)_s(?P<seed>\d+)$")

# column: (heading, how it is read from a run's figures, its format)
COLUMNS = {
    "acc": ("test acc %", lambda r: 100 * r["metrics"]["test/acc"], "{:.2f}"),
    "tau_grad": ("τ grad", lambda r: r["agree"]["gradient"]["mean"], "{:.2f}"),
    "tau_loo": ("τ LOO", lambda r: r["agree"]["loo"]["mean"], "{:.2f}"),
    "comp": ("comp. AOPC", lambda r: r["eraser"]["aopc_comprehensiveness"], "{:.3f}"),
    "suff": ("suff. AOPC", lambda r: r["eraser"]["aopc_sufficiency"], "{:.3f}"),
}


def read_run(folder: Path) -> dict | None:
    """A run's figures, or None where one of its files is not there yet."""
    files = [folder / "metrics.json", folder / "faithfulness_test" / "faithfulness.json"]
    if not all(f.is_file() for f in files):
        return None
    metrics, faith = (json.loads(f.read_text()) for f in files)
    return {
        "metrics": metrics,
        "agree": faith["agreement"]["magnitude"],
        "eraser": faith["eraser"]["sources"]["attention"],
    }


def table(root: Path) -> str:
    runs: dict[str, list[dict]] = {}
    for folder in sorted(root.iterdir()):
        m = RUN.match(folder.name)
        run = read_run(folder) if m else None
        if run is not None:
            runs.setdefault(m["attention"], []).append(run)
    names = attention_order(runs)
    fastest = {a: min(r["metrics"]["epoch_seconds"] for r in runs[a]) for a in names}
    heads = [h for h, _, _ in COLUMNS.values()]
    first = names[0] if names else "-"
    lines = [
        f"| attention | seeds | {' | '.join(heads)} | fastest s / epoch | × {first}'s |",
        "|---|---|" + "---|" * (len(heads) + 2),
    ]
    for a in names:
        cells = [mean_sd_cell([read(r) for r in runs[a]], fmt) for _, read, fmt in COLUMNS.values()]
        ratio = fastest[a] / fastest[first]
        lines.append(f"| {a} | {len(runs[a])} | " + " | ".join(cells) + f" | {fastest[a]:.1f} | {ratio:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python scripts/attentions_table.py <the folder scripts/run_attentions.sh wrote>")
    print(table(Path(sys.argv[1])))
