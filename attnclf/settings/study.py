"""attnclf study's settings: the command line read into a StudyConfig and checked once, before any data is
read or any run started (attnclf/commands/study.py says what the study does)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from attnclf.errors import AttnclfError

# the settings a study keeps in its folder: a study run again must give the same (the budget may grow)
SETTINGS = "study.json"
# datasets known by name: their own keys (binary SST: SST-5's files, Jain & Wallace's protocol)
PROTOCOL_KEYS = {"sst_binary": ["experiment=jain_wallace", "data=sst_binary"]}
# the keys the study sets itself
OWN_KEYS = ("data.path", "data.folds", "data.fold", "seed", "attention")


@dataclass
class StudyConfig:
    """attnclf study's settings, checked once (`check`) before any data is read."""

    attention: list[str]
    data: dict[str, str]
    budget: int
    out: str = "outputs/study"
    first: int = 3
    looks: int = 5
    folds: int = 10
    rope: float = 0.2
    alpha: float = 0.05
    extra: list[str] = field(default_factory=list)

    def kept(self) -> dict:
        """What must agree when a study is continued (everything but the budget)."""
        kept = asdict(self)
        kept.pop("budget")
        return kept

    def first_step_runs(self) -> int:
        return len(self.attention) * len(self.data) * self.first


def parse(argv: list[str]) -> StudyConfig:
    """The command line as a StudyConfig, checked (one line for anything wrong, nothing run)."""
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    given = {}
    for a in argv[: argv.index("--")] if "--" in argv else argv:
        key, eq, value = a.partition("=")
        if not eq or key not in ("attention", "data", "budget", "out", "first", "looks", "folds", "rope"):
            raise AttnclfError(
                f"{a!r}: give key=value, the keys attention, data, budget, out, first, looks, folds, rope "
                "(attnclf study --help)"
            )
        given[key] = value
    for key in ("attention", "data", "budget"):
        if key not in given:
            raise AttnclfError(
                f"{key}= is missing: attnclf study 'attention=[dot,additive]' 'data=[name=path]' budget=N"
            )
    data = {}
    for item in values_of(given.pop("data")):
        name, eq, path = item.partition("=")
        if not eq or not name or not path or not name.replace("_", "").replace("-", "").isalnum():
            raise AttnclfError(f"data: {item!r}; give NAME=PATH, a name of letters, digits, - and _ (e.g. mr=mr.csv)")
        if name in data:
            raise AttnclfError(f"data: {name} is given twice")
        data[name] = path
    numbers = {k: whole(k, given.pop(k)) for k in ("budget", "first", "looks", "folds") if k in given}
    rope = given.pop("rope", "0.2")
    s = StudyConfig(values_of(given.pop("attention")), data, extra=extra, **numbers, **given)
    s.rope = points("rope", rope)
    check(s)
    return s


def values_of(value: str) -> list[str]:
    """`[a,b]` -> [a, b] (as the flag commands read a list); anything else as one value."""
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    return [v.strip() for v in inner.split(",") if v.strip()]


def whole(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise AttnclfError(f"{key}={value!r} must be a whole number") from None


def points(key: str, value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        x = -1.0
    if not x >= 0:
        raise AttnclfError(f"{key}={value!r} must be points of accuracy, 0 or more (e.g. 0.2)")
    return x


def check(s: StudyConfig) -> None:
    """Every value, before any data is read or run started."""
    from attnclf.settings.attention import package_attentions

    allowed = package_attentions()
    for name in s.attention:
        if name not in allowed and "." not in name:
            raise AttnclfError(
                f"attention: {name!r} is not a mechanism; allowed: {', '.join(allowed)}, or a class of your own "
                "as module.Class"
            )
    if len(set(s.attention)) < 2 or len(set(s.attention)) != len(s.attention):
        raise AttnclfError(f"attention={s.attention}: give two or more mechanisms, each once")
    for name, path in s.data.items():
        if not Path(path).expanduser().exists():
            raise AttnclfError(f"data: {name}={path} does not exist")
    if s.first < 2:
        raise AttnclfError(f"first={s.first} must be 2 or more (one replicate says nothing of how far seeds vary)")
    if s.looks < 1 or s.folds < 2:
        raise AttnclfError(f"looks={s.looks} must be 1 or more and folds={s.folds} 2 or more")
    if s.budget < s.first_step_runs():
        raise AttnclfError(
            f"budget={s.budget} must be at least the first step's runs: {s.first_step_runs()} "
            f"({len(s.attention)} attentions x {len(s.data)} datasets x first={s.first})"
        )
    for item in s.extra:
        key = item.split("=", 1)[0].lstrip("+~")
        if key in OWN_KEYS or key.startswith("attention."):
            raise AttnclfError(f"-- {item}: the study sets {key} itself")
    check_out(s)


def check_out(s: StudyConfig) -> None:
    """An `out` folder holding another study's settings is refused (its runs would be judged with these)."""
    kept = Path(s.out) / SETTINGS
    if not kept.exists():
        return
    before = json.loads(kept.read_text())
    differ = [k for k, v in s.kept().items() if before.get(k) != v]
    if differ:
        said = ", ".join(f"{k}={before.get(k)!r} there, {s.kept()[k]!r} here" for k in differ)
        raise AttnclfError(f"out={s.out} holds another study ({said}); give another out= or the same settings")
