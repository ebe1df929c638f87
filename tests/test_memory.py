"""keep_freed_memory(): glibc serves multi-MB blocks from its heap instead of fresh mmap()s."""

import platform
import subprocess
import sys

import pytest
from helpers.config import ROOT

PROBE = """
import ctypes, sys
sys.path.insert(0, {root!r})
from attnclf.utils.memory import keep_freed_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
if {tuned}:
    assert keep_freed_memory()
before = libc.mallinfo2().hblkhd  # bytes in mmap()ed blocks
block = libc.malloc(24 * 2**20)  # the size of a large activation's gradient
print((libc.mallinfo2().hblkhd - before) // 2**20)
libc.free(ctypes.c_void_p(block))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's allocator only"
)
def test_keep_freed_memory_serves_large_blocks_from_the_heap():
    def mmapped_mb(tuned: bool) -> int:  # each in a fresh process: glibc's thresholds adapt over a process's life
        code = PROBE.format(root=str(ROOT), tuned=tuned)
        return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)

    assert mmapped_mb(False) >= 24  # glibc's default: a fresh mmap() for a 24 MB block
    assert mmapped_mb(True) == 0  # after keep_freed_memory(): from the heap
