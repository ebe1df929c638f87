"""Predict: `python predict.py ckpt=<path> text="a wonderful film"` or `input=<file> [output=...] [html=...]`."""

import sys

from attnclf.predict import predict
from attnclf.train import run

if __name__ == "__main__":
    run(predict, sys.argv[1:])
