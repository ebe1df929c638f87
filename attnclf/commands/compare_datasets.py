"""Attentions compared beyond IMDb: the short-text suite of Kim (2014), or any datasets by name, each by its
protocol, then one report of every dataset.

    attnclf compare-datasets --mr /path/to/mr.csv --subj /path/to/subj.jsonl --cr /path/to/cr.txt \
        --sst5 /path/to/sst5 [--imdb /path/to/imdb] [--data NAME=PATH ...] [--out outputs/compare_datasets] \
        [--folds 10] [--seeds 1 2 3] [--attention dot additive ...] [-- key=value ...]

- data without a test split of its own (MR, Subj, CR: one file each): `--folds`-fold cross-validation,
  every attention on every fold (`data.folds=K 'data.fold=range(K)'`);
- data with one (SST-5, IMDb): `--seeds`, every attention.
`--attention` (or `attention=[dot,additive,general,...]`): the mechanisms compared, by their names in
conf/attention/ (default: dot and additive).
`--data NAME=PATH` (repeated) adds any dataset under its own name, its protocol chosen the same way from its
splits (read as train.py reads them); `--mr PATH` is `--data mr=PATH`, and so on.

Every run is a Hydra multirun of `attnclf train` under OUT/<dataset>, so a stopped suite is continued by running
the missing datasets again (a dataset whose folder already holds all its runs is skipped). Overrides after
`--` go to every run (e.g. `num_threads=1`). Then `attnclf report OUT` reports each dataset apart: mean
± sd per attention, the paired difference (by fold, or by seed) with its tests, and time per run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnclf.commands.keyvalue import Keys, as_flags, usage
from attnclf.settings.attention import COMPARED, package_attentions
from attnclf.utils.children import stops_with_this_process

# has a test split of its own
BUILT_IN = {"mr": False, "subj": False, "cr": False, "sst5": True, "imdb": True}


def has_test_split(path: str) -> bool:
    """Whether the data at `path` has a test split of its own (its splits read as train.py reads them)."""
    from attnclf.data.loading import load_splits

    return "test" in load_splits(path)


# the keys each dataset's protocol sets, and how to choose them here
PROTOCOL_KEYS = {
    "data.path": "--mr, --subj, --cr, --sst5, --imdb or --data NAME=PATH",
    "data.folds": "--folds K",
    "data.fold": "every fold of --folds",
    "seed": "--seeds",
    "attention": "--attention",
}


def runs(name: str, path: str, args, extra: list[str], own_test: bool) -> tuple[list[str], int]:
    """The `attnclf train` multirun arguments for one dataset, and how many runs it makes."""
    attentions = "attention=" + ",".join(args.attention)
    common = [f"data.path={path}", attentions, "callbacks.rich_progress_bar=null", *extra]
    n = len(args.attention)
    if not own_test:
        folds = args.folds
        return [*common, f"data.folds={folds}", f"data.fold=range({folds})"], n * folds
    return [*common, "seed=" + ",".join(str(s) for s in args.seeds)], n * len(args.seeds)


def first_run_refused(overrides: list[str]) -> str | None:
    """Why the first run of a multirun would be refused (its settings composed and checked, its data read
    as train.py reads it: columns, labels, classes, folds), in one line; None: it starts."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from attnclf.commands.user_errors import composition_error
    from attnclf.data.datamodule import TextDataModule
    from attnclf.errors import AttnclfError
    from attnclf.settings.compose import compose_config
    from attnclf.settings.train import train_settings

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
        first = [
            f"{o.get_key_element()}={next(o.sweep_string_iterator())}" if o.is_sweep_override() else o.input_line
            # each sweep's first value
            for o in parsed
        ]
        # the run folder Hydra would make: nothing is written
        with tempfile.TemporaryDirectory() as where:
            settings = train_settings(compose_config("train", [*first, f"paths.output_dir={where}"]))
        # its encoding cached for the runs
        TextDataModule(settings.data, settings.run.seed).setup("fit")
    except HydraException as e:
        return composition_error(e, "train")
    except AttnclfError as e:
        return str(e)
    return None


def finished(sweep: Path) -> int:
    """The runs of a sweep folder that finished (their metrics.json)."""
    return len(list(sweep.rglob("metrics.json"))) if sweep.is_dir() else 0


