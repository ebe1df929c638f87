"""Predict: `python predict.py ckpt=<path> text="a wonderful film"` or `input=<file> [output=...] [html=...]`
(or `attnclf predict ...`)."""

from attnclf.commands.predict import entry

if __name__ == "__main__":
    entry()
