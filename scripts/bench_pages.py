"""The served pages' render time: /docs (on the OpenAPI schema of a served run), the pages' head, the explorer at
five models (one run's reading of the median-length test review and of that review with its middle word deleted,
under five names, the edit compared with the original) and /browse's first page (500 test rows, the run's
decisions under five names), the best of 5 x N renders each, from the attnclf source in --src (default: this
checkout), so that two versions can be set side by side (check the other out beside: `git worktree add
/tmp/before <commit>`).

    python scripts/bench_pages.py --ckpt <run> [--src /tmp/before]

Timings, not a test.
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

# (run in a process of its own, with --src first on the path: the version timed is the one imported)
TIMED = """
import json, pickle, sys, timeit
from attnclf.presentation.api_docs import docs_page
from attnclf.presentation.browse import Selection, browse_page, selected
from attnclf.presentation.explorer import Look, explorer_page
from attnclf.presentation.site import head
schema = json.load(open(sys.argv[1]))
views, text, edit, rows = pickle.load(open(sys.argv[2], "rb"))
names = [v["name"] for v in views]
limits = [("max_texts", "64"), ("max_text_chars", "100000")]
sel = Selection()
pages = {
    "/docs": (lambda: docs_page(schema, limits, "s3cret"), 200),
    "head": (lambda: head("a page", "s3cret"), 200),
    "explorer, 5 models": (lambda: explorer_page(Look(edit, text), views, "s3cret", about="read"), 5),
    "/browse, 5 models": (lambda: browse_page(rows, selected(rows, sel), names, sel, "rows", "s3cret"), 5),
}
for name, (fn, number) in pages.items():
    best = min(timeit.repeat(fn, number=number, repeat=5)) / number
    print(f"{name}: {best * 1e6:.0f} us a page, {len(fn())} characters")
"""


def schema_of(ckpt: str, out: Path) -> None:
    """The OpenAPI schema of a server of `ckpt`, written to `out` (from this checkout's attnclf)."""
    from attnclf.commands.serve import load_models
    from attnclf.serving.app import create_app
    from attnclf.settings.serve import ServeConfig
    from attnclf.utils.jsonfile import write_json

    s = ServeConfig(ckpt=[ckpt])
    s.normalize()
    s.check()
    write_json(out, create_app(load_models(s), s).openapi())


def inputs_of(ckpt: str, out: Path, names=("dot", "additive", "general", "multihead", "structured")) -> None:
    """The pages' inputs, pickled to `out` (from this checkout's attnclf): the explorer's five views of the run's
    median-length test review with its middle word deleted (against the review), and /browse's 500 rows, the
    run's decisions under each of `names`."""
    from attnclf.commands.serve import load_models
    from attnclf.data.text import tokenize
    from attnclf.serving.browse import browse_rows
    from attnclf.serving.explain import explain
    from attnclf.serving.routes import without_tokens
    from attnclf.settings.serve import ServeConfig

    s = ServeConfig(ckpt=[ckpt])
    s.normalize()
    s.check()
    model = load_models(s)[0]
    rows = browse_rows([model], s.browse_rows, s.seed, s.batch_tokens)
    for r in rows:
        r["models"] = {n: next(iter(r["models"].values())) for n in names}
    text = sorted((r["text"] for r in rows), key=lambda t: len(tokenize(t)))[len(rows) // 2]
    edit = without_tokens(text, [len(tokenize(text)) // 2])
    read = {t: explain(model.clf, model.clf.read(t)) for t in (text, edit)}

    def view(n: str) -> dict:
        (pred, ex), (was, was_ex) = read[edit], read[text]
        pinned = {"prediction": was, "explained": was_ex}
        return {
            "name": n,
            "about": model.about,
            "labels": model.clf.labels,
            "prediction": pred,
            "explained": ex,
            "pinned": pinned,
        }

    out.write_bytes(pickle.dumps(([view(n) for n in names], text, edit, rows)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, help="a run folder: its server's schema is what /docs shows")
    ap.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1], help="an attnclf checkout")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        schema, inputs = Path(tmp) / "openapi.json", Path(tmp) / "inputs.pickle"
        schema_of(args.ckpt, schema)
        inputs_of(args.ckpt, inputs)
        env_path = str(args.src.resolve())
        code = f"import sys; sys.path.insert(0, {env_path!r})\n" + TIMED
        subprocess.run([sys.executable, "-c", code, str(schema), str(inputs)], check=True)


if __name__ == "__main__":
    main()
