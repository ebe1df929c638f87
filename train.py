"""Train a BiGRU + attention classifier: `python train.py attention=additive` (or `attnclf train ...`)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
