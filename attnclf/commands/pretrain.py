"""Pretrain the encoder as two language models: `attnclf pretrain [data.path=...]`."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.training.pretrain import pretrain as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="pretrain")
def main(cfg: DictConfig) -> None:
    # (a run resumed by name takes the keys its command line leaves out from its own config)
    overrides = list(HydraConfig.get().overrides.task)
    return run(lambda c: job(c, overrides), cfg)


def entry() -> None:
    main_entry(main, "pretrain")
