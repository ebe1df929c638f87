import logging

import datasets
import numpy as np
import pytest
from helpers.data import make_datamodule

import attnclf.data.encoding as encoding
from attnclf.data.dataset import TextDataset, collate
from attnclf.data.sampling import BucketBatchSampler
from attnclf.data.splits import carve_splits
from attnclf.data.text import PAD, UNK, UNK_ID, Vocab, tokenize, without_tokens
from attnclf.errors import AttnclfError


def test_tokenize():
    assert tokenize("Don't miss it!<br /><br />A 10/10 film... Really?") == [
        "don't",
        "miss",
        "it",
        "!",
        "a",
        "10",
        "10",
        "film",
        "really",
        "?",
    ]
    assert tokenize("") == [] and tokenize("  \n ") == []
    assert tokenize("Großartig — très émouvant") == ["großartig", "très", "émouvant"]


def test_deleting_words_leaves_the_other_tokens_and_the_text_as_written():
    """The explorer's edit: every one and every two tokens deleted, the rest tokenise as before, the writer's
    case, punctuation and markup kept, neighbours kept apart, no doubled space."""
    texts = ["A wonderful film, really moving! The plot was dull.", "a!b?c don't<br />stop", "İstanbul was grand"]
    for text in texts:
        tokens = tokenize(text)
        for gone in [{i} for i in range(len(tokens))] + [{i, j} for i in range(len(tokens)) for j in range(i)]:
            left = without_tokens(text, gone)
            assert tokenize(left) == [t for i, t in enumerate(tokens) if i not in gone], (text, gone, left)
    assert without_tokens(texts[0], [1]) == "A film, really moving! The plot was dull."
    assert without_tokens(texts[1], [1]) == "a b?c don't<br />stop"
    assert without_tokens("superb film", [0]) == "film"


def test_vocab_roundtrip(tmp_path):
    v = Vocab([PAD, UNK, "good", "bad"])
    assert v.encode("good and bad") == [2, UNK_ID, 3]
    v.save(tmp_path / "vocab.json")
    assert Vocab.load(tmp_path / "vocab.json").itos == v.itos
    with pytest.raises(AttnclfError, match="not found"):
        Vocab.load(tmp_path / "missing.json")


def split_train_val(n: int, val_size: float, seed: int):
    """(train rows, validation rows) of n rows without a test split to carve."""
    return carve_splits(n, seed, None, val_size)[1:3]


def test_validation_split_deterministic_and_disjoint():
    train, val = split_train_val(1000, 0.1, seed=3)
    assert len(val) == 100 and len(train) == 900
    assert not set(train) & set(val) and set(train) | set(val) == set(range(1000))
    again = split_train_val(1000, 0.1, seed=3)
    assert (again[0] == train).all() and (again[1] == val).all()
    assert not (split_train_val(1000, 0.1, seed=4)[1] == val).all()
    assert len(split_train_val(1000, 50, seed=3)[1]) == 50  # a row count
    with pytest.raises(AttnclfError, match="val_size"):
        split_train_val(10, 0.01, seed=0)


def setup_dm(path, tmp_path, **kw):
    dm = make_datamodule(
        path=str(path),
        cache_dir=str(tmp_path / "cache"),
        vocab_path=str(tmp_path / "vocab.json"),
        batch_size=8,
        vocab_size=500,
        max_length=32,
        val_size=0.25,
        seed=1,
        **kw,
    )
    dm.setup("fit")
    return dm


def test_datamodule_vocab_from_train_rows_only_and_saved(tiny_imdb, tmp_path):
    dm = setup_dm(tiny_imdb, tmp_path)
    assert len(dm.train_set) == 180 and len(dm.val_set) == 60 and len(dm.test_set) == 80
    assert not set(dm.train_set.rows) & set(dm.val_set.rows)
    texts = datasets.load_dataset(str(tiny_imdb))["train"]["text"]
    train_words = {t for r in dm.train_set.rows for t in tokenize(texts[r])}
    assert set(dm.vocab.itos[2:]) <= train_words
    assert Vocab.load(tmp_path / "vocab.json").itos == dm.vocab.itos


