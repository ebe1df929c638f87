"""Evaluate a checkpoint: `python eval.py ckpt=<path> [data.path=...] [data.split=test]`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.inference.evaluate import evaluate


@hydra.main(version_base="1.3", config_path="conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    run(evaluate, cfg)


if __name__ == "__main__":
    main_entry(main, "eval")
