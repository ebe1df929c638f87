"""Tokenising IMDb four ways: one process, the project's forked workers, `datasets.map`, and HF `tokenizers`.

    pip install tokenizers   # only for the last comparison
    python scripts/bench_tokenize.py --data /path/to/imdb [--split train] [--workers 2]

All four turn the same reviews into ids of the same vocabulary (the same rules:
tags removed, lower case, words with inner apostrophes, '!' and '?'):
1. the regex tokenizer in one process (`Vocab.encode`, review by review);
2. the product's way: `attnclf.data.encode_texts` (forked workers, each reading
   its slices of the datasets column, their tables merged) and the ids mapped
   onto the vocabulary;
3. the regex tokenizer inside `datasets.map(batched=True, num_proc=workers)`,
   the ids kept in memory and read back as lists;
4. Hugging Face `tokenizers` (WordLevel, the same regex as a Split pre-tokenizer), `encode_batch`.
It prints the seconds each takes and whether their ids agree with the first.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

from attnclf.data.text import PAD, TAG, TOKEN, UNK, Vocab, tokenize


def hf_tokenizer(vocab: Vocab):
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab.stoi, unk_token=UNK))
    tok.normalizer = normalizers.Sequence([normalizers.Replace(Regex(TAG.pattern), " "), normalizers.Lowercase()])
    # keep what the pattern matches, drop the rest
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(TOKEN.pattern), behavior="removed", invert=True)
    return tok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb")
    p.add_argument("--split", default="train")
    p.add_argument("--vocab-size", type=int, default=30000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes for 2 and 3")
    args = p.parse_args()

    import datasets

    from attnclf.data.encoding import encode_texts

    datasets.disable_progress_bars()
    split = datasets.load_dataset(args.data)[args.split]
    texts = split["text"][:]
    counts = Counter(t for text in texts for t in tokenize(text))
    vocab = Vocab([PAD, UNK, *(t for t, _ in counts.most_common(args.vocab_size - 2))])
    seconds, ids = {}, {}

    name = "regex, one process (Vocab.encode)"
    t = time.perf_counter()
    ids[name] = [vocab.encode(text) for text in texts]
    seconds[name] = time.perf_counter() - t

    name = f"regex, the product's encode_texts ({args.workers} processes)"
    t = time.perf_counter()
    enc = encode_texts(split["text"], split["label"], workers=args.workers)
    flat = enc.remap(vocab)
    seconds[name] = time.perf_counter() - t
    ids[name] = [flat[a:b].tolist() for a, b in zip(enc.offsets[:-1], enc.offsets[1:], strict=True)]

    name = f"regex in datasets.map(batched=True, num_proc={args.workers})"
    t = time.perf_counter()
    mapped = split.map(
        lambda batch: {"ids": [vocab.encode(text) for text in batch["text"]]},
        batched=True,
        num_proc=args.workers if args.workers > 1 else None,
        remove_columns=split.column_names,
        keep_in_memory=True,
        load_from_cache_file=False,
    )
    ids[name] = mapped["ids"][:]
    seconds[name] = time.perf_counter() - t

    try:
        tok = hf_tokenizer(vocab)
    except ImportError:
        tok = None
    if tok is not None:
        name = "HF tokenizers (encode_batch)"
        t = time.perf_counter()
        ids[name] = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        seconds[name] = time.perf_counter() - t

    print(f"{len(texts)} reviews ({args.split}), {os.cpu_count()} CPUs")
    first = next(iter(seconds))
    for name, s in seconds.items():
        same = sum(a == b for a, b in zip(ids[first], ids[name], strict=True))
        print(f"{name:<48} {s:6.2f} s  ({s / seconds[first]:4.2f}x)  identical ids: {same}/{len(texts)}")
    if tok is None:
        print("(`pip install tokenizers` to compare Hugging Face tokenizers too)")


if __name__ == "__main__":
    main()
