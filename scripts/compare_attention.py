"""Moved: this tool is `attnclf compare-attention` now (this file stays for old command lines and forwards to it)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    print("scripts/compare_attention.py is `attnclf compare-attention` now", file=sys.stderr)
    sys.exit(main(["compare-attention", *sys.argv[1:]]))
