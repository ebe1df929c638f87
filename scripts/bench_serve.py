"""`attnclf serve` under load: requests/s, reviews/s and latency at 1, 8 and 32 concurrent clients, with one
text and with 16 texts a request, beside offline `TrainedClassifier.predict` on the same texts in the same run.

    python scripts/bench_serve.py --ckpt <run> --data /path/to/imdb [--requests 400] [--clients 1,8,32]
        [--texts 1,16] [--reviews 2000] [--threads 2] [--memory 10000] [--quantize int8] [--out bench_serve.json]

The server is a process of its own (`python -m attnclf serve port=0`), on 127.0.0.1 only; the clients are
one asyncio loop in this process, each with one keep-alive connection, sending POST /predict in turn over a
seeded sample of the data's test reviews. Each setting sends a bounded number of requests (--requests, at
least 4 a client) after a warm-up, and the whole run stops by itself. Offline: `TrainedClassifier.predict` (batch 64)
over the same reviews, in this process, with the server's thread count, measured just before each setting
(the server idle), and each setting's figures are given as ratios to it; beside them, the model alone on
batches of as many texts as the setting keeps waiting (what the server's batching can give at most).
--memory N: after the table, N one-text requests from 8 clients, the server's resident memory after the
first 100 and after all N. --litserve: the same /predict served by LitServe (`pip install litserve`; its
batching: up to 64 requests, 5 ms), the comparison behind docs/decisions.md's choice. --quantize int8: the
server's /predict in int8, the offline reference still float (the targets are ratios to float offline).
--explain (--ckpt given once a run, e.g. a dot and an additive run): /explain's seconds on the first run's
median, 90th-percentile and longest review, its flip search batched against one pass a deletion, and the
explorer page with every run served at those lengths. --pages (--ckpt given once a run, e.g. five IMDb
runs): the explorer at several models as a user meets it, idle: /browse's first visit (from the server's
start, its rows prepared in the background), the median review's page read the first time, and a click's
page (a word deleted: the redirect and the page it opens). Timings, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import torch

READY = re.compile(r"serving .* at http://([\d.]+):(\d+)/ ")


def sample_texts(data: str, n: int, seed: int = 0, max_chars: int = 100_000) -> list[str]:
    """n of the data's test texts (seeded), or the first n lines of a .txt file; none empty or over the
    server's default max_text_chars."""
    if data.endswith(".txt"):
        texts = Path(data).read_text(encoding="utf-8").splitlines()
    else:
        from attnclf.data.loading import load_splits

        texts = load_splits(data)["test"]["text"]
    texts = [t for t in texts if t and t.strip() and len(t) <= max_chars]
    return random.Random(seed).sample(texts, min(n, len(texts)))


class Offline:
    """The references, in this process with the server's thread count: `TrainedClassifier.predict` (batches of 64
    sorted by length over all the texts), and the model alone on batches as the server forms them."""

    def __init__(self, ckpt: str, texts: list[str], threads: int):
        from attnclf.inference.trained import TrainedClassifier

        torch.set_num_threads(threads)
        self.clf, self.texts = TrainedClassifier.from_checkpoint(ckpt), texts
        self.readings = [self.clf.read(t) for t in texts]
        self.clf.predict(texts[:64])

    def predict(self) -> float:
        """TrainedClassifier.predict's reviews/s over the texts."""
        t = time.perf_counter()
        self.clf.predict(self.texts, batch_size=64)
        return len(self.texts) / (time.perf_counter() - t)

    def alone(self, n: int, at_most: int = 512, batch_tokens: int = 16384) -> float:
        """reviews/s of predict_readings over groups of `n` texts (what `n` waiting texts give the server:
        sorted, cut by batch_tokens), over the first `at_most` texts (at least one group)."""
        readings = self.readings[: max(n, min(len(self.readings), at_most))]
        t = time.perf_counter()
        for i in range(0, len(readings), n):
            self.clf.predict_readings(readings[i : i + n], batch_tokens)
        return len(readings) / (time.perf_counter() - t)


