"""Faithfulness of the attention: `python faithfulness.py ckpt=<path> [reviews=1000] [data.path=...]`
(or `attnclf faithfulness ...`)."""

from attnclf.commands.faithfulness import entry

if __name__ == "__main__":
    entry()