class Progress:
    """One line a run finished, over every dataset: k of n, the time so far and an estimate of what is left
    (from the runs finished by this call)."""

    def __init__(self, total: int):
        self.total, self.done, self.ran, self.start = total, 0, 0, time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def skip(self, n: int) -> None:
        self.done += n

    def follow(self, process: subprocess.Popen, sweep: Path, name: str, expected: int) -> int:
        """Wait for a dataset's multirun, saying each run it finishes; its exit status."""
        before = seen = finished(sweep)
        while True:
            running = process.poll() is None
            now = finished(sweep)
            for k in range(seen + 1, now + 1):
                self.done, self.ran = self.done + 1, self.ran + 1
                left = self.elapsed() / self.ran * (self.total - self.done)
                print(
                    f"[{self.done} of {self.total} runs] {name} run {k - before} of {expected} finished; "
                    f"{clock(self.elapsed())} so far, about {clock(left)} left",
                    flush=True,
                )
            seen = max(seen, now)
            if not running:
                return process.returncode
            time.sleep(2)


def clock(seconds: float) -> str:
    """Seconds as h:mm:ss."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


KEYS = Keys(
    "compare-datasets",
    flags={k: f"--{k}" for k in ("mr", "subj", "cr", "sst5", "imdb", "data", "out", "folds", "seeds", "attention")},
    each=frozenset({"data"}),
    free=frozenset({"--data"}),
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="attnclf compare-datasets",
        usage=usage(
            KEYS,
            "[mr=<file>] [imdb=<folder>] ... ['data=[name=path,...]'] [out=<folder>] [folds=10] "
            "['seeds=[1,2,3]'] ['attention=[dot,additive,...]'] [-- key=value ...]",
        ),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name in ("mr", "subj", "cr", "sst5", "imdb"):
        p.add_argument(f"--{name}", help=f"the {name.upper()} data (a file, or a folder with its splits)")
    p.add_argument("--data", action="append", default=[], metavar="NAME=PATH", help="any dataset, by a name of yours")
    p.add_argument("--out", type=Path, default=Path("outputs/compare_datasets"))
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--attention", nargs="+", default=list(COMPARED), help="the mechanisms compared (conf/attention/)")
    return p


def command(argv: list[str] | None = None) -> int:
    p = parser()
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = p.parse_args(as_flags(argv[: argv.index("--")] if "--" in argv else argv, KEYS))
    allowed = package_attentions()
    for name in args.attention:
        if name not in allowed:
            p.error(f"--attention {name!r}; allowed: {', '.join(allowed)}")
    # the protocol's own keys would be replaced by it without a word
    for item in extra:
        key = item.split("=", 1)[0].lstrip("+~")
        if key in PROTOCOL_KEYS:
            p.error(f"-- {item}: compare-datasets sets {key} itself ({PROTOCOL_KEYS[key]})")
    given = {n: getattr(args, n) for n in BUILT_IN if getattr(args, n)}
    # --data's: from its splits
    protocol = {n: BUILT_IN[n] for n in given}
    for item in args.data:
        name, eq, path = item.partition("=")
        if not eq or not name or not path or not name.replace("_", "").replace("-", "").isalnum():
            p.error(f"--data {item!r}: give NAME=PATH, a name of letters, digits, - and _ (e.g. --data trec=trec.csv)")
        if name in given:
            p.error(f"--data {item!r}: {name} is given twice")
        given[name] = path
    if not given:
        p.error("give at least one dataset (--mr, --subj, --cr, --sst5, --imdb, or --data NAME=PATH)")
    if args.folds < 2:
        p.error(f"--folds={args.folds} must be 2 or more")
    for name, path in given.items():
        if not Path(path).expanduser().exists():
            given_as = f"--{name} {path}" if name in BUILT_IN else f"--data {name}={path}"
            p.error(f"{given_as}: does not exist")
    # name: (its multirun's overrides, how many runs it makes)
    plans = {}
    for name, path in given.items():
        own_test = protocol[name] if name in protocol else has_test_split(str(Path(path).expanduser()))
        plans[name] = runs(name, path, args, extra, own_test)
        # once here, not once a run: each would fail alike
        why = first_run_refused(plans[name][0])
        if why:
            print(f"error: {name} ({path}): {why}", file=sys.stderr)
            return 2
    progress = Progress(sum(n for _, n in plans.values()))
    for name, (overrides, expected) in plans.items():
        sweep = args.out.resolve() / name
        done = finished(sweep)
        if done >= expected:
            print(f"{name}: {done} runs already in {sweep}; skipped", flush=True)
            progress.skip(expected)
            continue
        t = time.perf_counter()
        print(f"{name}: {expected} runs -> {sweep}", flush=True)
        cmd = [sys.executable, "-m", "attnclf", "train", "-m", *overrides, f"hydra.sweep.dir={sweep}"]
        code = progress.follow(subprocess.Popen(cmd, **stops_with_this_process()), sweep, name, expected - done)
        print(f"{name}: exit {code} in {time.perf_counter() - t:.0f} s", flush=True)
        if code != 0:
            return code
    print(f"all datasets in {progress.elapsed():.0f} s; the report:", flush=True)
    from attnclf.commands.report import command as report

    return report([str(args.out.resolve())])
