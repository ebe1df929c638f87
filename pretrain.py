"""Pretrain the encoder as two language models: `python pretrain.py [data.path=...]`, then
`python train.py model.init_from=<its run folder>`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.training.pretrain import pretrain


@hydra.main(version_base="1.3", config_path="conf", config_name="pretrain")
def main(cfg: DictConfig) -> None:
    run(pretrain, cfg)


if __name__ == "__main__":
    main_entry(main, "pretrain")
