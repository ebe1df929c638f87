"""Evaluate: `python eval.py ckpt=<run>` (or `attnclf eval ...`)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    sys.exit(main(["eval", *sys.argv[1:]]))
