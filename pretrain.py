"""Pretrain the encoder as two language models: `python pretrain.py [data.path=...]` (or `attnclf pretrain ...`), then
`python train.py model.init_from=<its run folder>`."""

from attnclf.commands.pretrain import entry

if __name__ == "__main__":
    entry()
