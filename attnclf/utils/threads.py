"""torch's CPU threads for one command called in-process (the Python API, tests), put back after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch's CPU threads set to `n` for the block (None: left as they are), and the caller's put back after it,
    so that a command's num_threads does not outlive it in the process that called it."""
    # (here, not at the top: a command's module imports it, and its --help and refusals need no torch)
    import torch

    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
