"""Pretrain the encoder as two language models: `attnclf pretrain [data.path=...]`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.training.pretrain import pretrain as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="pretrain")
def main(cfg: DictConfig) -> None:
    return run(job, cfg)


def entry() -> None:
    main_entry(main, "pretrain")
