"""Dynamic batching: the texts of concurrent requests run through a model together.

Requests put their texts (already read: `TrainedClassifier.read`) on a model's queue and wait. One task per model
takes what has arrived while the model was busy, sorts it by length, cuts it into batches of at most
`batch_tokens` padded tokens (as evaluation's loader groups reviews of similar length) and runs them on the
model thread, which every model and /explain share, so that torch work never runs twice at once on the
cores. The queue is bounded: a request that would take it past `max_queue` texts is refused at once
(`Busy`), not kept waiting without end.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass


class Busy(Exception):
    """The queue holds as many texts as it may: the request is refused (503) rather than queued."""


@dataclass
class Waiting:
    # a text as the model reads it (attnclf.inference.trained.Reading)
    reading: object
    size: int  # its tokens
    future: asyncio.Future


class Batcher:
    """One model's queue and the task that empties it. `run_batch(readings)` -> one result per reading, run on
    `executor`."""

    def __init__(self, run_batch: Callable[[list], list], executor: Executor, batch_tokens: int, max_queue: int):
        self.run_batch, self.executor = run_batch, executor
        self.batch_tokens, self.max_queue = batch_tokens, max_queue
        self.pending: deque[Waiting] = deque()
        # texts waiting or running
        self.queued = 0
        self.wake = asyncio.Event()
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.loop())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def submit(self, readings: Sequence, sizes: Sequence[int]) -> list:
        """The results of `readings` (each of `sizes` tokens), in order, once their batches have run."""
        if self.queued + len(readings) > self.max_queue:
            raise Busy(f"{self.queued} texts are waiting (at most {self.max_queue}: max_queue); try again shortly")
        loop = asyncio.get_running_loop()
        waiting = [Waiting(r, n, loop.create_future()) for r, n in zip(readings, sizes, strict=True)]
        self.pending.extend(waiting)
        self.queued += len(waiting)
        self.wake.set()
        return list(await asyncio.gather(*(w.future for w in waiting)))

    def take(self) -> list[Waiting]:
        """The oldest waiting texts, up to four batches' worth of tokens (at least one text)."""
        taken, tokens = [], 0
        while self.pending and (not taken or tokens + self.pending[0].size <= 4 * self.batch_tokens):
            w = self.pending.popleft()
            taken.append(w)
            tokens += w.size
        return taken

    async def loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.pending:
                taken = self.take()
                try:
                    results = await loop.run_in_executor(self.executor, self.run_batch, [w.reading for w in taken])
                # said to each request of the batch; the loop goes on
                except Exception as e:
                    results = [e] * len(taken)
                finally:
                    self.queued -= len(taken)
                for w, r in zip(taken, results, strict=True):
                    # its client went away
                    if w.future.done():
                        continue
                    if isinstance(r, Exception):
                        w.future.set_exception(r)
                    else:
                        w.future.set_result(r)
