"""Files the product writes: checked before any work (a folder that cannot take a file is one line naming
it), and written whole or not at all (a temporary file beside the target, renamed over it), so that a full
disk or a kill leaves no torn file a later run would trust."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from attnclf.errors import AttnclfError


def check_writable_folder(key: str, folder: str | Path) -> None:
    """`folder` (made where missing) can take files: its nearest existing part is a folder, and a file can be
    created there (tried, so that a read-only disk is found too, whoever runs this). One line where not."""
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise AttnclfError(f"{key}={folder}: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        raise AttnclfError(f"{key}={folder}: cannot write in {existing} ({e.strerror})") from None


def check_writable_file(key: str, path: str | Path) -> None:
    """`path` can be written as a file (its folder made where missing): not a folder, its folder writable."""
    path = Path(path)
    if path.is_dir():
        raise AttnclfError(f"{key}={path} is a folder; give a file name")
    check_writable_folder(key, path.parent)


def disk_error(e: OSError, what: str | Path) -> AttnclfError:
    """An OSError while writing `what`, as one line."""
    return AttnclfError(f"could not write {what}: {e.strerror or e}")


def write_atomic(path: str | Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)` writes the file at a temporary path beside `path`, which is then renamed over `path`: a
    reader sees the old file or the whole new one. A failed write (a full disk) removes the temporary file
    and is one line (AttnclfError)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise disk_error(e, path) from e
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


@contextmanager
def writing(what: str | Path):
    """An OSError inside (a full disk, a folder made read-only meanwhile) becomes one line naming `what`."""
    try:
        yield
    except OSError as e:
        raise disk_error(e, what) from e
