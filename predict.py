"""Predict: `python predict.py ckpt=<path> text="a wonderful film"` or `input=<file> [output=...] [html=...]`."""

import sys

from attnclf.inference.predict import predict
from attnclf.training.train import run

if __name__ == "__main__":
    run(predict, sys.argv[1:])
