"""Wiegreffe & Pinter's tests of a run's attention: `python attention_tests.py ckpt=<run> test=diagnostic|adversarial`
(or `attnclf attention-tests ...`)."""

import sys

from attnclf.commands import main

if __name__ == "__main__":
    sys.exit(main(["attention-tests", *sys.argv[1:]]))
