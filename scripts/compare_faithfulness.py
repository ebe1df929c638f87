"""Moved: this tool is `attnclf compare-faithfulness` now (this file stays for old command lines and forwards to it)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    print("scripts/compare_faithfulness.py is `attnclf compare-faithfulness` now", file=sys.stderr)
    sys.exit(main(["compare-faithfulness", *sys.argv[1:]]))
