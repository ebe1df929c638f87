"""Wiegreffe & Pinter's tests of a run's attention:
`python attention_tests.py ckpt=<run> test=diagnostic|adversarial [lambdas=[...]]`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.inference.attention_tests import attention_tests


@hydra.main(version_base="1.3", config_path="conf", config_name="attention_tests")
def main(cfg: DictConfig) -> None:
    run(attention_tests, cfg)


if __name__ == "__main__":
    main_entry(main, "attention_tests")
