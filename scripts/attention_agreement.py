"""Moved: this tool is `attnclf agreement` now (this file stays for old command lines and forwards to it)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    print("scripts/attention_agreement.py is `attnclf agreement` now", file=sys.stderr)
    sys.exit(main(["agreement", *sys.argv[1:]]))
