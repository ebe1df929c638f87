"""Whether the attention explains the decision: the faithfulness measures (pure functions) and the
faithfulness.py command that runs them on a checkpoint."""
