"""Predict: `python predict.py ckpt=<path> text="a wonderful film"` or `input=<file> [output=...] [html=...]`
(or `attnclf predict ...`)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    sys.exit(main(["predict", *sys.argv[1:]]))
