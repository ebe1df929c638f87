"""Dynamic batching: the texts of concurrent requests run through a model together.

Requests put their texts (already read: `TrainedClassifier.read`) on a model's queue and wait. One task per model
takes what has arrived while the model was busy, sorts it by length, cuts it into batches of at most
`batch_tokens` padded tokens (as evaluation's loader groups reviews of similar length) and runs them on the
model thread, which every model shares, so that torch work never runs twice at once on the cores. An
/explain (or a page's reading) waits in the same queue and runs alone, counted as the texts it runs (its
text with each word deleted, the text, its gradient). The queue is bounded: a request that would take it past
`max_queue` texts is refused at once (`Busy`), not kept waiting without end. A batch whose model call fails
gives its texts' places back and each of its requests a `ModelFailed` (one line; the log has the rest).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

log = logging.getLogger("attnclf.serve")


class Busy(Exception):
    """The queue holds as many texts as it may: the request is refused (503) rather than queued."""


class ModelFailed(Exception):
    """The model call of a batch raised: said to each request of the batch in one line (500)."""


def failed(e: Exception, texts: int) -> ModelFailed:
    log.exception("the model failed on a batch of %d texts", texts, exc_info=e)
    line = str(e).splitlines()[0] if str(e) else ""
    return ModelFailed(f"the model failed on this request's batch: {type(e).__name__}: {line}")


@dataclass
class Waiting:
    # a text as the model reads it (attnclf.inference.trained.Reading), or a job run alone (`alone()`)
    reading: object
    size: int  # its tokens
    future: asyncio.Future
    alone: Callable[[], object] | None = None
    # the texts it counts as in the queue
    weight: int = 1


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

    def enqueue(self, waiting: list[Waiting]) -> None:
        weight = sum(w.weight for w in waiting)
        if self.queued + weight > self.max_queue:
            this = "" if weight == 1 else f" and this request counts as {weight}"
            raise Busy(
                f"{self.queued} texts are waiting{this} (at most {self.max_queue}: max_queue); try again shortly"
            )
        self.pending.extend(waiting)
        self.queued += weight
        self.wake.set()

    async def submit(self, readings: Sequence, sizes: Sequence[int]) -> list:
        """The results of `readings` (each of `sizes` tokens), in order, once their batches have run."""
        loop = asyncio.get_running_loop()
        waiting = [Waiting(r, n, loop.create_future()) for r, n in zip(readings, sizes, strict=True)]
        self.enqueue(waiting)
        return list(await asyncio.gather(*(w.future for w in waiting)))

    async def run_alone(self, job: Callable[[], object], weight: int):
        """`job()`'s result, run on the model thread in its turn, counted as `weight` texts in the queue."""
        waiting = Waiting(None, 0, asyncio.get_running_loop().create_future(), job, weight)
        self.enqueue([waiting])
        return await waiting.future

    def take(self) -> list[Waiting]:
        """A job alone, or the oldest waiting texts up to four batches' worth of tokens (at least one)."""
        if self.pending[0].alone is not None:
            return [self.pending.popleft()]
        taken, tokens = [], 0
        while (
            self.pending
            and self.pending[0].alone is None
            and (not taken or tokens + self.pending[0].size <= 4 * self.batch_tokens)
        ):
            w = self.pending.popleft()
            taken.append(w)
            tokens += w.size
        return taken

    def run(self, taken: list[Waiting]) -> list:
        """On the model thread: the results of what was taken."""
        if taken[0].alone is not None:
            return [taken[0].alone()]
        return self.run_batch([w.reading for w in taken])

    async def loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.pending:
                taken = self.take()
                try:
                    results = await loop.run_in_executor(self.executor, self.run, taken)
                # a job's own error is its caller's; a batch's is said to each of its requests in one line, the
                # whole story once in the log; the loop goes on
                except Exception as e:
                    results = [e] if taken[0].alone is not None else [failed(e, len(taken))] * len(taken)
                finally:
                    self.queued -= sum(w.weight for w in taken)
                for w, r in zip(taken, results, strict=True):
                    # its client went away
                    if w.future.done():
                        continue
                    if isinstance(r, Exception):
                        w.future.set_exception(r)
                    else:
                        w.future.set_result(r)
