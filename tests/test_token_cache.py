"""The token cache: written chunk by chunk, read memory-mapped (never copied whole), holding the same arrays as
one pass over the texts; the DDP ranks of a machine tokenise once and read the same files."""

import logging
import multiprocessing
import os
import shutil

import datasets
import numpy as np
import pytest
from helpers.data import make_datamodule

from attnclf.data import encoding
from attnclf.data.dataset import truncate
from attnclf.data.encoding import Remapped, encode_split, encode_texts
from attnclf.data.text import Vocab


def texts_of(n: int, seed: int = 0) -> list[str]:
    """`n` short texts of a few hundred words, each row's words drawn at random (seeded)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)] + ["don't", "!", "<br />"]
    return [" ".join(rng.choice(words, rng.integers(0, 12))) for _ in range(n)]


def one_pass(texts: list[str], labels) -> tuple:
    """The arrays as a single pass over every text gives them: one table, in order of first appearance."""
    ids, offsets, table = encoding._encode_chunk(texts)
    return ids, offsets, np.asarray(labels, dtype=np.int64), table


@pytest.mark.parametrize("workers", [1, 2])
def test_chunks_in_memory_and_in_the_cache_are_one_passs_arrays(tmp_path, monkeypatch, workers):
    """Tokenised 97 rows at a time, in this process or in two: the ids, offsets, labels and table of one pass,
    in memory and from the cache folder; the vocabulary counted a block at a time is the whole count."""
    monkeypatch.setattr(encoding, "CHUNK_ROWS", 97)
    texts, labels = texts_of(1500), np.arange(1500) % 3
    want = one_pass(texts, labels)
    split = datasets.Dataset.from_dict({"text": texts, "label": labels})
    for enc in (
        encode_texts(split["text"], split["label"], workers=workers),
        encode_split(split, "text", "label", tmp_path),
    ):
        for got, expected in zip((enc.ids, enc.offsets, enc.labels, enc.table), want, strict=True):
            assert np.array_equal(np.asarray(got), np.asarray(expected))
        rows = np.random.default_rng(1).choice(1500, 600, replace=False)
        keep = np.repeat(np.isin(np.arange(1500), rows), enc.lengths)
        assert np.array_equal(enc.token_counts(rows), np.bincount(want[0][keep], minlength=len(want[3])))


def test_the_data_stages_arrays_are_memory_mapped_from_the_cache_not_copied(tiny_imdb, tmp_path):
    """Training, validation and test rows read the cache's files through the page cache: ids, offsets and labels
    mapped, the vocabulary's ids mapped a row at a time as it is read."""
    cache = tmp_path / "cache"
    dm = make_datamodule(str(tiny_imdb), cache_dir=str(cache), vocab_size=300, max_length=32, batch_size=8)
    dm.setup("fit")
    for rows in (dm.train_set, dm.val_set, dm.test_set):
        assert isinstance(rows.ids, Remapped) and isinstance(rows.ids.ids, np.memmap)
        assert isinstance(rows.offsets, np.memmap) and os.path.dirname(os.path.dirname(rows.ids.ids.filename)) == str(
            cache
        )
    train = encode_split(datasets.load_dataset(str(tiny_imdb))["train"], "text", "label", None)
    row = dm.train_set.rows[5]
    want = [dm.vocab.stoi.get(train.table[i], 1) for i in train.ids[train.offsets[row] : train.offsets[row + 1]]]
    assert dm.train_set.tokens(5).tolist() == truncate(np.array(want), 32, dm.train_set.truncation).tolist()


def _rank(path: str, cache: str, rank: int, queue) -> None:
    os.environ["LOCAL_RANK"] = os.environ["RANK"] = str(rank)
    written = []
    write = encoding.write_cache
    encoding.write_cache = lambda *a: written.append(1) or write(*a)
    dm = make_datamodule(path, cache_dir=cache, vocab_size=300, max_length=32, batch_size=8)
    dm.setup("fit")
    ids = dm.train_set.ids.ids
    queue.put((rank, os.stat(ids.filename).st_ino, ids.filename, len(written)))


