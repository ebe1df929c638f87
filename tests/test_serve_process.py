"""attnclf serve as a user runs it: a process of its own (started, asked, stopped by SIGTERM with a request in
flight), its bad settings (the page in a real browser: tests/test_explorer_browser.py)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest
from helpers.server import served

pytestmark = pytest.mark.slow

TEXT = "A wonderful film, really moving! The plot was dull at times."


def test_a_server_process_answers_then_stops_on_sigterm_answering_the_request_in_flight(tiny_run, tmp_path):
    with served([f"ckpt={tiny_run}"], tmp_path) as server:
        assert server.get("/health") == (200, {"status": "ok", "models": ["dot"]})
        status, body = server.post("/predict", {"texts": [TEXT, "awful"]})
        assert status == 200 and len(body["predictions"]) == 2
        # a request whose body is still arriving when SIGTERM comes: answered, then the process ends with 0
        host, port = server.url.split("//")[1].rstrip("/").split(":")
        body = b'{"texts": ["a superb film"]}'
        conn = socket.create_connection((host, int(port)), timeout=30)
        conn.sendall(
            b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        # another request answered after it: the server's one event loop has read the first one's head by then
        # (a fixed wait was not enough on a loaded machine)
        assert server.get("/health")[0] == 200
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        conn.sendall(body[10:])
        # the answer whole: its head and body may come in separate segments; the server closes the connection
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        conn.close()
        answer = b"".join(chunks).decode()
        assert answer.startswith("HTTP/1.1 200") and '"predictions"' in answer, answer
        assert server.proc.wait(20) == 0
        printed = server.rest()
    assert "Traceback" not in printed and "Shutting down" in printed


def test_a_port_in_use_is_one_line_exit_2_from_the_command_line(tiny_run, tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        r = subprocess.run(
            [sys.executable, "-m", "attnclf", "serve", f"ckpt={tiny_run}", f"port={port}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        taken.close()
    assert (
        r.returncode == 2
        and r.stderr == f"error: port={port} is in use on 127.0.0.1; give another (port=0: any free one)\n"
    )
    assert list(tmp_path.iterdir()) == []  # (the run folder Hydra made is gone again)
