"""`attnclf serve` started as a user starts it: a process of its own on a free port of 127.0.0.1."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READY = re.compile(r"serving .* at (http://\S+/) ")


class Served:
    """A running server: its address, its process, and what it has printed so far."""

    def __init__(self, proc: subprocess.Popen, lines: queue.Queue):
        self.proc, self.lines, self.printed = proc, lines, []
        self.url = ""

    def wait_ready(self, timeout: float) -> str:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no address printed within {timeout} s:\n" + "".join(self.printed)) from None
            if line is None:
                raise AssertionError("the server ended before it answered:\n" + "".join(self.printed))
            self.printed.append(line)
            m = READY.search(line)
            if m:
                self.url = m.group(1)
                return self.url

    def lines_for(self, seconds: float) -> list[str]:
        """What it prints within the next `seconds` (it goes on running)."""
        got, end = [], time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            got.append(line)
        self.printed.extend(got)
        return got

    def rss_mb(self) -> float:
        """Its resident memory now, in MB (Linux)."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024

    def rest(self) -> str:
        """What it printed after the address (once it has ended)."""
        while True:
            try:
                line = self.lines.get(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            self.printed.append(line)
        return "".join(self.printed)

    def get(self, path: str, timeout: float = 30):
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=timeout) as r:
            return r.status, json.loads(r.read())

    def post(self, path: str, body: dict, timeout: float = 60):
        req = urllib.request.Request(
            self.url.rstrip("/") + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())


@contextmanager
def served(args: list[str], cwd: Path, timeout: float = 120, env: dict | None = None) -> Iterator[Served]:
    """`python -m attnclf serve port=0 <args>` in `cwd` (with `env` added to the environment), ready (its address
    printed); stopped after the block where it still runs (SIGTERM, then a kill after 20 s)."""
    proc = subprocess.Popen(
        # (a first /browse waits for its rows whatever the machine's load)
        [sys.executable, "-m", "attnclf", "serve", "port=0", "browse_wait=600", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue = queue.Queue()

    def read():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    server = Served(proc, lines)
    try:
        server.wait_ready(timeout)
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
