"""Using a trained classifier: `Classifier.from_checkpoint(path).predict(texts)`, evaluation on a split
(eval.py) and prediction from the command line (predict.py)."""

from attnclf.inference.classifier import Classifier, Prediction

__all__ = ["Classifier", "Prediction"]
