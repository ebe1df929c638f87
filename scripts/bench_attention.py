"""Speed and memory of dot vs additive attention against sequence length (the table a dot/additive comparison needs).

    python scripts/bench_attention.py [--device cpu|cuda] [--lengths 64 128 ... 4096] [--out outputs/bench_attention]
    python scripts/bench_attention.py --quick      # seconds: tiny sizes, and a numerical check against references

Times forward+backward (median of repeats after a warm-up, the same inputs for
every contender) and peak memory of: the project's dot attention, its additive
attention, and PyTorch's fused `scaled_dot_product_attention` (the reference for
dot), in two forms:
- pooling: one query per sequence over T keys (as in the classifier);
- self-attention: T queries over T keys (a Transformer's setting), where additive
  builds a (B, T, T, h) tensor; configurations estimated to need more than
  --max-gb (about 3 such tensors at once) are skipped and said so.
On CUDA it also runs bf16. Writes a CSV and a log-log plot and prints the growth.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import threading
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnclf.models.attention import AdditiveAttention, AttentionShape, DotAttention
from attnclf.models.classifier import real_tokens


class PeakRSS:
    """Peak resident memory of this process while the block runs, sampled from /proc (Linux; else None)."""

    def __enter__(self):
        self.base = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _rss(self):
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * 4096
        except OSError:
            return None

    def _watch(self):
        while not self._stop.wait(0.0005):
            rss = self._rss()
            if rss is not None:
                self.peak = max(self.peak, rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def used(self):
        return None if self.base is None else self.peak - self.base


def make(kind: str, d: int, h: int, device, dtype):
    if kind == "additive":
        return AdditiveAttention(AttentionShape(d, d, h)).to(device, dtype)
    return DotAttention(AttentionShape(d, d, h)).to(device, dtype)  # "dot" and "sdpa" share the projections


def step(kind: str, module, q, kv, mask):
    if kind == "sdpa":  # the same math as DotAttention, PyTorch's fused kernel
        Q, K = module.q_proj(q), module.k_proj(kv)
        out = F.scaled_dot_product_attention(Q, K, kv, attn_mask=mask.unsqueeze(1))
    else:
        out = module(q, kv, kv, mask)[0]
    out.float().sum().backward()


def measure(kind, form, T, args, device, dtype) -> dict:
    B, d, h = args.batch, args.dim, args.hidden
    Tq = 1 if form == "pooling" else T
    biggest = B * Tq * T * (h if kind == "additive" else 1) * torch.finfo(dtype).bits / 8
    # about three such tensors are alive at once (the saved activation, its gradient and the
    # pre-activation's): measured 12 GB peak for additive self-attention at T=512, whose largest is 4 GB
    need = 3 * biggest
    row = dict(form=form, method=kind, T=T, dtype=str(dtype).replace("torch.", ""), device=device.type)
    if need > args.max_gb * 2**30:
        return {**row, "ms": math.nan, "peak_mb": math.nan, "note": f"skipped: needs about {need / 2**30:.0f} GB"}
    g = torch.Generator(device="cpu").manual_seed(0)
    kv = torch.randn(B, T, d, generator=g).to(device, dtype).requires_grad_()
    q = (kv if form == "self" else torch.randn(B, 1, d, generator=g).to(device, dtype)).detach().requires_grad_()
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    mask = real_tokens(kv, lengths)  # (B, T), on kv's device
    torch.manual_seed(0)
    module = make(kind, d, h, device, dtype)
    for _ in range(args.warmup):
        step(kind, module, q, kv, mask)
    times, peak = [], None
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    with PeakRSS() as rss:
        for _ in range(args.repeats):
            t = time.perf_counter()
            step(kind, module, q, kv, mask)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    peak = torch.cuda.max_memory_allocated() if device.type == "cuda" else rss.used
    return {**row, "ms": statistics.median(times) * 1000, "peak_mb": (peak or 0) / 2**20, "note": ""}


def check_against_references(device) -> None:
    """Dot (pooling) against fused SDPA, additive against the formula written out; raises if they differ."""
    torch.manual_seed(0)
    B, T, d = 3, 17, 8
    kv = torch.randn(B, T, d, device=device)
    q = torch.randn(B, 1, d, device=device)
    mask = torch.arange(T, device=device) < torch.tensor([17, 9, 1], device=device).unsqueeze(1)
    dot = DotAttention(AttentionShape(d, d, 6)).to(device)
    ours = dot(q, kv, kv, mask)[0]
    ref = F.scaled_dot_product_attention(dot.q_proj(q), dot.k_proj(kv), kv, attn_mask=mask.unsqueeze(1))
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    add = AdditiveAttention(AttentionShape(d, d, 5)).to(device)
    scores = torch.tanh(add.q_proj(q).unsqueeze(2) + add.k_proj(kv).unsqueeze(1)) @ add.score_proj.weight[0]
    ref = torch.softmax(scores.masked_fill(~mask.unsqueeze(1), -math.inf), -1) @ kv
    torch.testing.assert_close(add(q, kv, kv, mask)[0], ref, rtol=1e-5, atol=1e-6)
    print("check: dot == fused SDPA (pooling), additive == v^T tanh(W_q q + W_k k): OK")


def growth(rows, form, method, dtype) -> float | None:
    """Slope of log(time) against log(T) over the measured lengths (1 = linear, 2 = quadratic)."""
    pts = [
        (r["T"], r["ms"])
        for r in rows
        if (r["form"], r["method"], r["dtype"]) == (form, method, dtype) and not math.isnan(r["ms"])
    ]
    pts = pts[len(pts) // 2 :] if len(pts) >= 4 else pts  # the long end, where fixed costs no longer dominate
    if len(pts) < 2:
        return None
    xs, ys = [math.log(t) for t, _ in pts], [math.log(m) for _, m in pts]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048, 4096])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--dim", type=int, default=256, help="key/value size (the BiGRU's 2*hidden_dim)")
    p.add_argument("--hidden", type=int, default=256, help="q/k projection size (dot) and tanh layer (additive)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument(
        "--max-gb", type=float, default=4.0, help="skip a configuration estimated to need more memory than this"
    )
    p.add_argument("--forms", nargs="+", default=["pooling", "self"], choices=["pooling", "self"])
    p.add_argument("--out", type=Path, default=Path("outputs/bench_attention"))
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run and the numerical check")
    args = p.parse_args()
    if args.quick:
        args.lengths, args.batch, args.dim, args.hidden, args.repeats, args.warmup = [16, 32], 2, 16, 16, 1, 1
    device = torch.device(args.device)
    check_against_references(device)
    dtypes = [torch.float32] + ([torch.bfloat16] if device.type == "cuda" else [])

    rows = []
    print(f"{'form':<8} {'method':<9} {'dtype':<9} {'T':>5} {'ms':>10} {'peak MB':>9}  note")
    for dtype in dtypes:
        for form in args.forms:
            for T in args.lengths:
                for method in ("dot", "additive", "sdpa"):
                    r = measure(method, form, T, args, device, dtype)
                    rows.append(r)
                    print(
                        f"{form:<8} {method:<9} {r['dtype']:<9} {T:>5} {r['ms']:>10.2f} {r['peak_mb']:>9.1f}  "
                        f"{r['note']}",
                        flush=True,
                    )

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / f"attention_{device.type}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, args.out / f"attention_{device.type}.png")

    print(f"\ngrowth in time (slope of log time vs log T at the long end; 1 = linear, 2 = quadratic), {device.type}:")
    for dtype in {r["dtype"] for r in rows}:
        for form in args.forms:
            slopes = {m: growth(rows, form, m, dtype) for m in ("dot", "additive", "sdpa")}
            print(f"  {form:<8} {dtype:<9} " + "  ".join(f"{m} ~T^{s:.2f}" for m, s in slopes.items() if s))
            both = {
                m: {
                    r["T"]: r["ms"]
                    for r in rows
                    if (r["form"], r["method"], r["dtype"]) == (form, m, dtype) and not math.isnan(r["ms"])
                }
                for m in ("dot", "additive")
            }
            common = sorted(set(both["dot"]) & set(both["additive"]))
            if common:
                T = common[-1]
                print(
                    f"  {'':<8} {'':<9} at T={T} additive takes {both['additive'][T] / both['dot'][T]:.1f}x "
                    f"the time of dot"
                )
    print(f"written {args.out}/attention_{device.type}.csv and .png")


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
    for ax, form in zip(axes, ("pooling", "self"), strict=True):
        for method, style in (("dot", "-o"), ("additive", "-s"), ("sdpa", "--^")):
            for dtype in sorted({r["dtype"] for r in rows}):
                pts = [
                    (r["T"], r["ms"])
                    for r in rows
                    if (r["form"], r["method"], r["dtype"]) == (form, method, dtype) and not math.isnan(r["ms"])
                ]
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, label=f"{method} {dtype}", ms=4)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="sequence length T",
            ylabel="forward+backward ms",
            title=f"{form} ({'1 query' if form == 'pooling' else 'T queries'})",
        )
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