def test_second_setup_reads_the_cache(tiny_imdb, tmp_path, monkeypatch):
    first = setup_dm(tiny_imdb, tmp_path)
    assert len(list((tmp_path / "cache").glob("*/meta.json"))) == 2  # train and test

    def fail(*a, **k):
        raise AssertionError("re-tokenised although cached")

    monkeypatch.setattr(encoding, "chunks_of", fail)
    second = setup_dm(tiny_imdb, tmp_path)
    assert second.vocab.itos == first.vocab.itos
    assert (second.train_set.tokens(5) == first.train_set.tokens(5)).all()


def test_awkward_reviews_are_encoded(tiny_imdb, tmp_path):
    dm = setup_dm(tiny_imdb, tmp_path, eval_max_length=48)
    test = dm.test_set  # rows 0-3: empty, whitespace, 100k characters, non-ASCII
    assert test.tokens(0).tolist() == [UNK_ID] and test.tokens(1).tolist() == [UNK_ID]
    assert len(test.tokens(2)) == 48 and test.lengths[2] == 48
    assert len(test.tokens(4)) == 48  # the 1 MB review, truncated
    assert len(test.tokens(3)) == 7  # ein großartiger film ! 素晴らしい映画 très émouvant


def test_validation_and_test_read_longer_reviews_than_training(tiny_imdb, tmp_path, caplog):
    """data.max_length bounds training; validation and test read up to data.eval_max_length (at least
    max_length; None: whole reviews), and the saved vocabulary says so for attnclf eval and attnclf predict."""
    dm = setup_dm(tiny_imdb, tmp_path, eval_max_length=48)
    long_train = [i for i in range(len(dm.train_set)) if dm.train_set.lengths[i] == 32]
    assert long_train and all(len(dm.train_set.tokens(i)) == 32 for i in long_train)
    assert dm.val_set.lengths.max() == 48 and dm.test_set.lengths.max() == 48
    meta = Vocab.load(tmp_path / "vocab.json").meta
    assert meta["max_length"] == 32 and meta["eval_max_length"] == 48
    whole = setup_dm(tiny_imdb, tmp_path, eval_max_length=None).test_set
    assert whole.lengths[4] == len(whole.tokens(4)) == 160_000  # the 1 MB review ("awful boring " * 80000)
    assert Vocab.load(tmp_path / "vocab.json").meta["eval_max_length"] is None
    with caplog.at_level(logging.INFO, logger="attnclf"):
        assert setup_dm(tiny_imdb, tmp_path, eval_max_length=8).val_set.lengths.max() == 32  # at least max_length
    assert "data.eval_max_length=8 is below data.max_length=32: validation and test read 32 tokens" in caplog.text


@pytest.mark.parametrize("mode,expected", [("head", [0, 1, 2, 3]), ("tail", [6, 7, 8, 9]), ("head_tail", [0, 1, 8, 9])])
def test_truncation(mode, expected):
    ids = np.arange(10, dtype=np.int32)
    r = TextDataset(ids, np.array([0, 10]), np.array([1]), np.array([0]), max_length=4, truncation=mode)
    assert r.tokens(0).tolist() == expected and r.lengths.tolist() == [4]


def test_auto_batch_size_halves_the_batch_for_small_data():
    from attnclf.data.datamodule import AUTO_STEPS, auto_batch_size

    assert auto_batch_size(22_500) == 64  # IMDb's training rows (352 batches an epoch) keep 64
    assert auto_batch_size(8_635) == 64 and auto_batch_size(8_100) == 64  # MR's and Subj's in 10-fold CV
    assert auto_batch_size(3_054) == 16 and auto_batch_size(5_000) == 32  # CR's; TREC-sized data
    assert auto_batch_size(5) == 16  # (16 at the least)
    # an epoch of AUTO_STEPS batches keeps the larger size, one fewer halves it
    assert auto_batch_size(AUTO_STEPS * 64) == 64 and auto_batch_size((AUTO_STEPS - 1) * 64) == 32
    assert auto_batch_size((AUTO_STEPS - 1) * 64 + 1) == 64
    assert auto_batch_size(AUTO_STEPS * 32) == 32 and auto_batch_size((AUTO_STEPS - 1) * 32) == 16


