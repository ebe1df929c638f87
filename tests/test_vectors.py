"""Word vectors (model.embeddings=word2vec | <file>): trained by gensim on training and unlabeled text,
never on test text; cached; loaded into the embedding; bad files refused in one line."""

import json
import logging

import datasets
import numpy as np
import pytest
import torch
from helpers.config import compose_cfg, tiny_overrides
from helpers.data import TEST_ONLY, UNLABELED_ONLY, make_datamodule, make_reviews

from attnclf.commands.train import train
from attnclf.data.vectors import cached_word2vec, embedding_matrix, read_vectors
from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier

CARVED_ONLY = "zzqcarvedword"
SETTINGS = {"algorithm": "cbow", "window": 3, "min_count": 1, "negative": 3, "epochs": 2, "seed": 0}


def test_word_vectors_learn_from_training_and_unlabeled_text_never_test(with_unlabeled, tmp_path, caplog):
    dm = make_datamodule(str(with_unlabeled), vocab_size=200, cache_dir=str(tmp_path), max_length=64)
    dm.setup("fit")
    texts, key = dm.word_vector_texts()
    assert [len(rows) for _, rows in texts] == [160, 80]  # every training row (validation's too), all unlabeled
    with caplog.at_level(logging.INFO, logger="attnclf"):
        wv, path = cached_word2vec(texts, key, 8, SETTINGS, str(tmp_path))
    # the log says what the 240 texts are: the training split's 160 rows, validation's among them
    assert "on 240 texts: 160 of the training split's rows (validation rows carved from them included" in caplog.text
    assert "and 80 unlabeled" in caplog.text
    assert UNLABELED_ONLY in wv.key_to_index and TEST_ONLY not in wv.key_to_index
    assert "great" in wv.key_to_index and wv.vector_size == 8
    # cached: a second call reads the file instead of training
    stamp = path.stat().st_mtime_ns
    again, same = cached_word2vec(texts, key, 8, SETTINGS, str(tmp_path))
    assert same == path and path.stat().st_mtime_ns == stamp and np.array_equal(again["great"], wv["great"])
    # other settings, other vectors
    _, other = cached_word2vec(texts, key, 8, {**SETTINGS, "window": 2}, str(tmp_path))
    assert other != path


def test_runs_started_together_train_the_vectors_once(with_unlabeled, tmp_path, monkeypatch):
    """Two callers on one cold cache at once (as the runs of a parallel sweep): one trains, the other waits
    for its file and reads it."""
    import threading
    import time

    import attnclf.data.vectors as vectors

    dm = make_datamodule(str(with_unlabeled), vocab_size=200, cache_dir=str(tmp_path), max_length=64)
    dm.setup("fit")
    texts, key = dm.word_vector_texts()
    trained, real = [], vectors.train_word2vec

    def slow_train(*args):  # the real training, made slow enough that the second caller comes in meanwhile
        trained.append(threading.current_thread().name)
        time.sleep(1.0)
        return real(*args)

    monkeypatch.setattr(vectors, "train_word2vec", slow_train)
    results = {}

    def call(name):
        results[name] = cached_word2vec(texts, key, 8, SETTINGS, str(tmp_path))

    threads = [threading.Thread(target=call, args=(n,), name=n) for n in ("a", "b")]
    for t in threads:
        t.start()
        time.sleep(0.2)
    for t in threads:
        t.join()
    assert trained == ["a"]
    (wa, pa), (wb, pb) = results["a"], results["b"]
    assert pa == pb and np.array_equal(wa["great"], wb["great"])


def test_one_worker_gives_the_same_vectors_every_time(with_unlabeled, tmp_path):
    """word2vec.workers=1 (the default): a fresh cache trains the very same vectors, so a run can be repeated."""
    dm = make_datamodule(str(with_unlabeled), vocab_size=200, cache_dir=str(tmp_path), max_length=64)
    dm.setup("fit")
    texts, key = dm.word_vector_texts()
    settings = {**SETTINGS, "workers": 1}
    first, _ = cached_word2vec(texts, key, 8, settings, str(tmp_path / "a"))
    second, _ = cached_word2vec(texts, key, 8, settings, str(tmp_path / "b"))
    assert first.index_to_key == second.index_to_key and np.array_equal(first.vectors, second.vectors)


