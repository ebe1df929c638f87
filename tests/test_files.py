"""Files the product writes are whole or absent: a disk that fills mid-write leaves neither a torn file nor
a temporary one, keeps the file that was there, and is one line."""

import errno

import pytest
from helpers.data import make_datamodule

from attnclf.errors import AttnclfError
from attnclf.utils.files import write_atomic
from attnclf.utils.jsonfile import write_json


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_keeps_the_old_file_and_leaves_no_temporary_one(tmp_path):
    target = tmp_path / "metrics.json"
    write_json(target, {"val/acc": 0.5})

    def half(tmp):
        tmp.write_text('{"val/acc": 0.')
        no_space()

    with pytest.raises(AttnclfError, match=f"^could not write {target}: No space left on device$"):
        write_atomic(target, half)
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]
    assert target.read_text() == '{\n  "val/acc": 0.5\n}\n'


def test_a_full_disk_while_caching_tokens_leaves_no_cache_file(tiny_imdb, tmp_path, monkeypatch):
    """The token cache a later run would trust: not written at all, and the error is one line."""
    from pathlib import Path

    # the cache's table, written after its ids: the disk fills between them
    monkeypatch.setattr(Path, "write_text", no_space)
    dm = make_datamodule(str(tiny_imdb), vocab_size=200, cache_dir=str(tmp_path / "cache"), max_length=64)
    with pytest.raises(AttnclfError, match=r"^could not write .*: No space left on device$"):
        dm.setup("fit")
    left = [p for p in (tmp_path / "cache").rglob("*") if not p.name.endswith(".lock")]
    assert left == [], left
