"""A study that runs until its comparisons are settled, or its budget is spent.

    attnclf study 'attention=[dot,additive,...]' 'data=[imdb=/path/to/imdb,mr=/path/to/mr.csv,...]' budget=<runs>
        [out=outputs/study] [first=3] [looks=5] [folds=10] [rope=0.2] [-- key=value ...]

Every mechanism of `attention` on every dataset of `data`, each by its protocol (a test split of its own:
seeds 1, 2, ...; none: `folds`-fold cross-validation, one fold a replicate, then the folds of further seeds);
`sst_binary` names binary SST in Jain & Wallace's protocol (an SST-5 folder). A class of your own is
`attention=[dot,my_attention.Cosine]`. Overrides after `--` go to every run (`-- num_threads=1`,
`hydra/launcher=slurm`: the runs go through Hydra's launcher).

The first step gives every mechanism `first` replicates on every dataset. Then, at each look (docs/usage.md, "How
sure is a comparison"), every pair of mechanisms on a dataset is judged; where some pair is not settled, the study
adds replicates to its two mechanisms up to the next look, on the dataset whose next look is the lowest first, the
cheapest of those (seconds a run so far) first, and says what it added and why. It stops when every pair is
settled, equivalent, out of reach or past its last look, or when the budget (runs in all, those already in `out`
counted) would be exceeded. A stopped study, run again with the same settings, continues: runs already in `out`
are not run again. At the end, `attnclf report out` with every dataset's verdicts and the comparison across
datasets.
"""

from __future__ import annotations

import sys


def command(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in (argv[: argv.index("--")] if "--" in argv else argv)):
        print(__doc__)
        return 0
    from attnclf.settings.study import parse

    s = parse(argv)
    from attnclf.commands.study_runs import run_study

    return run_study(s)
