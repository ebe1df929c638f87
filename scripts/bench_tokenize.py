"""Tokenising IMDb: the project's regex tokenizer against Hugging Face `tokenizers`.

    pip install tokenizers   # only for this comparison
    python scripts/bench_tokenize.py --data ../shared/data/imdb [--split train]

Both turn the same reviews into ids of the same vocabulary (the same rules: tags
removed, lower case, words with inner apostrophes, '!' and '?'); it prints the
seconds each takes and whether their ids agree.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnclf.text import _TAG, _TOKEN, PAD, UNK, Vocab, tokenize  # noqa: E402


def hf_tokenizer(vocab: Vocab):
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab.stoi, unk_token=UNK))
    tok.normalizer = normalizers.Sequence([normalizers.Replace(Regex(_TAG.pattern), " "), normalizers.Lowercase()])
    # keep what the pattern matches, drop the rest
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(_TOKEN.pattern), behavior="removed", invert=True)
    return tok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="stanfordnlp/imdb")
    p.add_argument("--split", default="train")
    p.add_argument("--vocab-size", type=int, default=30000)
    args = p.parse_args()

    import datasets

    texts = list(datasets.load_dataset(args.data)[args.split]["text"])
    counts = Counter(t for text in texts for t in tokenize(text))
    vocab = Vocab([PAD, UNK, *(t for t, _ in counts.most_common(args.vocab_size - 2))])

    t = time.perf_counter()
    ours = [vocab.encode(text) for text in texts]
    regex_s = time.perf_counter() - t

    try:
        tok = hf_tokenizer(vocab)
    except ImportError:
        print(f"regex: {regex_s:.2f} s for {len(texts)} reviews; `pip install tokenizers` to compare")
        return
    t = time.perf_counter()
    theirs = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    hf_s = time.perf_counter() - t

    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    print(f"{len(texts)} reviews, {os.cpu_count()} CPUs, RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', '')}")
    print(f"regex (re.findall + dict lookups): {regex_s:6.2f} s")
    print(f"HF tokenizers (encode_batch):      {hf_s:6.2f} s   ({hf_s / regex_s:.2f}x the regex time)")
    print(f"identical ids: {same}/{len(texts)} reviews")


if __name__ == "__main__":
    main()
