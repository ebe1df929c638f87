"""Evaluate a run on its own test rows: `attnclf eval ckpt=<run>`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.inference.evaluate import evaluate as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    return run(job, cfg)


def entry() -> None:
    main_entry(main, "eval")