def test_ddp_ranks_on_one_machine_tokenise_once_and_map_the_same_files(tiny_imdb, tmp_path):
    """Two ranks started together on a fresh cache: one writes each split while the other waits, then both map
    the same file (one copy in the page cache, not one each)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    ranks = [ctx.Process(target=_rank, args=(str(tiny_imdb), str(tmp_path), r, queue)) for r in (0, 1)]
    for p in ranks:
        p.start()
    for p in ranks:
        p.join(timeout=120)
    assert [p.exitcode for p in ranks] == [0, 0]
    said = sorted(queue.get(timeout=5) for _ in ranks)
    assert said[0][1:3] == said[1][1:3]
    # train and test, each written once between them
    assert said[0][3] + said[1][3] == 2


def test_an_old_single_file_cache_is_tokenised_again_with_one_line(tmp_path, caplog):
    """A cache of the older layout (one .npz, read whole into memory) is replaced, said in one log line."""
    split = datasets.Dataset.from_dict({"text": texts_of(50), "label": [0, 1] * 25})
    first = np.array(encode_split(split, "text", "label", tmp_path).ids)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    shutil.rmtree(folder)
    old = folder.with_suffix(".npz")
    np.savez(old, ids=first)
    with caplog.at_level(logging.INFO, logger="attnclf.data.encoding"):
        again = encode_split(split, "text", "label", tmp_path)
    assert [r.message for r in caplog.records] == [
        f"token cache {old} is of an older layout; tokenising again into {folder}"
    ]
    assert np.array_equal(again.ids, first) and not old.exists()


def test_a_row_remapped_as_read_is_the_whole_splits_lookup(tmp_path):
    """Remapped: a slice read through the vocabulary's lookup is that slice of the whole split's lookup."""
    split = datasets.Dataset.from_dict({"text": texts_of(200), "label": [0] * 200})
    enc = encode_split(split, "text", "label", tmp_path)
    vocab = Vocab.from_counts(enc.table, enc.token_counts(np.arange(200)), 50, 1)
    view = enc.remap(vocab)
    whole = view.lut[np.asarray(enc.ids)]
    assert len(view) == len(whole) and np.array_equal(view[10:40], whole[10:40])


def test_the_cache_is_one_a_label_column(tmp_path):
    """One file with two integer label columns (TREC's coarse and fine), read once as each: two caches, each
    with its own column's labels."""
    texts = texts_of(50)
    split = datasets.Dataset.from_dict({"text": texts, "coarse": np.arange(50) % 2, "fine": np.arange(50) % 5})
    coarse = encode_split(split, "text", "coarse", tmp_path)
    fine = encode_split(split, "text", "fine", tmp_path)
    assert np.array_equal(np.asarray(coarse.labels), np.arange(50) % 2)
    assert np.array_equal(np.asarray(fine.labels), np.arange(50) % 5)


def group_of(leader: int) -> list[int]:
    """The live processes of the process group `leader` leads (its forked workers too, re-parented or not)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                # (the command's name, in brackets, may hold spaces: the fields after it)
                state, _ppid, pgrp = f.read().rpartition(")")[2].split()[:3]
        except OSError:
            continue
        if int(pgrp) == leader and state != "Z":
            found.append(int(pid))
    return found


def wait_for(ready, seconds: float, what: str) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, f"{what} not within {seconds} s"
        time.sleep(0.05)


@pytest.mark.slow  # (processes of its own, 200,000 rows tokenised twice)
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_a_run_killed_while_it_tokenises_leaves_no_process_and_no_temporary_folder(sig, tmp_path):
    """`attnclf train` signalled while its forked workers tokenise a fresh cache (Ctrl-C: the whole group, as
    a terminal sends it): no process of its group is alive 5 s after it ended (the workers die with it);
    SIGTERM and Ctrl-C are one line and status 128 + the signal; the next run removes what a kill -9 left
    with one line, and leaves no temporary folder."""
    import signal
    import subprocess
    import sys
    import time

    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    # long enough to tokenise for seconds on two workers
    texts = [" ".join(f"w{(i * 7 + j) % 5000}" for j in range(200)) for i in range(2000)] * 100
    datasets.Dataset.from_dict({"text": texts, "label": [i % 2 for i in range(len(texts))]}).to_parquet(
        str(data / "train.parquet")
    )
    datasets.Dataset.from_dict({"text": texts[:64], "label": [0, 1] * 32}).to_parquet(str(data / "test.parquet"))
    argv = [sys.executable, "-m", "attnclf", "train", f"data.path={data}", f"paths.cache_dir={cache}"]
    argv += ["experiment=smoke", "model.embeddings=random", "logger=none", "callbacks.attention_maps=null"]
    run = subprocess.Popen([*argv, f"hydra.run.dir={tmp_path / 'run'}"], start_new_session=True, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: list(cache.glob(".*.tmp*")) and len(group_of(run.pid)) > 1, 180, "tokenising workers")
        if sig == "SIGINT":
            os.killpg(run.pid, signal.SIGINT)
        else:
            run.send_signal(getattr(signal, sig))
        _, err = run.communicate(timeout=60)
        time.sleep(5)
        assert group_of(run.pid) == []
    finally:
        for pid in group_of(run.pid):
            os.kill(pid, signal.SIGKILL)
    if sig != "SIGKILL":
        assert run.returncode == 128 + getattr(signal, sig)
        by = "SIGTERM" if sig == "SIGTERM" else "Ctrl-C"
        assert err.decode().strip().splitlines()[-1:] == [
            f"error: stopped by {by} before training began; nothing was kept but the caches"
        ]
    left = list(cache.glob(".*.tmp*"))
    assert bool(left) == (sig == "SIGKILL")
    again = subprocess.run([*argv, f"hydra.run.dir={tmp_path / 'again'}"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    removed = [
        line for line in (again.stdout + again.stderr).splitlines() if "left by a tokenisation that was stopped" in line
    ]
    assert len(removed) == len(left) and all(str(t) in line for t, line in zip(left, removed, strict=True)), removed
    assert list(cache.glob(".*.tmp*")) == []


def test_a_stop_that_comes_while_the_workers_are_forked_is_raised_after_it(monkeypatch):
    """SIGTERM arriving as a worker is forked is handled in a fork hook, which drops the exception; held
    back until the pool has started, it stops the tokenising (Terminated), and no worker is left."""
    import signal
    import time

    from attnclf.errors import Terminated
    from attnclf.utils.stops import raised_on_stop

    armed = {"on": True}

    def signal_once() -> None:
        if armed.pop("on", False):
            os.kill(os.getpid(), signal.SIGTERM)

    os.register_at_fork(after_in_parent=signal_once)
    texts = texts_of(4000)
    with raised_on_stop(), pytest.raises(Terminated):
        for _ in encoding.chunks_of(texts, {}, workers=2):
            pass
    assert not armed
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def test_a_stop_asked_in_nested_held_blocks_is_raised_when_the_outermost_is_left():
    import signal

    from attnclf.errors import Terminated
    from attnclf.utils.stops import held, raised_on_stop

    left = []
    with raised_on_stop(), pytest.raises(Terminated):
        with held():
            with held():
                os.kill(os.getpid(), signal.SIGTERM)
            left.append("inner")
        left.append("past the outer block")
    assert left == ["inner"]