def test_auto_batch_size_counts_the_rows_left_for_training(tmp_path, caplog):
    """auto counts the rows that train, after the test and validation rows are carved off: 4,000 rows would
    keep 32 (125 batches), the 3,240 left for training make 102 batches of 32, so 16."""
    import logging

    rows = 4000
    path = tmp_path / "d.csv"
    path.write_text("text,label\n" + "".join(f"word{i % 50} film,{i % 2}\n" for i in range(rows)))
    dm = make_datamodule(path=str(path), batch_size="auto", val_size=0.1, test_size=0.1, cache_dir=str(tmp_path / "c"))
    dm.setup("fit")
    assert len(dm.train_set) == 3240 and len(dm.val_set) == 360 and len(dm.test_set) == 400
    with caplog.at_level(logging.INFO, logger="attnclf.data.datamodule"):
        assert dm.train_batch_size() == 16
    assert "data.batch_size=auto: 16 (3240 training rows make 203 batches an epoch" in caplog.text


def test_bad_settings_name_the_value():
    with pytest.raises(AttnclfError, match="data.truncation='middle'; allowed: head, tail, head_tail"):
        make_datamodule(truncation="middle")
    with pytest.raises(AttnclfError, match="data.batch_size=0"):
        make_datamodule(batch_size=0)
    with pytest.raises(AttnclfError, match="data.batch_size='big' must be a positive integer or auto"):
        make_datamodule(batch_size="big")
    with pytest.raises(AttnclfError, match=r"data.eval_max_length=0 must be a positive integer or null \(whole\)"):
        make_datamodule(eval_max_length=0)
    with pytest.raises(AttnclfError, match="data.val_size=1.5"):
        make_datamodule(val_size=1.5)
    with pytest.raises(AttnclfError, match="does not exist"):
        make_datamodule(path="./no/such/folder").setup()


def test_collate_pads_to_the_longest():
    ids, lengths, labels = collate([(np.array([5, 6, 7]), 1), (np.array([8]), 0)])
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]] and lengths.tolist() == [3, 1] and labels.tolist() == [1, 0]


def test_bucket_sampler_covers_each_row_once_with_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 400, size=1000)
    s = BucketBatchSampler(lengths, batch_size=32, shuffle=True, seed=0, pool=10)
    epoch0 = list(s)
    flat = [i for b in epoch0 for i in b]
    assert sorted(flat) == list(range(1000)) and len(epoch0) == len(s)
    padding = sum(len(b) * lengths[b].max() - lengths[b].sum() for b in epoch0)
    random_padding = sum(32 * lengths[i : i + 32].max() - lengths[i : i + 32].sum() for i in range(0, 1000, 32))
    assert padding < 0.2 * random_padding
    s.set_epoch(1)
    assert list(s) != epoch0  # reshuffled each epoch
    s.set_epoch(0)
    assert list(s) == epoch0  # deterministic


def test_bucket_sampler_shards_across_ranks():
    lengths = np.arange(1, 101)
    shards = [list(BucketBatchSampler(lengths, 8, True, seed=0, num_replicas=3, rank=r)) for r in range(3)]
    assert len({len(x) for x in shards}) == 1  # every rank runs as many batches
    seen = [i for shard in shards for b in shard for i in b]
    assert set(seen) == set(range(100))


