"""What FastAPI does not do with a request's body, as one small ASGI layer in front of the app:

- the cap: a body over max_body_bytes is refused (413) as it arrives, or at once from its Content-Length, not
  read whole first. FastAPI's own max_body_size answers its 413 in plain text in place of the API's one-line
  JSON error, so it is not used;
- a timeout: uvicorn waits for a body without limit, so a client that declares more than it sends would hold
  its connection open for ever; a body not whole within body_timeout seconds is refused (408) and the
  connection closed;
- a staged close: a refusal sent before the body is read whole first reads and drops the rest (up to
  DRAIN_BYTES, within the timeout), so that a client that writes its whole body before reading (Python's
  urllib) reads the answer rather than a reset (RFC 9112, section 9.6).

A problem is raised from `receive` as a BodyProblem; FastAPI hands it on as the cause of its HTTPException
(400), which the app's handler answers with the problem's own status and line.
"""

from __future__ import annotations

import asyncio

from starlette.datastructures import Headers

# a refused body is read and dropped up to here; past it the connection is closed
DRAIN_BYTES = 64 << 20


class BodyProblem(Exception):
    """A body the server will not read: its status and one line."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BodyTooLarge(BodyProblem):
    status = 413


class BodyTimeout(BodyProblem):
    status = 408


class BodyGuard:
    """The ASGI layer: each HTTP request's body read through a `Body`."""

    def __init__(self, app, max_bytes: int, timeout: float):
        self.app, self.max_bytes, self.timeout = app, max_bytes, timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body = Body(scope, receive, send, self.max_bytes, self.timeout)
        await self.app(scope, body.receive, body.send)


class Body:
    """One request's body as the app reads it: capped, within a deadline, the rest drained before a refusal."""

    def __init__(self, scope, receive, send, max_bytes: int, timeout: float):
        self.raw_receive, self.raw_send, self.max_bytes, self.timeout = receive, send, max_bytes, timeout
        headers = Headers(scope=scope)
        length = headers.get("content-length", "")
        self.declared = int(length) if length.isdigit() else None
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        # nothing (more) to read from the client
        self.whole = not chunked and not self.declared
        self.deadline = asyncio.get_running_loop().time() + timeout
        self.read, self.timed_out = 0, False

    async def next(self) -> dict:
        """The client's next message, within the body's deadline."""
        left = self.deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(self.raw_receive(), max(left, 0.0))
        except TimeoutError:
            self.timed_out = True
            raise BodyTimeout(
                f"the body did not arrive whole within {self.timeout:g} s (body_timeout); "
                f"{self.read} of {self.declared if self.declared is not None else '?'} bytes came"
            ) from None
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            self.whole = True
        self.read += len(message.get("body", b""))
        return message

    async def receive(self) -> dict:
        if self.whole:
            return await self.raw_receive()
        if self.declared is not None and self.declared > self.max_bytes:
            raise BodyTooLarge(f"the body has {self.declared} bytes; at most {self.max_bytes} (max_body_bytes)")
        message = await self.next()
        if self.read > self.max_bytes:
            raise BodyTooLarge(f"the body has more than {self.max_bytes} bytes (max_body_bytes)")
        return message

    async def send(self, message: dict) -> None:
        if message["type"] == "http.response.start" and not self.whole and not self.timed_out:
            await self.drain()
        await self.raw_send(message)

    async def drain(self) -> None:
        """The rest of the body read and dropped, up to DRAIN_BYTES and within the deadline (past either the
        connection is closed after the answer, as uvicorn does with a body left unread)."""
        if (self.declared or 0) > DRAIN_BYTES:
            return
        try:
            while not self.whole and self.read <= DRAIN_BYTES:
                await self.next()
        except BodyTimeout:
            pass
