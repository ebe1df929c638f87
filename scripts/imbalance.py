"""Moved: this tool is `attnclf imbalance` now (this file stays for old command lines and forwards to it)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    print("scripts/imbalance.py is `attnclf imbalance` now", file=sys.stderr)
    sys.exit(main(["imbalance", *sys.argv[1:]]))