def start_server(
    ckpt: str, threads: int, cwd: Path, litserve: bool = False, quantize: str = "none", extra: tuple = ()
) -> tuple[subprocess.Popen, str, int]:
    cmd = [
        sys.executable,
        "-m",
        "attnclf",
        "serve",
        f"ckpt=[{ckpt}]",
        "port=0",
        f"num_threads={threads}",
        f"quantize={quantize}",
        "hydra.run.dir=" + str(cwd / "serve_run"),
        *extra,
    ]
    if litserve:
        cmd = [sys.executable, __file__, "--ckpt", ckpt, "--data", "-", "--threads", str(threads), "--serve-litserve"]
    # (a session of its own: the stop at the end reaches LitServe's worker processes too)
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    deadline = time.time() + 300
    for line in proc.stdout:
        m = READY.search(line)
        if m:
            return proc, m.group(1), int(m.group(2))
        if time.time() > deadline:
            break
    proc.kill()
    sys.exit("error: the server printed no address: " + line.strip())


try:  # (the comparison only: LitServe is no dependency of attnclf's)
    import litserve as ls
except ImportError:
    ls = None

if ls is not None:

    class LitPredict(ls.LitAPI):
        """/predict on LitServe: the same reading, batches by token budget within what LitServe batched, and
        the same answer as attnclf serve's (at module level: LitServe's worker process unpickles it)."""

        def __init__(self, ckpt: str, threads: int, **kw):
            super().__init__(**kw)
            self.ckpt, self.threads = ckpt, threads

        def setup(self, device):
            from attnclf.inference.trained import TrainedClassifier

            torch.set_num_threads(self.threads)
            self.clf = TrainedClassifier.from_checkpoint(self.ckpt)

        def decode_request(self, request):
            return [self.clf.read(t) for t in request["texts"]]

        def batch(self, inputs):
            return inputs

        def predict(self, batch):
            preds = self.clf.predict_readings([r for item in batch for r in item])
            at = [0, *np.cumsum([len(item) for item in batch])]
            return [preds[a:b] for a, b in zip(at[:-1], at[1:], strict=True)]

        def unbatch(self, output):
            return output

        def encode_response(self, preds):
            from attnclf.serving.explain import prediction_json

            return {"predictions": [prediction_json("dot", p, self.clf.labels) for p in preds]}


def serve_litserve(ckpt: str, threads: int) -> None:
    """LitServe serving LitPredict on a free port of 127.0.0.1 (batches of up to 64 requests, 5 ms)."""
    import socket

    if ls is None:
        sys.exit("error: --litserve needs LitServe: pip install litserve")
    with socket.socket() as s:  # (a free port, said as attnclf serve says it)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = LitPredict(ckpt, threads, max_batch_size=64, batch_timeout=0.005)
    server = ls.LitServer(api, accelerator="cpu", workers_per_device=1)
    print(f"serving litserve at http://127.0.0.1:{port}/ (LitServe)", flush=True)
    server.run(host="127.0.0.1", port=port, generate_client_file=False, num_api_servers=1, log_level="warning")


def rss_mib(pid: int) -> float:
    """A process's resident memory (VmRSS), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads the answer (plain asyncio streams: the
    clients must cost the shared cores as little as they can)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return int(status_line.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


async def load(host: str, port: int, bodies: list[bytes], clients: int, requests: int) -> list[float]:
    """`requests` POST /predict from `clients` connections, bodies taken in turn; each one's seconds."""
    conns = [Connection(host, port) for _ in range(clients)]
    await asyncio.gather(*(c.open() for c in conns))
    latencies: list[float] = []
    next_one = iter(range(requests))

    async def client(conn: Connection) -> None:
        for i in next_one:
            t = time.perf_counter()
            status, answer = await conn.post("/predict", bodies[i % len(bodies)])
            latencies.append(time.perf_counter() - t)
            if status != 200:
                raise SystemExit(f"error: /predict answered {status}: {answer[:200]!r}")

    await asyncio.gather(*(client(c) for c in conns))
    for c in conns:
        c.close()
    return latencies


