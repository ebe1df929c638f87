"""The served pages' render time: /docs (on the OpenAPI schema of a served run) and the pages' head, the best
of 5 x 200 renders each, from the attnclf source in --src (default: this checkout), so that two versions can be
set side by side (check the other out beside: `git worktree add /tmp/before <commit>`).

    python scripts/bench_pages.py --ckpt <run> [--src /tmp/before]

Timings, not a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

# (run in a process of its own, with --src first on the path: the version timed is the one imported)
TIMED = """
import json, sys, timeit
from attnclf.presentation.api_docs import docs_page
from attnclf.presentation.site import head
schema = json.load(open(sys.argv[1]))
limits = [("max_texts", "64"), ("max_text_chars", "100000")]
for name, fn in (("/docs", lambda: docs_page(schema, limits, "s3cret")), ("head", lambda: head("a page", "s3cret"))):
    best = min(timeit.repeat(fn, number=200, repeat=5)) / 200
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, help="a run folder: its server's schema is what /docs shows")
    ap.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1], help="an attnclf checkout")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        schema = Path(tmp) / "openapi.json"
        schema_of(args.ckpt, schema)
        env_path = str(args.src.resolve())
        code = f"import sys; sys.path.insert(0, {env_path!r})\n" + TIMED
        subprocess.run([sys.executable, "-c", code, str(schema)], check=True)


if __name__ == "__main__":
    main()
