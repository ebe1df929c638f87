"""Predict: `attnclf predict ckpt=<path> text="a wonderful film"` or `input=<file> [output=...] [html=...]`."""

import sys

from attnclf.cli import run
from attnclf.inference.predict import predict


def entry() -> None:
    run(predict, sys.argv[1:])
