"""Train a BiGRU + attention classifier: `attnclf train attention=additive`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.training.train import train as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="train")
def main(cfg: DictConfig) -> float:
    return run(job, cfg)


def entry() -> None:
    main_entry(main, "train")
