"""The user tools that are not Hydra apps: each a subcommand of `attnclf` (report, compare-datasets,
compare-faithfulness, compare-attention, agreement, imbalance), each with `main(argv) -> exit status`."""
