"""Predict: `python predict.py ckpt=<path> text="a wonderful film"` or `input=<file> [output=...] [html=...]`."""

import sys

from attnclf.cli import run
from attnclf.inference.predict import predict

if __name__ == "__main__":
    run(predict, sys.argv[1:])
