"""The attention mechanism as a typed setting: its class and that class's own keys, from the `attention`
node (conf/attention/<name>.yaml: `_target_` and its keys), from a checkpoint, or by the name of one of the
package's YAMLs."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files

from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError

# the default mechanism (train.yaml's defaults list says it to Hydra)
DEFAULT_ATTENTION = "dot"
# the mechanisms a comparison across datasets runs unless told (attnclf compare-datasets --attention)
COMPARED = (DEFAULT_ATTENTION, "additive")
# the folder whose YAMLs are the package's mechanisms (attention=<name>); custom.yaml is the start for a class
# of the user's own
GROUP = "attention"
CUSTOM = "custom"


def package_attentions() -> list[str]:
    """The mechanisms the package ships, by their YAMLs' names (conf/attention/), custom's start aside."""
    names = [p.name.removesuffix(".yaml") for p in files("attnclf.conf").joinpath(GROUP).iterdir()]
    return sorted(n for n in names if n != CUSTOM and not n.startswith("_"))


def attention_order(names) -> list[str]:
    """Attentions in the order every comparing view shows them: the default mechanism first, then by name."""
    return sorted(set(names), key=lambda a: (a != DEFAULT_ATTENTION, a))


def attention_node(name: str) -> dict:
    """conf/attention/<name>.yaml as a dict (one line where the package has no such mechanism)."""
    path = files("attnclf.conf").joinpath(GROUP, f"{name}.yaml")
    if name == CUSTOM or not path.is_file():
        raise AttnclfError(f"attention={name!r}; allowed: {', '.join(package_attentions())} or a class of your own")
    return OmegaConf.to_container(OmegaConf.create(path.read_text()))


@cache
def package_names() -> dict[str, str]:
    """The package's mechanisms by their class: {"module.Class": the name of its YAML}. Read from conf/attention/,
    so that naming a run folder or a run's mechanism imports no torch (a refusal of a bad value comes at once);
    each class's own `name` is its YAML's (a test holds them equal)."""
    return {attention_node(name)["_target_"]: name for name in package_attentions()}


def name_of_class(target: str) -> str:
    """The name of the mechanism the class `target` names: the package's from its YAML, a class of the user's
    own imported and asked (attnclf/models/registry.py: attention_name)."""
    name = package_names().get(target)
    if name is not None:
        return name
    from attnclf.models.registry import attention_class, attention_name

    return attention_name(attention_class(target))


@dataclass
class AttentionConfig:
    """What attention pools the encoder: its class (`target`, importable) and that class's own keys. `name`
    is what reports, run folders and figures call it (attnclf/models/registry.py: attention_name)."""

    target: str
    keys: dict = field(default_factory=dict)
    # (the class's, where not given)
    name: str = ""

    def __post_init__(self):
        self.name = self.name or name_of_class(self.target)

    def check(self) -> None:
        from attnclf.models.registry import attention_class, check_keys

        check_keys(attention_class(self.target), self.keys)

    @classmethod
    def named(cls, name: str) -> AttentionConfig:
        """One of the package's mechanisms as its YAML sets it up (attention=<name>)."""
        return cls.from_node(attention_node(name))

    @classmethod
    def from_node(cls, node) -> AttentionConfig:
        """From the composed `attention` node ({_target_: <module.Class>, its keys...})."""
        if isinstance(node, str):
            return cls.named(node)
        node = dict(OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node or {})
        target = node.pop("_target_", None)
        if not target or target == "???":
            raise AttnclfError(
                "attention._target_ is not given: name the class, attention=custom attention._target_=<module.Class>"
            )
        return cls(target=str(target), keys=node)


def name_of_target(target) -> str:
    """The name of the mechanism `target` names, for the run folder (${attention_name:...}); a target that is
    not given or cannot be imported is named by its last part, and the run's check says why in one line."""
    if target is None:
        return CUSTOM
    try:
        return name_of_class(str(target))
    except AttnclfError:
        return str(target).rpartition(".")[2].lower() or "attention"


def register_resolvers() -> None:
    OmegaConf.register_new_resolver("attention_name", name_of_target, replace=True)
