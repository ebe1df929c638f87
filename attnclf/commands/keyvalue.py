"""key=value arguments for the commands that parse flags (report, compare-datasets, compare-attention,
compare-faithfulness, agreement, imbalance), so that every command takes the form train and eval take: each
key=value stands for the flag, or the positional argument, it names; a list `key=[a,b]` gives each value;
flags given as flags pass as they are."""

from __future__ import annotations

from dataclasses import dataclass, field

from attnclf.errors import AttnclfError


@dataclass(frozen=True)
class Keys:
    """A command's keys: `positional` (in the order the command reads them; several names may stand for one:
    `ckpt` and `runs`), `flags` {key: --flag}, `each` (flags given once a value: --data a --data b),
    `switches` (true or false) and `free` (flags whose values are NAME=VALUE themselves: --rows train=100)."""

    command: str
    positional: tuple[tuple[str, ...], ...] = ()
    flags: dict[str, str] = field(default_factory=dict)
    each: frozenset[str] = frozenset()
    switches: frozenset[str] = frozenset()
    free: frozenset[str] = frozenset()

    def names(self) -> list[str]:
        return [n for names in self.positional for n in names] + list(self.flags) + list(self.switches)


def values_of(value: str) -> list[str]:
    """`[a,b]` -> [a, b]; anything else as one value."""
    if value.startswith("[") and value.endswith("]"):
        return [v.strip() for v in value[1:-1].split(",") if v.strip()]
    return [value]


def as_flags(argv: list[str], keys: Keys) -> list[str]:
    """`argv` with each key=value of `keys` as its flag or positional argument (the positional ones first, in
    the command's order); a flag, and the values after one of `keys.free`, as given. A key that is not the
    command's is one line naming those that are."""
    positional: dict[int, list[str]] = {}
    out: list[str] = []
    free = False
    for a in argv:
        key, eq, value = a.partition("=")
        if a.startswith("-") or not eq or free:
            free = (free and not a.startswith("-")) or a in keys.free
            out.append(a)
        elif key not in keys.names():
            raise AttnclfError(f"{key!r} is not a setting of {keys.command}; allowed: {', '.join(keys.names())}")
        elif key in keys.switches:
            if value.lower() not in ("true", "false"):
                raise AttnclfError(f"{key}={value!r} must be true or false")
            out += [f"--{key.replace('_', '-')}"] if value.lower() == "true" else []
        elif key in keys.flags:
            flag = keys.flags[key]
            out += [x for v in values_of(value) for x in (flag, v)] if key in keys.each else [flag, *values_of(value)]
        else:
            if not values_of(value):
                raise AttnclfError(f"{key}={value}: give one or more: '{key}=[a,b,...]'")
            place = next(i for i, names in enumerate(keys.positional) if key in names)
            positional.setdefault(place, []).extend(values_of(value))
    return [v for i in sorted(positional) for v in positional[i]] + out


def usage(keys: Keys, form: str) -> str:
    """An argparse usage line naming the key=value form first (`form`), then the flags."""
    return f"attnclf {keys.command} {form}\n       (or with flags: attnclf {keys.command} [-h] ...; see below)"
