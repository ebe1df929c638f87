"""A classifier's settings from loose values, for tests that build a network or module by hand."""

from __future__ import annotations

from dataclasses import fields

from attnclf.models.classifier import ClassifierNet
from attnclf.settings.model import ClassifierConfig, ModelConfig, OptimizerConfig, RegularizerConfig

SECTIONS = {"model": ModelConfig, "optimizer": OptimizerConfig, "regularizer": RegularizerConfig}


def classifier_settings(attention: str = "dot", **values) -> ClassifierConfig:
    """ClassifierConfig with each value set in the section that has it (hidden_dim: model, lr: optimizer,
    epsilon: regularizer; `regularizer="adversarial"` names the regularizer), checked."""
    given = {name: {} for name in SECTIONS}
    if isinstance(values.get("regularizer"), str):
        given["regularizer"]["name"] = values.pop("regularizer")
    for key, value in values.items():
        section = next((s for s, cls in SECTIONS.items() if key in {f.name for f in fields(cls)}), None)
        if section is None:
            raise TypeError(f"{key} is not a setting of the model, the optimizer or the regularizer")
        given[section][key] = value
    config = ClassifierConfig(attention, **{s: SECTIONS[s](**v) for s, v in given.items()})
    config.check()
    return config


def net(vocab_size: int, num_classes: int = 2, attention: str = "dot", **model_values) -> ClassifierNet:
    """A ClassifierNet of ModelConfig's defaults but for the values given (embed_dim=8, dropout=0.0, ...)."""
    return ClassifierNet(vocab_size, num_classes, attention, classifier_settings(attention, **model_values).model)
