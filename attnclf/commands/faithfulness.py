"""Faithfulness of the attention: `attnclf faithfulness ckpt=<run> [reviews=1000] [data.path=...]`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.inference.faithfulness import faithfulness as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="faithfulness")
def main(cfg: DictConfig) -> None:
    return run(job, cfg)


def entry() -> None:
    main_entry(main, "faithfulness")
