"""The faithfulness measures: whether the attention explains the decision, as pure functions of a model and
reviews (gradient x input, leave-one-out, erasure, permutation, uniform weights). The attnclf faithfulness
command that runs them on a checkpoint: attnclf/commands/faithfulness.py."""
