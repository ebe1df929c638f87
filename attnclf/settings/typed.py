"""A config group read into its dataclass: OmegaConf checks each value's type, the dataclass's `check()`
its range; both fail in one line naming the value (AttnclfError)."""

from __future__ import annotations

from dataclasses import fields

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from attnclf.errors import AttnclfError

TYPE_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "a string"}


def typed(cls, node, key: str):
    """`node` (a config group, or a dict) as a `cls` instance, its values' types checked by OmegaConf; one
    line where a value is of the wrong type or the key is not a setting of `cls`. `key`: the group's name
    in messages ("" for top-level values); a field's metadata "wanted" says what it may be."""
    if isinstance(node, DictConfig):
        node = OmegaConf.to_container(node, resolve=True)
    node = dict(node or {})
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls), node))
    except OmegaConfBaseException as e:
        names = [f.name for f in fields(cls)]
        name = str(e.full_key or e.key).split(".")[0].split("[")[0]
        if name not in names:
            raise AttnclfError(f"{key}.{name} is not a setting of {key}; allowed: {', '.join(names)}") from None
        spec = next(f for f in fields(cls) if f.name == name)
        wanted = spec.metadata.get("wanted") or " or ".join(
            TYPE_WORDS.get(t.strip(), "null" if t.strip() == "None" else t.strip())
            for t in str(spec.type).split("|")
            # the annotation as written, e.g. "int | None"
        )
        value = e.value if e.key == name else node.get(name)
        raise AttnclfError(f"{key + '.' if key else ''}{name}={value!r} must be {wanted}") from None
