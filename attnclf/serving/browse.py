"""/browse's rows: a seeded sample of the first served model's run's own test rows, with every served model's
decision and its tau of the attention against |gradient x input|. Computed once, then read from a file in
that run's folder (named for the sample and the models, so another set of models computes its own)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np

from attnclf.data.text import tokenize
from attnclf.inference.as_trained import texts_as_trained
from attnclf.serving.explain import gradient_taus
from attnclf.utils.jsonfile import finite, read_json, write_json

log = logging.getLogger(__name__)

# what a kept row holds (part of the file's name: a file of an older layout is computed again)
ROWS_LAYOUT = "tokens-truncated"


def cache_file(models: list, rows: int, seed: int) -> Path:
    """Where the sample's rows are kept: the first model's run folder, named for what went into them."""
    made = [f"{m.name}={m.checkpoint.resolve()}:{m.checkpoint.stat().st_mtime_ns}" for m in models]
    digest = hashlib.sha256("\n".join([ROWS_LAYOUT, str(rows), str(seed), *made]).encode()).hexdigest()[:12]
    return models[0].clf.run / f"browse_test_{rows}_s{seed}_{digest}.json"


def browse_rows(models: list, rows: int, seed: int, batch_tokens: int, done=None) -> list[dict]:
    """The sample's rows: {row (its place among the run's test rows), text, label (true), tokens (the text's),
    truncated (some model cut it to its run's length), models: {name: {label, prob, tau}}}; read from the run
    folder where computed before. `done(k)`: called as the k-th model has read them all."""
    cache = cache_file(models, rows, seed)
    if cache.is_file():
        return read_json(cache)["rows"]
    first = models[0].clf
    texts, labels = texts_as_trained(first, "test", {})
    picked = np.sort(np.random.default_rng(seed).choice(len(texts), min(rows, len(texts)), replace=False))
    sample = [texts[i] for i in picked]
    out = [
        {
            "row": int(i),
            "text": texts[i],
            "label": first.labels[labels[i]],
            "tokens": len(tokenize(texts[i])),
            "truncated": False,
            "models": {},
        }
        for i in picked
    ]
    for m in models:
        readings = [m.clf.read(t) for t in sample]
        probs, taus, pred = gradient_taus(m.clf, readings, batch_tokens)
        for r, p, tau, k, read in zip(out, probs, taus, pred, readings, strict=True):
            r["models"][m.name] = {"label": m.clf.labels[k], "prob": float(p[k]), "tau": float(tau)}
            r["truncated"] = r["truncated"] or read.truncated
        if done is not None:
            done(len(out[0]["models"]) if out else 0)
    out = finite(out)
    try:
        write_json(cache, {"rows": out})
        log.info("/browse: %d test rows of %s sampled and kept in %s", len(out), first.run, cache)
    # a read-only run folder: computed again next time
    except OSError as e:
        log.warning("/browse: could not keep the sample in %s (%s); it is computed again at the next start", cache, e)
    return out
