"""`python -m attnclf <command> ...`: the `attnclf` command."""

from attnclf.commands import run_command

run_command()
