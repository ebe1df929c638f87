"""The benchmark scripts run (timings are not tested, only that they run and agree with the references)."""

import subprocess
import sys

from conftest import ROOT


def test_bench_attention_quick(tmp_path):
    r = subprocess.run(
        [sys.executable, "scripts/bench_attention.py", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "dot == fused SDPA (pooling), additive == v^T tanh(W_q q + W_k k): OK" in r.stdout
    assert "growth in time" in r.stdout
    rows = (tmp_path / "attention_cpu.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 2 * 3  # header + forms x lengths x methods
    assert (tmp_path / "attention_cpu.png").stat().st_size > 0