@pytest.mark.parametrize(
    "override, message",
    [
        ("word2vec.workers=0", "word2vec.workers=0 must be a positive integer or null"),
        ("word2vec.workers=two", "word2vec.workers='two' must be a positive integer or null"),
        ("word2vec.epochs=0", "word2vec.epochs=0 must be a positive integer or auto"),
        ("word2vec.epochs=many", "word2vec.epochs='many' must be a positive integer or auto"),
        ("word2vec.epochs=null", "word2vec.epochs=None must be a positive integer or auto"),
        ("word2vec.window=-1", "word2vec.window=-1 must be a positive integer"),
    ],
)
def test_bad_word2vec_settings_stop_before_any_data_work(tiny_imdb, tmp_path, override, message):
    out = tmp_path / "run"
    cfg = compose_cfg(["model.embeddings=word2vec", override, *tiny_overrides(tiny_imdb, out)])
    with pytest.raises(AttnclfError, match=message):
        train(cfg)
    assert not (out / "checkpoints").exists() and not (out / "cache").exists()


def test_a_test_split_carved_from_training_text_stays_out(tmp_path):
    """One file, no test split: the test rows carved from it are not read by word2vec."""
    reviews = make_reviews(100, 3)
    path = tmp_path / "reviews.csv"
    datasets.Dataset.from_dict(reviews).to_csv(str(path))
    dm = make_datamodule(str(path), vocab_size=200, cache_dir=str(tmp_path), test_size=0.2, seed=1)
    dm.setup("fit")
    texts, _ = dm.word_vector_texts()
    ((enc, rows),) = texts
    carved = set(range(100)) - set(rows.tolist())
    assert len(carved) == 20 and len(dm.test_set) == 20 and carved == set(dm.test_set.rows.tolist())


def test_training_from_word2vec_vectors_frozen(with_unlabeled, tmp_path):
    """The embedding starts as the vectors (frozen: stays so), metrics.json says where it came from, and the
    checkpoint loads without the vectors."""
    out = tmp_path / "run"
    cfg = compose_cfg(
        [
            "experiment=smoke",
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            "model.embeddings=word2vec",
            "model.freeze_embeddings=true",
            *[f"word2vec.{k}={v}" for k, v in SETTINGS.items()],
            "word2vec.unlabeled_split=unsupervised",
            *tiny_overrides(with_unlabeled, out),
        ]
    )
    train(cfg)
    metrics = json.loads((out / "metrics.json").read_text())
    emb = metrics["embeddings"]
    assert emb["source"] == "word2vec" and emb["texts"] == 240 and emb["coverage"] > 0.9
    clf = TrainedClassifier.from_checkpoint(metrics["best_checkpoint"])
    assert clf.module.hparams.model["embeddings"] == "word2vec" and clf.module.hparams.model["freeze_embeddings"]
    wv = read_vectors(emb["vectors_file"], 16)
    expected, _ = embedding_matrix(wv, clf.vocab)
    weight = clf.module.model.embed.weight.detach().numpy()
    known = [i for i, w in enumerate(clf.vocab.itos) if w in wv.key_to_index]
    assert len(known) > 10 and np.array_equal(weight[known], expected[known])
    assert not weight[0].any()  # padding


def test_the_default_starts_from_word2vec_on_the_training_texts_only(with_unlabeled, tmp_path):
    """`python train.py` as it is: vectors from the training reviews, not the unlabeled ones (that is
    experiment=pretrained's), nor test; fine-tuned."""
    out = tmp_path / "run"
    cfg = compose_cfg(["experiment=smoke", "logger=none", *tiny_overrides(with_unlabeled, out)])
    assert cfg.model.embeddings == "word2vec" and cfg.word2vec.unlabeled_split is None
    train(cfg)
    emb = json.loads((out / "metrics.json").read_text())["embeddings"]
    assert emb["source"] == "word2vec" and emb["texts"] == 160  # the 160 training rows; not the 80 unlabeled
    wv = read_vectors(emb["vectors_file"], 16)
    assert "great" in wv.key_to_index and UNLABELED_ONLY not in wv.key_to_index and TEST_ONLY not in wv.key_to_index
    clf = TrainedClassifier.from_checkpoint(json.loads((out / "metrics.json").read_text())["best_checkpoint"])
    assert not clf.module.hparams.model["freeze_embeddings"]
    pretrained = compose_cfg(["experiment=pretrained", *tiny_overrides(with_unlabeled, out)])
    assert pretrained.word2vec.unlabeled_split == "unsupervised" and pretrained.trainer.max_epochs == 6


