"""The search space of `hydra.sweeper.params`, written in Hydra's override grammar, as Optuna distributions:

    choice(dot, additive)          -> categorical
    interval(0.1, 0.6)             -> float in [0.1, 0.6]   (whole ends: int)
    tag(log, interval(1e-4, 1e-2)) -> on a log scale
    range(64, 257, 64)             -> int 64, 128, ..., 256 (a float step: float)
    anything else                  -> a fixed value, given to every trial

Adapted from Hydra's hydra-optuna-sweeper (MIT licence), for Optuna >= 4's distributions.
"""

from __future__ import annotations

from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, Transformer

from attnclf.errors import AttnclfError


def distribution(override: Override) -> Any:
    """The Optuna distribution of one sweep override, or its value as text where it is not a sweep."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if not override.is_sweep_override():
        return override.get_value_element_as_str()
    value = override.value()
    if override.is_choice_sweep() or (override.is_range_sweep() and value.shuffle):
        return CategoricalDistribution(list(override.sweep_iterator(transformer=Transformer.encode)))
    if override.is_range_sweep():
        last = list(override.sweep_iterator())[-1]  # (range's stop is left out)
        if any(isinstance(v, float) for v in (value.start, value.stop, value.step)):
            return FloatDistribution(float(value.start), float(last), step=float(value.step))
        return IntDistribution(int(value.start), int(last), step=int(value.step))
    if override.is_interval_sweep():
        log = "log" in value.tags
        if isinstance(value.start, int) and isinstance(value.end, int):
            return IntDistribution(value.start, value.end, log=log)
        return FloatDistribution(float(value.start), float(value.end), log=log)
    raise AttnclfError(f"hydra.sweeper.params: {override.input_line!r} is not a search the Optuna sweeper takes "
                       "(choice, interval, range, tag(log, interval))")  # fmt: skip


def search_space(arguments: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """({key: distribution} searched, {key: value} fixed) of the sweeper's params and the command line's
    overrides (a key given on the command line as a single value is fixed for the whole search)."""
    searched, fixed = {}, {}
    for override in OverridesParser.create().parse_overrides(arguments):
        key, found = override.get_key_element(), distribution(override)
        if isinstance(found, str):
            fixed[key] = found
            searched.pop(key, None)
        else:
            searched[key] = found
            fixed.pop(key, None)
    return searched, fixed