def wait_health(host: str, port: int, seconds: float = 300) -> None:
    import urllib.request

    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"error: nothing answers /health at {host}:{port}")


def measure(host: str, port: int, texts: list[str], clients: int, per: int, requests: int, ref: Offline) -> dict:
    """One setting: a warm-up (a request a client), then `requests` requests of `per` texts each; the
    references measured just before it (the server idle), so that a slow spell of the machine hits both."""
    offline_s, alone_s = ref.predict(), ref.alone(clients * per)
    bodies = [json.dumps({"texts": texts[i : i + per]}).encode() for i in range(0, len(texts) - per + 1, per)]
    requests = max(requests, 4 * clients)
    asyncio.run(load(host, port, bodies, clients, clients))
    t = time.perf_counter()
    lat = asyncio.run(load(host, port, bodies, clients, requests))
    seconds = time.perf_counter() - t
    q = statistics.quantiles(lat, n=100, method="inclusive")
    return {
        "clients": clients,
        "texts": per,
        "requests": requests,
        "requests_s": requests / seconds,
        "reviews_s": requests * per / seconds,
        "p50_ms": 1000 * q[49],
        "p95_ms": 1000 * q[94],
        "p99_ms": 1000 * q[98],
        "offline_reviews_s": offline_s,
        "alone_reviews_s": alone_s,
    }


def memory(proc: subprocess.Popen, host: str, port: int, texts: list[str], n: int) -> dict:
    """The server's resident memory after the first 100 one-text requests and after `n`."""
    bodies = [json.dumps({"texts": [t]}).encode() for t in texts]
    asyncio.run(load(host, port, bodies, 8, 100))
    first = rss_mib(proc.pid)
    asyncio.run(load(host, port, bodies, 8, max(n - 100, 0)))
    return {"requests": n, "rss_after_100_mib": first, "rss_after_all_mib": rss_mib(proc.pid)}


