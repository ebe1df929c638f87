"""A classifier's settings from loose values, for tests that build a network or module by hand."""

from __future__ import annotations

from dataclasses import fields

from attnclf.models.classifier import ClassifierNet
from attnclf.settings.attention import AttentionConfig
from attnclf.settings.model import ClassifierConfig, ModelConfig, OptimizerConfig, RegularizerConfig

SECTIONS = {"model": ModelConfig, "optimizer": OptimizerConfig, "regularizer": RegularizerConfig}


def classifier_settings(attention: str = "dot", attention_keys: dict | None = None, **values) -> ClassifierConfig:
    """ClassifierConfig with each value set in the section that has it (hidden_dim: model, lr: optimizer,
    epsilon: regularizer; `regularizer="adversarial"` names the regularizer), the package's mechanism
    `attention` with `attention_keys` over its YAML's, checked."""
    mechanism = AttentionConfig.named(attention)
    mechanism.keys.update(attention_keys or {})
    given = {name: {} for name in SECTIONS}
    if isinstance(values.get("regularizer"), str):
        given["regularizer"]["name"] = values.pop("regularizer")
    for key, value in values.items():
        section = next((s for s, cls in SECTIONS.items() if key in {f.name for f in fields(cls)}), None)
        if section is None:
            raise TypeError(f"{key} is not a setting of the model, the optimizer or the regularizer")
        given[section][key] = value
    config = ClassifierConfig(mechanism, **{s: SECTIONS[s](**v) for s, v in given.items()})
    config.check()
    return config


def net(
    vocab_size: int, num_classes: int = 2, attention: str = "dot", attention_keys: dict | None = None, **model_values
) -> ClassifierNet:
    """A ClassifierNet of ModelConfig's defaults but for the values given (embed_dim=8, dropout=0.0, ...)."""
    config = classifier_settings(attention, attention_keys, **model_values)
    return ClassifierNet(vocab_size, num_classes, config.attention, config.model)


def mechanism(name: str, query_dim: int, key_dim: int, dim=None, normalizer="softmax", learned=False, **keys):
    """The package's mechanism `name` (its YAML's keys, then `keys`) built for the sizes given."""
    from attnclf.models.attention import AttentionShape
    from attnclf.models.registry import build_attention
    from attnclf.settings.attention import AttentionConfig

    config = AttentionConfig.named(name)
    shape = AttentionShape(query_dim, key_dim, dim, normalizer, learned)
    return build_attention(config.target, {**config.keys, **keys}, shape)