def test_bad_vectors_files(tiny_imdb, tmp_path):
    from gensim.models import KeyedVectors

    wv = KeyedVectors(8)
    wv.add_vectors(["good", "bad"], np.ones((2, 8), dtype=np.float32))
    text = tmp_path / "v.txt"
    wv.save_word2vec_format(str(text))
    assert read_vectors(str(text), 8)["good"].shape == (8,)
    for path, dim, message in (
        (text, 16, f"model.embeddings='{text}' has 8-dim vectors, model.embed_dim=16; set model.embed_dim=8"),
        (tmp_path / "none.vec", 16, "no such file; allowed: random, word2vec or a vectors file"),
        (tmp_path, 16, f"model.embeddings='{tmp_path}' is a folder; allowed: random, word2vec or a vectors file"),
    ):
        with pytest.raises(AttnclfError, match=message.replace("(", r"\(").replace(")", r"\)")):
            read_vectors(str(path), dim)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not vectors")
    with pytest.raises(AttnclfError, match="is not a vectors file: its first line is neither"):
        read_vectors(str(junk), 8)
    words = tmp_path / "words.txt"  # a text file whose first line is neither a header nor a word and numbers
    words.write_text("hello world and more\n")
    with pytest.raises(AttnclfError, match="is not a vectors file"):
        read_vectors(str(words), 8)
    # checked by train() before any data work, and nothing is left behind
    out = tmp_path / "run"
    with pytest.raises(AttnclfError, match="has 8-dim vectors"):
        train(compose_cfg([f"model.embeddings={text}", *tiny_overrides(tiny_imdb, out)]))
    assert not (out / "checkpoints").exists()


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_glove_text_without_a_header_line_is_read_as_it_comes(tiny_imdb, tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    rows = {w: rng.normal(size=8).round(5) for w in ("the", "movie", "great", "-0.5", "awful")}
    glove = tmp_path / "glove.8d.txt"  # GloVe's layout: a word and its numbers a line, no `<words> <dims>` line
    glove.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in rows.items()))
    wv = read_vectors(str(glove), 8)
    assert len(wv) == len(rows)  # the first line is a word, not a header
    for w, v in rows.items():
        np.testing.assert_allclose(wv[w], v, rtol=1e-6)
    with pytest.raises(AttnclfError, match="has 8-dim vectors, model.embed_dim=16; set model.embed_dim=8"):
        read_vectors(str(glove), 16)
    # a line with a number missing (a file cut or joined badly): the file, the line and both counts
    ragged = tmp_path / "ragged.txt"
    lines = glove.read_text().splitlines()
    lines[3] = " ".join(lines[3].split(" ")[:-2])
    ragged.write_text("\n".join(lines) + "\n")
    with pytest.raises(AttnclfError) as e:
        read_vectors(str(ragged), 8)
    assert (
        str(e.value) == f"model.embeddings='{ragged}': line 4 has 6 numbers after its word, the vectors 8; "
        "every line is a word and 8 numbers"
    )
    header = tmp_path / "header.txt"  # (with word2vec's header line: its size is the one expected)
    header.write_text("5 8\n" + "\n".join(lines) + "\n")
    with pytest.raises(AttnclfError, match=r"': line 5 has 6 numbers after its word, the vectors 8; "):
        read_vectors(str(header), 8)
    # a run starts from it (kept fixed here): the vocabulary's words it has are its vectors; named from its
    # folder, the file is recorded whole (the run's records name it from anywhere)
    out = tmp_path / "run"
    monkeypatch.chdir(tmp_path)
    overrides = ["model.embeddings=glove.8d.txt", "model.embed_dim=8", "model.freeze_embeddings=true"]
    train(compose_cfg([*tiny_overrides(tiny_imdb, out), *overrides]))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["embeddings"]["source"] == metrics["embeddings"]["vectors_file"] == str(glove.resolve())
    assert 0 < metrics["embeddings"]["coverage"] < 1
    clf = TrainedClassifier.from_checkpoint(metrics["best_checkpoint"])
    weight = clf.module.model.embed.weight.detach().numpy()
    for w in ("the", "movie", "great", "awful"):
        np.testing.assert_allclose(weight[clf.vocab.stoi[w]], rows[w], rtol=1e-6)


