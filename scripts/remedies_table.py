"""The remedies table of docs/results.md ("Attention that explains"), from the runs scripts/run_remedies.sh made:
for each attention and remedy, the mean ± sd over the seeds found of every yardstick, and the fastest seed's
seconds an epoch (a run's time is wall-clock: a machine shared with other work only ever adds to it, so the
fastest run is the one nearest the model's own cost).

    python scripts/remedies_table.py outputs/remedies/sst

Reads <folder>/<remedy>_<attention>_s<seed>/: metrics.json (test accuracy, seconds an epoch),
faithfulness_test/faithfulness.json and attention_tests/diagnostic.json. Prints a Markdown table.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from harness import mean_sd_cell  # (scripts/harness.py: what the scripts share)

REMEDIES = ("softmax", "orthogonal", "diversity", "sparsemax", "entmax15")
ATTENTIONS = ("dot", "additive")
RUN = re.compile(r"(?P<remedy>\w+?)_(?P<attention>dot|additive)_s(?P<seed>\d+)$")

# column: (heading, how it is read from a run's figures, its format)
COLUMNS = {
    "acc": ("test acc %", lambda r: 100 * r["metrics"]["test/acc"], "{:.1f}"),
    "tau_grad": ("τ grad", lambda r: r["agree"]["gradient"]["mean"], "{:.2f}"),
    "sig_grad": ("sig. %", lambda r: 100 * r["agree"]["gradient"]["significant"], "{:.0f}"),
    "tau_loo": ("τ LOO", lambda r: r["agree"]["loo"]["mean"], "{:.2f}"),
    "sig_loo": ("sig. %", lambda r: 100 * r["agree"]["loo"]["significant"], "{:.0f}"),
    "perm": ("perm. median ΔTV", lambda r: r["faith"]["permutation"]["median_tv"], "{:.4f}"),
    "comp": ("comp. AOPC", lambda r: r["eraser"]["aopc_comprehensiveness"], "{:.3f}"),
    "suff": ("suff. AOPC", lambda r: r["eraser"]["aopc_sufficiency"], "{:.3f}"),
    "adv": ("adv. median JSD", lambda r: r["faith"]["adversarial"]["median_jsd"], "{:.3f}"),
    "frozen": ("diag. frozen %", lambda r: 100 * r["diag"]["frozen"]["accuracy"], "{:.1f}"),
    "uniform": ("diag. uniform %", lambda r: 100 * r["diag"]["uniform"]["accuracy"], "{:.1f}"),
    "conicity": ("conicity", lambda r: r["faith"]["states"]["conicity"]["mean"], "{:.2f}"),
    "zeros": ("zero weights %", lambda r: 100 * r["faith"]["states"]["zero_weight_share"]["mean"], "{:.1f}"),
}
EPOCH_S = ("fastest s / epoch", lambda r: r["metrics"]["epoch_seconds"], "{:.1f}")


def read_run(folder: Path) -> dict | None:
    """A run's figures, or None where one of its three files is not there yet."""
    files = [
        folder / "metrics.json",
        folder / "faithfulness_test" / "faithfulness.json",
        folder / "attention_tests" / "diagnostic.json",
    ]
    if not all(f.is_file() for f in files):
        return None
    metrics, faith, diag = (json.loads(f.read_text()) for f in files)
    return {
        "metrics": metrics,
        "faith": faith,
        "agree": faith["agreement"]["magnitude"],
        "eraser": faith["eraser"]["sources"]["attention"],
        "diag": diag["weights"],
    }


def table(root: Path) -> str:
    runs: dict[tuple[str, str], list[dict]] = {}
    for folder in sorted(root.iterdir()):
        m = RUN.match(folder.name)
        run = read_run(folder) if m else None
        if run is not None:
            runs.setdefault((m["attention"], m["remedy"]), []).append(run)
    heads = [h for h, _, _ in COLUMNS.values()] + [EPOCH_S[0]]
    lines = [
        "| attention | remedy | seeds | " + " | ".join(heads) + " | × plain's time |",
        "|---|---|---|" + "---|" * (len(heads) + 1),
    ]
    for attention in ATTENTIONS:
        plain = runs.get((attention, "softmax"), [])
        plain_s = min(map(EPOCH_S[1], plain), default=None)
        for remedy in REMEDIES:
            group = runs.get((attention, remedy), [])
            cells = [mean_sd_cell([read(r) for r in group], fmt) for _, read, fmt in COLUMNS.values()]
            fastest = min(map(EPOCH_S[1], group), default=None)
            cells.append("–" if fastest is None else EPOCH_S[2].format(fastest))
            ratio = "–" if fastest is None or not plain_s else f"{fastest / plain_s:.2f}"
            lines.append(f"| {attention} | {remedy} | {len(group)} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python scripts/remedies_table.py <the folder scripts/run_remedies.sh wrote>")
    print(table(Path(sys.argv[1])))