def test_evaluation_shards_each_review_exactly_once():
    lengths = np.arange(1, 101)
    shards = [list(BucketBatchSampler(lengths, 8, False, num_replicas=3, rank=r)) for r in range(3)]
    seen = sorted(i for shard in shards for b in shard for i in b)
    assert seen == list(range(100))
    assert [len(s) for s in shards] == [
        len(BucketBatchSampler(lengths, 8, False, num_replicas=3, rank=r)) for r in range(3)
    ]


@pytest.mark.parametrize("n,replicas", [(60, 2), (5, 4), (3, 3), (600, 2), (513, 2), (1000, 3)])
def test_every_rank_gets_batches_whatever_the_split_size(n, replicas):
    """Lightning stops a DDP run where a rank's loader is empty: evaluation gives each rank a batch at least
    (each review once, batches of at most batch_size) and training as many steps on every rank, however few
    rows there are."""
    lengths = np.random.default_rng(n).integers(1, 50, size=n)
    for shuffle in (False, True):
        shards = [
            list(BucketBatchSampler(lengths, 256, shuffle, num_replicas=replicas, rank=r)) for r in range(replicas)
        ]
        assert all(shards) and all(len(b) <= 256 for s in shards for b in s)
        assert [len(s) for s in shards] == [
            len(BucketBatchSampler(lengths, 256, shuffle, num_replicas=replicas, rank=r)) for r in range(replicas)
        ]
        seen = sorted(i for s in shards for b in s for i in b)
        if shuffle:
            assert set(seen) == set(range(n)) and len({len(s) for s in shards}) == 1
        else:
            assert seen == list(range(n))
    order = np.argsort(lengths, kind="stable").tolist()  # one process: full batches in length order, as before
    assert list(BucketBatchSampler(lengths, 256, False)) == [order[i : i + 256] for i in range(0, n, 256)]


