"""attnclf serve over a real socket, where an in-process client cannot see: a body nested too deeply, a client
that hangs up or stalls mid-body, a body over the cap from a client that writes it whole before reading, a
large request beside a small one, the API key's forms and links, pages answering as pages, and the memory a
list of bad requests leaves. Every server is a process of its own on 127.0.0.1, each client bounded in time."""

from __future__ import annotations

import html
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import httpx
import pytest
from helpers.server import served

pytestmark = pytest.mark.slow

TIMEOUT = 2


def address(server) -> tuple[str, int]:
    host, port = server.url.split("//")[1].rstrip("/").split(":")
    return host, int(port)


def head_of(path: str, length: int, method: str = "POST") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def exchange(server, data: bytes, wait: float = 10) -> bytes:
    """What the server answers to `data` on a connection of its own, read until it closes or `wait` passes."""
    conn = socket.create_connection(address(server), timeout=wait)
    try:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except TimeoutError:
        return b"".join(chunks) + b"<still open>"
    finally:
        conn.close()


def urlopen(server, path: str, body: bytes | None = None, headers: dict | None = None, method: str | None = None):
    """(status, headers, body) by Python's urllib, which writes a whole body before it reads."""
    request = urllib.request.Request(server.url.rstrip("/") + path, body, headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.fixture(scope="module")
def server(tiny_run, tmp_path_factory):
    limits = ["max_texts=64", "max_text_chars=400000", "max_body_bytes=30000000", f"body_timeout={TIMEOUT}"]
    with served([f"ckpt={tiny_run}", *limits], tmp_path_factory.mktemp("serve")) as s:
        yield s


def test_json_nested_deeper_than_the_reader_goes_is_a_400_not_a_traceback(server):
    body = b"[" * 100_000 + b"]" * 100_000
    answer = exchange(server, head_of("/predict", len(body)) + body)
    assert answer.startswith(b"HTTP/1.1 400") and b"nested deeper than the JSON reader goes" in answer, answer
    assert not any("Traceback" in line for line in server.lines_for(0.5))


def test_a_client_that_hangs_up_mid_body_is_one_info_line(server):
    for _ in range(20):
        conn = socket.create_connection(address(server), timeout=10)
        conn.sendall(head_of("/predict", 1000) + b"12345678")
        conn.close()
    printed = server.lines_for(1.5)
    gone = [line for line in printed if "went away" in line]
    assert len(gone) == 20 and all("[INFO]" in line for line in gone), printed
    assert not any("ERROR" in line or "Traceback" in line for line in printed), printed


def test_a_body_that_does_not_arrive_in_time_is_a_408_and_the_connection_closed(server):
    start = time.monotonic()
    answer = exchange(server, head_of("/predict", 1000) + b"12345678", wait=TIMEOUT + 10)
    took = time.monotonic() - start
    assert answer.startswith(b"HTTP/1.1 408") and b"within 2 s (body_timeout)" in answer, answer
    # (closed: the read ended at the server's close, not at the client's wait)
    assert not answer.endswith(b"<still open>") and TIMEOUT - 0.5 < took < TIMEOUT + 5


def test_a_body_over_the_cap_is_read_and_dropped_so_that_urllib_reads_the_413(server):
    status, _, body = urlopen(server, "/predict", b"x" * 35_000_000, {"Content-Type": "application/json"})
    assert status == 413 and json.loads(body)["error"].endswith("at most 30000000 (max_body_bytes)")
    # and the server answers the next at once
    assert urlopen(server, "/health")[0] == 200


def test_a_large_request_does_not_hold_up_a_small_one_past_its_own_reading(server):
    """Tokenising runs off the event loop: a small /predict sent while a large one's 64 texts are being read
    is answered long before the large one (tokenised on the loop, it waited for the whole reading)."""
    large = {"texts": ["a wonderful film, really moving! " * 12_000] * 64}
    took = {}

    def send(name, body):
        start = time.monotonic()
        with httpx.Client(timeout=120) as c:
            assert c.post(server.url + "predict", json=body).status_code == 200
        took[name] = time.monotonic() - start

    big = threading.Thread(target=send, args=("large", large))
    big.start()
    time.sleep(0.6)
    send("small", {"texts": ["superb"]})
    big.join(120)
    assert took["small"] < 0.5 * took["large"], took


def test_head_where_get_is_and_no_log_line_for_a_favicon(server):
    assert urlopen(server, "/health", method="HEAD")[:1] == (200,)
    status, _, body = urlopen(server, "/favicon.ico")
    assert status == 204 and body == b""
    assert not any("favicon" in line for line in server.lines_for(0.5))


def test_pages_answer_pages_api_routes_json_and_echoed_values_are_cut(server):
    status, headers, body = urlopen(server, "/browse?order=junk")
    assert status == 422 and headers["content-type"].startswith("text/html") and b"order=&#39;junk&#39;" in body
    # one model served: the models' disagreement is not offered
    status, _, body = urlopen(server, "/browse")
    assert status == 200 and b"the models disagree" not in body
    status, headers, body = urlopen(server, "/?row=" + "x" * 100_000)
    assert status == 404 and headers["content-type"].startswith("text/html") and len(body) < 5000
    status, headers, body = urlopen(
        server,
        "/predict",
        b'{"texts": ["a"], "model": "' + b"y" * 100_000 + b'"}',
        {"Content-Type": "application/json"},
    )
    assert status == 422 and headers["content-type"] == "application/json" and len(body) < 300
    assert all(len(line) < 400 for line in server.lines_for(0.5))


@pytest.fixture(scope="module")
def keyed(tiny_run, tmp_path_factory):
    with served([f"ckpt={tiny_run}"], tmp_path_factory.mktemp("keyed"), env={"ATTNCLF_API_KEY": "s3cret"}) as s:
        yield s


def test_the_key_is_carried_by_every_link_and_asked_for_in_a_way_a_browser_can_follow(keyed):
    status, headers, body = urlopen(keyed, "/")
    assert status == 401 and headers["content-type"].startswith("text/html") and b"/?key=&lt;key&gt;" in body
    for path in ("/?key=s3cret", "/docs?key=s3cret", "/browse?key=s3cret"):
        status, _, page = urlopen(keyed, path)
        assert status == 200 and b"href='/docs?key=s3cret'" in page, path
    _, _, docs = urlopen(keyed, "/docs?key=s3cret")
    assert b"href='/openapi.json?key=s3cret'" in docs and b"X-API-Key: $ATTNCLF_API_KEY" in docs
    # one value, read once: a second key= is refused, not read as the first
    assert urlopen(keyed, "/?key=s3cret&key=wrong")[0] == 401
    assert urlopen(keyed, "/?key=wrong&key=s3cret")[0] == 401
    for headers in ({"X-API-Key": "s3cret"}, {"Authorization": "Bearer s3cret"}):
        assert urlopen(keyed, "/openapi.json", headers=headers)[0] == 200
    schemes = json.loads(urlopen(keyed, "/openapi.json?key=s3cret")[2])["components"]["securitySchemes"]
    assert {s["type"] for s in schemes.values()} == {"apiKey", "http"}


def test_the_curl_examples_on_docs_answer_as_shown(keyed):
    """Each route's curl example on /docs, run as a user copies it (the key from the environment)."""
    page = html.unescape(urlopen(keyed, "/docs?key=s3cret")[2].decode())
    examples = re.findall(r"<pre>(curl [^<]*)</pre>", page)
    assert len(examples) == 7, examples
    for example in examples:
        run = subprocess.run(
            ["bash", "-c", example + " -o /dev/null -w '%{http_code}'"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "ATTNCLF_API_KEY": "s3cret"},
        )
        assert run.stdout == "200", (example, run.stdout, run.stderr)


def bad_requests(server) -> None:
    """A round of bad requests, each kind a client has sent, and the largest good ones."""
    json_type = {"Content-Type": "application/json"}
    exchange(server, head_of("/predict", 200_000) + b"[" * 100_000 + b"]" * 100_000)
    urlopen(server, "/predict", b"x" * 5_000_000, json_type)
    urlopen(server, "/?row=" + "x" * 100_000)
    for body in (
        {"texts": ["a"] * 100_000},
        {"texts": [1] * 100_000},
        {"texts": [{"a": [1, 2]}] * 50_000},
        {},
        {"texts": []},
        ["a"],
        {"texts": ["a"], "model": "nosuch"},
    ):
        urlopen(server, "/predict", json.dumps(body).encode(), json_type)
    for body in (b"{not json", b'{"texts": ["\xff\xfe"]}'):
        urlopen(server, "/predict", body, json_type)
    for _ in range(20):
        conn = socket.create_connection(address(server), timeout=10)
        conn.sendall(head_of("/predict", 1000) + b"1234")
        conn.close()
    long = "a wonderful film, really moving! the plot was dull at times. " * 2000
    urlopen(server, "/predict", json.dumps({"texts": [long[:100_000]] * 64, "model": "dot"}).encode(), json_type)
    urlopen(server, "/explain", json.dumps({"text": " ".join(long.split()[:1040]), "model": "dot"}).encode(), json_type)


def test_memory_after_rounds_of_bad_requests_stays_within_half_again_a_fresh_servers(
    tiny_run, tiny_run_additive, tmp_path
):
    with served([f"ckpt=[{tiny_run},{tiny_run_additive}]"], tmp_path) as server:
        time.sleep(1)
        fresh = server.rss_mb()
        for _ in range(3):
            bad_requests(server)
        assert urlopen(server, "/health")[0] == 200
        assert server.rss_mb() < 1.5 * fresh, (fresh, server.rss_mb())
