"""What the scripts of scripts/ share: timing (each callable's median over repeats, timed round robin after a
warm-up), process isolation (a command in a process of its own, its output back), and the mean ± sd cell of the
results tables (remedies_table.py, attentions_table.py). Each prints its own table: their columns have nothing
in common."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def medians_ms(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1) -> dict[str, float]:
    """Median ms of each function, timed in turn (round robin), so that a busy spell on the machine hits them all.
    A function that must wait for a device does so itself (torch.cuda.synchronize) before it returns."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {key: [] for key in fns}
    for _ in range(repeats):
        for key, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    return {key: 1000 * statistics.median(ts) for key, ts in times.items()}


def isolated(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """`cmd` in a process of its own (a cold start, its own allocator and threads), its output captured; one line
    with the end of its stderr where it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        sys.exit(f"error: {' '.join(cmd[:4])} ... exited {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
    return r


def mean_sd_cell(values: list[float], fmt: str) -> str:
    """A table cell: the mean ± sd of `values` in `fmt` (the mean alone for one value, – for none)."""
    if not values:
        return "–"
    mean = fmt.format(statistics.fmean(values))
    return f"{mean} ± {fmt.format(statistics.stdev(values))}" if len(values) > 1 else mean