def test_parallel_tokenising_matches_one_pass():
    """Chunks tokenised in 2 processes and merged give the same table and ids as a single pass."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)] + ["don't", "!", "?", "Ünïcode"]
    texts = [" ".join(rng.choice(words, size=rng.integers(0, 30))) for _ in range(1500)]
    texts[7] = None  # a missing review
    labels = rng.integers(0, 2, size=len(texts))
    one = encoding.encode_texts(texts, labels, workers=1)

    def assert_same(enc):
        assert enc.table == one.table
        for field in ("ids", "offsets", "labels"):
            np.testing.assert_array_equal(getattr(enc, field), getattr(one, field))

    assert_same(encoding.encode_texts(texts, labels, workers=2))
    # a datasets column: the workers read their slices of the Arrow table themselves
    split = datasets.Dataset.from_dict({"text": texts, "label": labels})
    assert_same(encoding.encode_texts(split["text"], split["label"], workers=2))


def words_dataset(root, texts):
    datasets.Dataset.from_dict({"text": texts, "label": [i % 2 for i in range(len(texts))]}).to_parquet(
        str(root / "train.parquet")
    )
    datasets.Dataset.from_dict({"text": ["testonly word"] * 4, "label": [0, 1, 0, 1]}).to_parquet(
        str(root / "test.parquet")
    )
    return root


def test_vocabulary_counts_training_rows_only_and_respects_min_freq(tmp_path):
    """A word in validation rows only (however often), or in test only, is never in the vocabulary;
    a training word needs min_freq occurrences."""
    n = 40
    train_rows, val_rows = split_train_val(n, 0.25, seed=1)  # setup_dm's val_size and seed
    texts = ["filler"] * n
    for r in val_rows:
        texts[r] = "valonly valonly valonly filler"
    texts[train_rows[0]] = "trainonce filler trainthrice"
    texts[train_rows[1]] = "trainthrice trainthrice filler"
    (tmp_path / "d").mkdir()
    root = words_dataset(tmp_path / "d", texts)
    for min_freq, expected in ((2, {"filler", "trainthrice"}), (1, {"filler", "trainthrice", "trainonce"})):
        out = tmp_path / f"min{min_freq}"
        out.mkdir()
        dm = setup_dm(root, out, min_freq=min_freq)
        assert (np.sort(dm.val_set.rows) == val_rows).all()
        assert set(dm.vocab.itos[2:]) == expected


def test_train_size_keeps_a_fixed_subset_of_training_rows(tiny_imdb, tmp_path):
    full = setup_dm(tiny_imdb, tmp_path)
    half = setup_dm(tiny_imdb, tmp_path, train_size=0.5)
    count = setup_dm(tiny_imdb, tmp_path, train_size=30)
    assert len(half.train_set) == 90 and len(count.train_set) == 30
    assert set(half.train_set.rows) < set(full.train_set.rows)  # a subset of the training rows...
    assert (half.val_set.rows == full.val_set.rows).all()  # ...with the same validation rows
    again = setup_dm(tiny_imdb, tmp_path, train_size=0.5)
    assert (again.train_set.rows == half.train_set.rows).all()  # the same subset each time
    with pytest.raises(AttnclfError, match=r"data.train_size=500 gives 500 rows; need 1..180"):
        setup_dm(tiny_imdb, tmp_path, train_size=500)
    # a whole number is a count (1 is one row), a float a share below 1; 2.0 is neither and is refused
    with pytest.raises(AttnclfError, match="the 1 training rows all have label"):  # (one row: one class)
        setup_dm(tiny_imdb, tmp_path, train_size=1)
    for bad in (2.0, 1.0, 0.0, -3):
        with pytest.raises(AttnclfError, match=rf"data.train_size={bad} must be a share in \(0, 1\) \(a number with"):
            setup_dm(tiny_imdb, tmp_path, train_size=bad)


def test_attnclf_cache_sets_the_cache_folder(tmp_path, monkeypatch):
    from helpers.config import compose_cfg

    monkeypatch.setenv("ATTNCLF_CACHE", str(tmp_path / "here"))
    assert compose_cfg([f"paths.output_dir={tmp_path}"]).data.cache_dir == str(tmp_path / "here")
    monkeypatch.delenv("ATTNCLF_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compose_cfg([f"paths.output_dir={tmp_path}"]).data.cache_dir == str(tmp_path / "home/.cache/attnclf")


def test_the_token_cache_key_holds_what_changes_the_tokens(tmp_path, monkeypatch):
    """Another split, text column or tokenizer version: another cache file (the label column too, whose
    values the cache holds)."""
    import datasets

    import attnclf.data.encoding as enc_module

    split = datasets.Dataset.from_dict({"text": ["a b", "c d"], "title": ["x", "y"], "label": [0, 1], "y": [1, 0]})
    other = datasets.Dataset.from_dict({"text": ["a b", "c e"], "title": ["x", "y"], "label": [0, 1], "y": [1, 0]})
    cache = tmp_path / "cache"

    def files():
        return {p.parent.name for p in cache.glob("*/meta.json")}

    seen = []
    for ds, text, label in (
        (split, "text", "label"),
        (other, "text", "label"),
        (split, "title", "label"),
        (split, "text", "y"),
    ):
        got = encoding.encode_split(ds, text, label, str(cache))
        assert len(files()) == len(seen) + 1
        seen.append(got)
    assert seen[0].table != seen[2].table and seen[3].labels.tolist() == [1, 0]
    monkeypatch.setattr(enc_module, "TOKENIZER_VERSION", "another-version")
    encoding.encode_split(split, "text", "label", str(cache))
    assert len(files()) == 5


def test_an_unlabeled_split_is_no_class(with_unlabeled, tmp_path):
    """IMDb's unsupervised reviews carry label -1 (`datasets`' "no label"): integer labels 0/1 with such a
    split are 2 classes, not 3."""
    from helpers.data import make_datamodule

    dm = make_datamodule(str(with_unlabeled), cache_dir=str(tmp_path))
    dm.setup("fit")
    assert dm.num_classes == 2 and dm.vocab.meta["labels"] == ["0", "1"]
