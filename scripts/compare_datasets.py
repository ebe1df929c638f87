"""Moved: this tool is `attnclf compare-datasets` now (this file stays for old command lines and forwards to it)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    print("scripts/compare_datasets.py is `attnclf compare-datasets` now", file=sys.stderr)
    sys.exit(main(["compare-datasets", *sys.argv[1:]]))