def test_embedding_matrix_scales_missing_words_like_the_vectors():
    from gensim.models import KeyedVectors

    from attnclf.data.text import Vocab

    wv = KeyedVectors(4)
    rng = np.random.default_rng(0)
    wv.add_vectors([f"w{i}" for i in range(200)], (rng.normal(size=(200, 4)) * 0.3).astype(np.float32))
    vocab = Vocab(["<pad>", "<unk>", "w1", "w2", "unseen", *[f"x{i}" for i in range(300)]])
    m, coverage = embedding_matrix(wv, vocab)
    assert coverage == pytest.approx(2 / (len(vocab) - 2))
    assert np.array_equal(m[2], wv["w1"]) and not m[0].any()
    assert 0.2 < m[5:].std() < 0.4  # unseen words: random at the vectors' scale
    assert torch.from_numpy(m).dtype == torch.float32


def test_a_cut_short_vectors_cache_is_trained_again(with_unlabeled, tmp_path, caplog):
    """A cache file cut short (a full disk, a killed copy): the next run warns, trains the vectors again and
    writes the file anew, as the token cache does, instead of failing in gensim for every later run."""
    dm = make_datamodule(str(with_unlabeled), vocab_size=200, cache_dir=str(tmp_path), max_length=64)
    dm.setup("fit")
    texts, key = dm.word_vector_texts()
    settings = {**SETTINGS, "workers": 1}
    first, path = cached_word2vec(texts, key, 8, settings, str(tmp_path))
    whole = path.read_bytes()
    for cut in (whole[: len(whole) // 2], b"", b"not vectors at all\n"):
        path.write_bytes(cut)
        caplog.clear()
        again, same = cached_word2vec(texts, key, 8, settings, str(tmp_path))
        assert same == path and "cannot be read" in caplog.text and "training the vectors again" in caplog.text
        assert np.array_equal(again.vectors, first.vectors) and path.read_bytes() == whole


def test_auto_epochs_make_more_passes_over_fewer_words():
    from attnclf.data.vectors import AUTO_EPOCHS, AUTO_WORDS, auto_epochs

    assert auto_epochs(5_879_865) == 5  # IMDb's 25,000 training reviews keep 5
    assert auto_epochs(17_000_000) == 5 and auto_epochs(2_000_000) == 13
    assert auto_epochs(181_929) == auto_epochs(0) == AUTO_EPOCHS[1]  # MR's sentences: the most
    assert auto_epochs(AUTO_WORDS // 20) == 20 and auto_epochs(AUTO_WORDS // 20 - 1) == 21


def test_auto_epochs_are_chosen_for_the_run_s_texts_and_cached_as_that_number(tiny_imdb, tmp_path, caplog):
    """word2vec.epochs=auto resolves to a number before the cache key: the same file as that number given."""
    from attnclf.data.vectors import auto_epochs, initial_embeddings
    from attnclf.settings.data import Word2VecConfig

    caplog.set_level(logging.INFO)
    dm = make_datamodule(str(tiny_imdb), vocab_size=200, cache_dir=str(tmp_path), max_length=64)
    dm.setup("fit")
    settings = {k: v for k, v in SETTINGS.items() if k != "epochs"}
    _, auto = initial_embeddings("word2vec", dm, 8, Word2VecConfig(**settings, epochs="auto"), str(tmp_path))
    texts, _ = dm.word_vector_texts(None)
    words = sum(int((enc.offsets[r + 1] - enc.offsets[r]).sum()) for enc, r in texts)
    assert auto["words"] == words and auto["epochs"] == auto_epochs(words)
    assert f"word2vec.epochs=auto: {auto['epochs']} ({words} words a pass" in caplog.text
    _, given = initial_embeddings("word2vec", dm, 8, Word2VecConfig(**settings, epochs=auto["epochs"]), str(tmp_path))
    assert given["vectors_file"] == auto["vectors_file"] and given["epochs"] == auto["epochs"]
    _, other = initial_embeddings("word2vec", dm, 8, Word2VecConfig(**settings, epochs=1), str(tmp_path))
    assert other["vectors_file"] != auto["vectors_file"]


def vector_texts(data, tmp_path, unlabeled="unsupervised", max_texts=None, **data_settings):
    dm = make_datamodule(str(data), vocab_size=200, cache_dir=str(tmp_path), max_length=64, **data_settings)
    dm.setup("fit")
    return dm.word_vector_texts(unlabeled, max_texts)


def test_every_setting_that_changes_the_vectors_changes_their_cache_file(with_unlabeled, tmp_path):
    """Each of these changes which texts the vectors learn from or how: each must get its own cache file,
    or a run would silently read vectors trained on other texts or with other settings."""
    texts, key = vector_texts(with_unlabeled, tmp_path)
    _, base = cached_word2vec(texts, key, 8, SETTINGS, str(tmp_path))
    paths = {"base": base}
    for name, value in (
        ("algorithm", "skipgram"),
        ("window", 2),
        ("min_count", 2),
        ("negative", 2),
        ("epochs", 1),
        ("seed", 1),
        ("workers", 1),
    ):
        paths[name] = cached_word2vec(texts, key, 8, {**SETTINGS, name: value}, str(tmp_path))[1]
    paths["dim"] = cached_word2vec(texts, key, 12, SETTINGS, str(tmp_path))[1]
    for name, kwargs in (
        ("no unlabeled split", {"unlabeled": None}),  # which splits they learn from
        ("train_size", {"train_size": 40}),  # which training rows
        ("train_size's seed", {"train_size": 40, "seed": 7}),
        ("max_texts", {"max_texts": 100}),
        ("max_texts in the unlabeled split", {"max_texts": 170}),
    ):
        t, k = vector_texts(with_unlabeled, tmp_path, **kwargs)
        paths[name] = cached_word2vec(t, k, 8, SETTINGS, str(tmp_path))[1]
    assert len(set(paths.values())) == len(paths), {k: v.name for k, v in paths.items()}
    # (another validation split reads the same texts: validation rows are among them; so one file)
    assert cached_word2vec(*vector_texts(with_unlabeled, tmp_path, val_size=0.3), 8, SETTINGS, str(tmp_path))[1] == base
    # and the same texts and settings find the same file
    assert cached_word2vec(*vector_texts(with_unlabeled, tmp_path), 8, SETTINGS, str(tmp_path))[1] == base


def test_vectors_learn_from_the_rows_the_run_reads(with_unlabeled, tmp_path):
    """data.train_size bounds the vectors' texts too (the subset and its validation rows); word2vec.max_texts
    bounds them all (training rows first, then unlabeled); never a test row."""
    texts, _ = vector_texts(with_unlabeled, tmp_path, unlabeled=None)
    assert [len(r) for _, r in texts] == [160]  # 144 training + 16 validation rows
    texts, _ = vector_texts(with_unlabeled, tmp_path, unlabeled=None, train_size=40)
    assert [len(r) for _, r in texts] == [56]
    texts, _ = vector_texts(with_unlabeled, tmp_path, max_texts=100)
    assert [len(r) for _, r in texts] == [100]
    texts, _ = vector_texts(with_unlabeled, tmp_path, max_texts=170)
    assert [len(r) for _, r in texts] == [160, 10]
    # (a carved test split stays out: test_a_test_split_carved_from_training_text_stays_out)


def test_smoke_trains_its_vectors_on_a_few_texts(tiny_imdb, tmp_path):
    cfg = compose_cfg(["experiment=smoke", *tiny_overrides(tiny_imdb, tmp_path)])
    assert cfg.word2vec.max_texts == 2000 and cfg.model.embeddings == "word2vec"
