"""Using a trained classifier: `TrainedClassifier.from_checkpoint(path).predict(texts)`, and the rows of the
data it was trained on, read as it read them (`as_trained.py`)."""

import warnings

from attnclf.inference.trained import Prediction, TrainedClassifier

__all__ = ["TrainedClassifier", "Prediction"]


def __getattr__(name: str):
    # the name this class had before: still importable, with a note
    if name == "Classifier":
        warnings.warn("attnclf.inference.Classifier is now TrainedClassifier", FutureWarning, stacklevel=2)
        return TrainedClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
