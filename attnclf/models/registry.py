"""An attention mechanism named by its class (`_target_` in conf/attention/<name>.yaml, or a class of the
user's own): found, checked and built here, so that a run, a checkpoint and a library caller build it alike."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import typing

from attnclf.errors import AttnclfError
from attnclf.models.attention import Attention, AttentionShape


def attention_class(target: str) -> type[Attention]:
    """The class `target` ("package.module.Class") names: imported, and an Attention (one line where not)."""
    module_name, _, class_name = str(target).rpartition(".")
    if not module_name:
        raise AttnclfError(f"attention._target_={target!r} must name a class as module.Class")
    # the folder a command is run from, as `python -m` reads it (last: it shadows no installed package), so that
    # a module of one's own beside the data is found by the installed `attnclf` too
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise AttnclfError(
            f"attention._target_={target!r}: module {module_name!r} cannot be imported here ({e}); "
            f"make it importable (run from the folder holding it, or add that folder to PYTHONPATH)"
        ) from e
    cls = getattr(module, class_name, None)
    if cls is None:
        classes = [n for n, c in vars(module).items() if inspect.isclass(c) and issubclass(c, Attention)]
        found = sorted(n for n in classes if getattr(module, n) is not Attention)
        raise AttnclfError(
            f"attention._target_={target!r}: module {module_name!r} has no {class_name!r}; its attentions: "
            f"{', '.join(found) or 'none'}"
        )
    if not (inspect.isclass(cls) and issubclass(cls, Attention)):
        found = type(cls).__name__ if not inspect.isclass(cls) else f"class {cls.__name__}"
        raise AttnclfError(
            f"attention._target_={target!r} is {found}, not an attention: subclass "
            "attnclf.models.attention.Attention (CONTRIBUTING.md, 'Adding an attention')"
        )
    return cls


def attention_name(cls: type) -> str:
    """What reports, run folders and figures call a mechanism: its class's own `name`, else the class's name
    in lower case (a subclass that names none is not called by its parent's name)."""
    return vars(cls).get("name") or cls.__name__.lower()


def own_keys(cls: type) -> dict:
    """The keyword settings a mechanism's constructor takes beyond the shape, with their defaults (None where
    it has none)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: None if p.default is p.empty else p.default for p in params if p.kind in kinds}


def check_keys(cls: type, keys: dict) -> None:
    """Each key given is one the class takes (one line naming it and the class's keys where not), of its
    annotated type."""
    params = inspect.signature(cls.__init__).parameters.values()
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        takes = own_keys(cls)
        for key in keys:
            if key not in takes:
                allowed = ", ".join(takes) or "none"
                raise AttnclfError(
                    f"attention.{key}: {cls.__module__}.{cls.__name__} takes no such setting (its settings: "
                    f"{allowed}); for a class of your own start from no keys: attention=custom "
                    "attention._target_=<module.Class>"
                )
    check_types(cls, keys)


# a key's annotation and what its value must then be
_KINDS = {
    bool: (lambda v: isinstance(v, bool), "true or false"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    float: (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    str: (lambda v: isinstance(v, str), "a string"),
}


def check_types(cls: type, keys: dict) -> None:
    """Each value given is of its key's annotated type, where that is bool, int, float or str (as the typed
    settings check theirs: attention.scale='maybe' is one line, not a true value)."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    # annotations that cannot be resolved here: the constructor's own checks remain
    except Exception:
        return
    for key, value in keys.items():
        kind = _KINDS.get(hints.get(key))
        if kind is not None and not kind[0](value):
            raise AttnclfError(f"attention.{key}={value!r} must be {kind[1]}")


def build_attention(target: str, keys: dict, shape: AttentionShape) -> Attention:
    """`target`'s class built as cls(shape, **keys); a constructor that refuses its settings is one line."""
    cls = attention_class(target)
    check_keys(cls, keys)
    try:
        return cls(shape, **keys)
    except AttnclfError:
        raise
    except (TypeError, ValueError) as e:
        raise AttnclfError(f"attention: {target}({', '.join(f'{k}={v!r}' for k, v in keys.items())}): {e}") from e
