"""A user's own data, made for tests: short texts whose class shows in a few class words among filler,
written as any of the file types a user brings (csv, tsv, jsonl, parquet, fastText's txt)."""

from __future__ import annotations

import csv
import json
import random

import datasets

WORDS = [
    ["awful", "dreadful", "terrible"],
    ["dull", "boring", "flat"],
    ["fine", "okay", "average"],
    ["good", "nice", "pleasant"],
    ["superb", "brilliant", "wonderful"],
]
FILLER = ["the", "film", "plot", "was", "and", "a", "story", "it"]


def examples(n: int, classes: int, seed: int, names=None) -> dict:
    """Short texts whose class shows in a few class words among filler; labels i % classes (or names)."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(n):
        c = i % classes
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 12))]
        for _ in range(2):
            words.insert(rng.randrange(len(words) + 1), rng.choice(WORDS[c]))
        texts.append(" ".join(words))
        labels.append(names[c] if names else c)
    return {"text": texts, "label": labels}


def write(path, rows: dict, kind: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = list(rows)
    records = [dict(zip(keys, vals, strict=True)) for vals in zip(*rows.values(), strict=True)]
    if kind in ("csv", "tsv"):
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys, delimiter="," if kind == "csv" else "\t")
            w.writeheader()
            w.writerows(records)
    elif kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    elif kind == "parquet":
        datasets.Dataset.from_dict(rows).to_parquet(str(path))
    elif kind == "txt":  # fastText's format
        path.write_text("".join(f"__label__{r['label']} {r['text']}\n" for r in records))
    return path
