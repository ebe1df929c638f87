"""Pretrain the encoder as two language models: `python pretrain.py [data.path=...]` (or `attnclf pretrain ...`), then
`python train.py model.init_from=<its run folder>`."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    sys.exit(main(["pretrain", *sys.argv[1:]]))
