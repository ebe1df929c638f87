"""Wiegreffe & Pinter's tests of a run's attention: `attnclf attention-tests ckpt=<run> test=diagnostic|adversarial`."""

import hydra
from omegaconf import DictConfig

from attnclf.cli import main_entry, run
from attnclf.inference.attention_tests import attention_tests as job


@hydra.main(version_base="1.3", config_path="pkg://attnclf.conf", config_name="attention_tests")
def main(cfg: DictConfig) -> None:
    return run(job, cfg)


def entry() -> None:
    main_entry(main, "attention_tests")
