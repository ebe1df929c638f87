"""glibc's allocator: keep freed memory for reuse instead of handing it back to the OS.

A training step allocates and frees tensors of several MB (activations and
their gradients, (B, T, 2H) floats are 14 MB at the default sizes). glibc
serves blocks that large with fresh mmap()s and returns free memory at the top
of its heap to the OS, so a step can fault the same memory back in, page by
page, every time. Serving blocks up to 32 MB from the heap and not trimming it
removes that cost (docs/performance.md: the product's training tokens/s +2-8%
in four on/off pairs on the development machine, every benchmark contender
faster); the price is that the process keeps its peak memory (+5-10% here)
instead of returning it between steps. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# mallopt() parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# the largest glibc accepts on 64-bit (HEAP_MAX_SIZE / 2)
MMAP_THRESHOLD = 32 * 1024 * 1024
# mallopt takes an int: never trim, in effect
TRIM_THRESHOLD = 2**31 - 1


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds for this process; False where there is no glibc mallopt."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
