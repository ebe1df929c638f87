"""Wiegreffe & Pinter's tests of a run's attention: `python attention_tests.py ckpt=<run> test=diagnostic|adversarial`
(or `attnclf attention-tests ...`)."""

from attnclf.commands.attention_tests import entry

if __name__ == "__main__":
    entry()
