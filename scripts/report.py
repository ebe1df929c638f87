"""Moved: this tool is `attnclf report` now (this file stays for old command lines and forwards to it)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    print("scripts/report.py is `attnclf report` now", file=sys.stderr)
    sys.exit(main(["report", *sys.argv[1:]]))
