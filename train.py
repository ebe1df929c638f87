"""Train a BiGRU + attention classifier: `python train.py attention=additive`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.training.train import train


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float:
    return run(train, cfg)


if __name__ == "__main__":
    main_entry(main, "train")
