"""Using a trained classifier: `Classifier.from_checkpoint(path).predict(texts)`, evaluation on a split
(eval.py), prediction from the command line (predict.py) and the faithfulness measures on a checkpoint
(faithfulness.py)."""

from attnclf.inference.trained import Classifier, Prediction

__all__ = ["Classifier", "Prediction"]
