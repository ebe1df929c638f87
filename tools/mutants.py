"""(The team's ../shared/tools/mutants.py with this project's list: its modules' places since the
redesign, and the defects found since.)

Plant known defects in a copy of this project, one at a time, and run its test suite on each (the fast tier,
then, where that passed, the whole suite):
a test suite worth its name fails on every one. Add your own below as you find behaviours no test pins down.

Prints one line per mutant: caught / SURVIVED / n/a (the code it targets has changed: update the list).
Usage (from the project root): python tools/mutants.py . "$(which python)" [NAME...]
(exit 1 if any applicable mutant survived).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MUTANTS = [  # name, file, regex, replacement
    # the team's list (../shared/tools/mutants.py), at the modules' places since the redesign
    (
        "vocab-from-train-and-val",
        "attnclf/data/datamodule.py",
        r"train\.token_counts\(train_rows\)",
        "train.token_counts(np.arange(len(train.labels)))",
    ),
    ("min-freq-ignored", "attnclf/data/text.py", r"counts\[i\] >= min_freq", "counts[i] >= 0"),
    (
        "tokens-per-sec-counts-padding",
        "attnclf/training/callbacks.py",
        r"int\(batch\[1\]\.sum\(\)\)",
        "int(batch[0].numel())",
    ),
    (
        "macro-f1-as-micro",
        "attnclf/inference/evaluate.py",
        r'MulticlassF1Score\(n, average="macro"\)',
        'MulticlassF1Score(n, average="micro")',
    ),
    ("no-schedule", "attnclf/training/module.py", r'if hp\.schedule == "constant":', "if True:"),
    (
        "decay-on-everything",
        "attnclf/training/module.py",
        r'decays = \{n: p\.ndim >= 2 and not n\.startswith\("embed"\)',
        "decays = {n: True",
    ),
    (
        "last-picks-finished-runs",
        "attnclf/training/checkpoint.py",
        r'runs = \[r for r in runs if not \(r / "metrics\.json"\)\.exists\(\)\]',
        "runs = list(runs)",
    ),
    ("tests-last-not-best", "attnclf/training/train.py", r'ckpt_path="best" if best else None', "ckpt_path=None"),
    (
        "mask-not-zeroed",
        "attnclf/models/attention.py",
        r"return torch\.softmax\(scores, dim=-1\)\.masked_fill\(~keep, 0\.0\)",
        "return torch.softmax(scores, dim=-1)",
    ),
    # this project's own: behaviours found since
    ("one-class-trains", "attnclf/data/datamodule.py", r"if len\(classes\) < 2:", "if False:"),
    (
        "nan-in-json",
        "attnclf/utils/jsonfile.py",
        r"if isinstance\(value, float\) and not math\.isfinite\(value\):",
        "if False:",
    ),
    (
        "vectors-key-without-unlabeled",
        "attnclf/data/datamodule.py",
        r"key\.append\(ds\[unlabeled_split\]\._fingerprint\)",
        "pass",
    ),
    (
        "folds-miss-a-class",
        "attnclf/data/datamodule.py",
        r"for c in np\.unique\(labels\):",
        "for c in np.unique(labels)[:1]:",
    ),
    (
        "validation-from-the-test-fold",
        "attnclf/data/datamodule.py",
        r"rows = np\.setdiff1d\(rows, test_rows\)",
        "rows = rows",
    ),
    (
        "trainer-values-unchecked",
        "attnclf/training/checks.py",
        r"    check_process\(cfg\)\n    check_trainer\(cfg\)\n",
        "    check_process(cfg)\n",
    ),
    (
        "predict-drops-columns",
        "attnclf/inference/predict.py",
        r"            \*\*row,\n",
        "",
    ),
    (
        "predicted-prefix-never",
        "attnclf/inference/predict.py",
        r'prefix = "predicted_" if taken & set\(PREDICTED\) else ""',
        'prefix = ""',
    ),
    (
        "auto-batch-ignored",
        "attnclf/data/datamodule.py",
        r"self\._train_batch_size = size = auto_batch_size\(rows\)",
        "self._train_batch_size = size = 64",
    ),
    (
        "auto-epochs-ignored",
        "attnclf/data/vectors.py",
        r'train_settings\["epochs"\] = epochs = auto_epochs\(words\)',
        'train_settings["epochs"] = epochs = 5',
    ),
]

project, python = sys.argv[1], sys.argv[2]
only = set(sys.argv[3:])
survived = 0
env = dict(
    os.environ,
    HF_HUB_OFFLINE="1",
    HF_DATASETS_OFFLINE="1",
    PATH=os.path.dirname(os.path.abspath(python)) + os.pathsep + os.environ.get("PATH", ""),
)  # scripts calling `python` get this one
for name, rel, pattern, new in MUTANTS:
    if only and name not in only:
        continue
    tmp = tempfile.mkdtemp(prefix="mutant.")
    try:
        dst = os.path.join(tmp, "p")
        shutil.copytree(project, dst, ignore=shutil.ignore_patterns(".git", ".venv", "outputs", "__pycache__"))
        path = os.path.join(dst, rel)
        src = open(path).read() if os.path.exists(path) else ""
        if len(re.findall(pattern, src)) != 1:
            print(f"{name}: n/a (pattern not found once in {rel})", flush=True)
            continue
        open(path, "w").write(re.sub(pattern, lambda m, new=new: new, src))
        t = time.time()
        # the fast tier first (most defects fail there in a minute or two), then the whole suite if it passed
        for tier in (["-m", "not slow"], []):
            r = subprocess.run(
                [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tier],
                cwd=dst,
                capture_output=True,
                text=True,
                env=dict(env, PYTHONPATH=dst),
                timeout=1800,
            )
            if r.returncode != 0:
                break
        last = (r.stdout.strip().splitlines() or ["?"])[-1]
        if r.returncode == 0:
            survived += 1
            print(f"{name}: SURVIVED ({last}, {time.time() - t:.0f} s)", flush=True)
        else:
            print(f"{name}: caught ({last}, {time.time() - t:.0f} s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if survived else 0)
