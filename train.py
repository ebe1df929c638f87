"""Train a BiGRU + attention classifier: `python train.py attention=additive` (or `attnclf train ...`)."""

from attnclf.commands.train import entry

if __name__ == "__main__":
    entry()