def table(rows: list[dict]) -> str:
    """The figures, a row a setting, as ratios to offline measured beside it; `model alone`: the model
    without HTTP on as many texts at once as the setting keeps waiting (clients x texts), what the server's
    batches can give at most."""
    lines = [
        "| clients | texts a request | requests/s | reviews/s | x offline | model alone, x offline | p50 ms | "
        "p95 ms | p99 ms | p99/p50 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        served, alone = r["reviews_s"] / r["offline_reviews_s"], r["alone_reviews_s"] / r["offline_reviews_s"]
        lines.append(
            f"| {r['clients']} | {r['texts']} | {r['requests_s']:.1f} | {r['reviews_s']:.1f} | "
            f"{served:.2f} | {alone:.2f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | "
            f"{r['p99_ms']:.1f} | {r['p99_ms'] / r['p50_ms']:.2f} |"
        )
    return "\n".join(lines)


def print_explain(ref: Offline, ckpts: list[str], threads: int, work: Path) -> None:
    """/explain's work (attnclf.serving.explain: leave-one-out, gradient, the flip search) on the first run's
    reviews at the median, the 90th percentile and the longest, seconds each (after one warm-up); the flip
    search alone, batched as served against one forward pass a deletion; then the explorer page with every
    run served, over a real socket, on other reviews at those lengths (each read for the first time)."""
    from attnclf.serving.explain import explain

    by_length = sorted(ref.readings, key=lambda r: len(r.ids))
    at = {q: min(int(q * len(by_length)), len(by_length) - 1) for q in (0.5, 0.9, 1.0)}
    for q, i in at.items():
        explain(ref.clf, by_length[i])
        t = time.perf_counter()
        explain(ref.clf, by_length[i])
        print(f"/explain, {len(by_length[i].ids)} tokens (quantile {q}): {time.perf_counter() - t:.2f} s")
    print_flip_search(ref.clf, by_length[at[0.5]])
    proc, host, port = start_server(",".join(ckpts), threads, work)
    try:
        for q, i in at.items():
            page = f"http://{host}:{port}/?" + urlencode({"text": by_length[max(0, i - 1)].text})
            urllib.request.urlopen(page, timeout=600).read()  # (a warm-up on the review beside it)
            page = f"http://{host}:{port}/?" + urlencode({"text": by_length[i].text})
            t = time.perf_counter()
            urllib.request.urlopen(page, timeout=600).read()
            took = time.perf_counter() - t
            print(f"the page, {len(ckpts)} models, {len(by_length[i].ids)} tokens (quantile {q}): {took:.2f} s")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def print_pages(ref: Offline, ckpts: list[str], threads: int, work: Path) -> None:
    """The explorer at len(ckpts) models, idle, over a real socket: /browse's first visit counted from the
    server's start (its rows kept by an earlier start removed first), the median review's page read the first
    time, and a click's page (the word in the middle deleted: the 303 and the page it opens)."""
    for ckpt in ckpts:
        for kept in Path(ckpt).glob("browse_test_*.json"):
            kept.unlink()
    by_length = sorted(ref.readings, key=lambda r: len(r.ids))
    median = by_length[len(by_length) // 2]
    proc, host, port = start_server(",".join(ckpts), threads, work, extra=("browse_wait=600",))
    start, base = time.perf_counter(), f"http://{host}:{port}"
    try:
        page = urllib.request.urlopen(f"{base}/browse", timeout=900).read().decode()
        took = time.perf_counter() - start
        assert "<table class='metrics'>" in page, page[-300:]
        print(f"/browse's first visit, {len(ckpts)} models, from the server's start: {took:.1f} s")
        t = time.perf_counter()
        urllib.request.urlopen(f"{base}/?" + urlencode({"text": median.text}), timeout=600).read()
        took = time.perf_counter() - t
        print(f"the median review's page ({len(median.ids)} tokens), read the first time: {took:.2f} s")
        t = time.perf_counter()
        click = {"text": median.text, "pinned": median.text, "delete": len(median.ids) // 2}
        urllib.request.urlopen(f"{base}/?" + urlencode(click), timeout=600).read()
        print(f"a click's page (a word deleted, the redirect followed): {time.perf_counter() - t:.2f} s")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def print_flip_search(clf, reading, within: int = 50) -> None:
    """What flips a review, in three orders up to `within` words: batched (attnclf.serving.explain.flips, as
    served) against one forward pass a deletion (each order until it flips or reaches `within`)."""
    from attnclf.analysis import measures
    from attnclf.serving.explain import explain, flips

    # (the measures /explain computed, its probabilities and weights among them)
    pred, ex = explain(clf, reading, within)
    scores = {"attention": pred.weights, "gradient": ex["gradient"], "leave_one_out": ex["leave_one_out"]}
    model, probs = clf.module.model, np.asarray([pred.probs])
    scores = {k: np.asarray([np.nan if v is None else v for v in s], dtype=float) for k, s in scores.items()}
    t = time.perf_counter()
    batched = flips(model, reading, probs, scores, within)
    took = time.perf_counter() - t
    t, passes = time.perf_counter(), 0
    for s in scores.values():
        order = measures.ranking(np.nan_to_num(s, nan=-np.inf))
        for k in range(1, min(within, len(reading.ids) - 1) + 1):
            passes += 1
            kept = np.delete(reading.ids, order[:k])
            if measures.probabilities(model, [kept]).argmax() != probs.argmax():
                break
    alone = time.perf_counter() - t
    counts = {k: v["count"] for k, v in batched.items()}
    print(
        f"the flip search, {len(reading.ids)} tokens, within {within} ({counts}): batched {took:.3f} s, "
        f"one pass a deletion {alone:.3f} s ({passes} passes)"
    )


def print_budgets(ref: Offline, budgets: list[int], arrivals: list[int]) -> None:
    """The model alone (no server) on groups of each size in `arrivals`, under each batch_tokens."""
    print("| batch_tokens | " + " | ".join(f"{n} waiting, reviews/s" for n in arrivals) + " |")
    print("|---|" + "---|" * len(arrivals))
    for b in budgets:
        print(f"| {b} | " + " | ".join(f"{ref.alone(n, batch_tokens=b):.0f}" for n in arrivals) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, action="append", help="a run folder or checkpoint (--explain: several)")
    ap.add_argument("--data", required=True, help="the data whose test texts are sent (or a .txt, one a line)")
    ap.add_argument("--reviews", type=int, default=2000, help="texts sampled (offline runs over all of them)")
    ap.add_argument("--requests", type=int, default=400, help="requests a setting (at least 4 a client)")
    ap.add_argument("--clients", default="1,8,32")
    ap.add_argument("--texts", default="1,16", help="texts a request")
    ap.add_argument("--threads", type=int, default=2, help="torch threads, the server's and offline's")
    ap.add_argument("--memory", type=int, default=0, help="one-text requests of the memory check (0: none)")
    ap.add_argument("--out", type=Path, help="the figures as JSON too")
    ap.add_argument("--litserve", action="store_true", help="serve with LitServe instead (the comparison)")
    ap.add_argument("--quantize", default="none", help="the server's quantize= (int8: offline stays float)")
    ap.add_argument("--budgets", help="instead: the model alone under these batch_tokens, e.g. 4096,16384")
    ap.add_argument("--explain", action="store_true", help="instead: /explain's seconds on short to long reviews")
    ap.add_argument("--pages", action="store_true", help="instead: the explorer's pages at several models, idle")
    ap.add_argument("--serve-litserve", action="store_true", help=argparse.SUPPRESS)  # (the LitServe process)
    args = ap.parse_args()
    ckpts, args.ckpt = args.ckpt, args.ckpt[0]
    if args.serve_litserve:
        return serve_litserve(args.ckpt, args.threads)
    texts = sample_texts(args.data, args.reviews)
    clients, per = [int(c) for c in args.clients.split(",")], [int(k) for k in args.texts.split(",")]
    ref = Offline(args.ckpt, texts, args.threads)
    if args.explain or args.pages:
        work = Path(args.out.parent if args.out else ".").resolve() / "bench_serve_work"
        work.mkdir(parents=True, exist_ok=True)
        return (print_pages if args.pages else print_explain)(ref, ckpts, args.threads, work)
    if args.budgets:
        return print_budgets(ref, [int(b) for b in args.budgets.split(",")], [c * k for k in per for c in clients])
    work = Path(args.out.parent if args.out else ".").resolve() / "bench_serve_work"
    work.mkdir(parents=True, exist_ok=True)
    proc, host, port = start_server(args.ckpt, args.threads, work, args.litserve, args.quantize)
    if args.litserve:  # (it prints its port before it answers)
        wait_health(host, port)
    try:
        rows = [measure(host, port, texts, c, k, args.requests, ref) for k in per for c in clients]
        mem = memory(proc, host, port, texts, args.memory) if args.memory else None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    rates = [r["offline_reviews_s"] for r in rows]
    print(
        f"offline TrainedClassifier.predict: {statistics.median(rates):.1f} reviews/s ({len(texts)} reviews, "
        f"{args.threads} threads; {min(rates):.1f} to {max(rates):.1f} over the settings)"
    )
    print(table(rows))
    if mem:
        grew = mem["rss_after_all_mib"] / mem["rss_after_100_mib"] - 1
        print(
            f"resident memory: {mem['rss_after_100_mib']:.0f} MiB after 100 requests, "
            f"{mem['rss_after_all_mib']:.0f} MiB after {mem['requests']} ({100 * grew:+.1f}%)"
        )
    if args.out:
        figures = {"rows": rows, "memory": mem}
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
