"""Train a BiGRU + attention classifier: `attnclf train attention=additive`."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.training.train import train as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="train")
def main(cfg: DictConfig) -> float:
    # (a resumed run reads the data keys its command line leaves out from its own record)
    overrides = list(HydraConfig.get().overrides.task)
    return run(lambda c: job(c, overrides), cfg)


def entry() -> None:
    main_entry(main, "train")
