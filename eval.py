"""Evaluate: `python eval.py ckpt=<run>` (or `attnclf eval ...`)."""

from attnclf.commands.eval import entry

if __name__ == "__main__":
    entry()
