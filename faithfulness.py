"""Faithfulness of the attention: `python faithfulness.py ckpt=<path> [reviews=1000] [data.path=...]`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.inference.faithfulness import faithfulness


@hydra.main(version_base="1.3", config_path="conf", config_name="faithfulness")
def main(cfg: DictConfig) -> None:
    run(faithfulness, cfg)


if __name__ == "__main__":
    main_entry(main, "faithfulness")
