"""Faithfulness of the attention: `python faithfulness.py ckpt=<path> [reviews=1000] [data.path=...]`
(or `attnclf faithfulness ...`)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    sys.exit(main(["faithfulness", *sys.argv[1:]]))
