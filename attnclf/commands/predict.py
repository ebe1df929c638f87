"""`predict(args)`: label, probability and top-weighted words for new reviews.

    attnclf predict ckpt=<path> text="a wonderful film"
    attnclf predict ckpt=<path> input=reviews.txt|.csv|.jsonl|.parquet [output=out.csv|.jsonl] [html=out.html]

Arguments are key=value, taken literally (a review may hold any character, so
they are not parsed as Hydra overrides).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from attnclf.errors import AttnclfError
from attnclf.settings.run import check_device, check_quantize
from attnclf.utils.checks import first_few
from attnclf.utils.files import check_writable_file, write_atomic, write_text_atomic
from attnclf.utils.jsonfile import dumps
from attnclf.utils.threads import torch_threads

if TYPE_CHECKING:
    from attnclf.inference.trained import Prediction

HELP = """usage: attnclf predict ckpt=<.ckpt or run folder> (text="a review" | input=<file>) [key=value ...]

  ckpt=PATH        a checkpoint, or a run folder (its best checkpoint)
  text=REVIEW      one review, taken literally
  input=FILE       .txt (one review per line; blank lines are skipped), or the text column of .csv, .jsonl, .parquet
  column=NAME      the text column of input= (default: text)
  label_column=NAME  the true label's column of input=, shown on the html= page where rows have it (default: label)
  output=FILE      write label, probability and top words to .csv or .jsonl
  html=FILE        the reviews with their words shaded by attention
  top_k=N          top-weighted words shown (default 5)
  batch_size=N     reviews per batch (default 64)
  device=DEVICE    cpu (default) or cuda
  num_threads=N    torch CPU threads (default: PyTorch's)
  quantize=int8    the recurrent and output layers in int8 (CPU; default: none)"""


def read_rows(path: Path, column: str = "text") -> tuple[list[str], list[dict]]:
    """(reviews, rows) from a file: .txt one review per line; .csv / .jsonl / .parquet the `column` of each
    row, and each row's own columns (an id, say), which the output keeps so that it joins back."""
    if not path.is_file():
        raise AttnclfError(f"input file not found: {path}")
    suffix = path.suffix.lower()
    if suffix not in PREDICT_INPUTS:
        raise AttnclfError(f"input={path}: unknown file type {suffix!r}; allowed: {', '.join(PREDICT_INPUTS)}")
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as e:
            raise AttnclfError(f"{path} is not a readable Parquet file: {e}") from e
        columns, records = table.column_names, table.to_pylist()
    else:
        from attnclf.data.loading import decode_utf8

        text = decode_utf8(path.read_bytes(), path)
        # one review per line; a blank line is no review
        if suffix == ".txt":
            lines = text.splitlines()
            kept = [line for line in lines if line.strip()]
            if len(kept) < len(lines):
                print(f"{path}: skipped {len(lines) - len(kept)} blank line(s)", file=sys.stderr)
            columns, records = [column], [{column: line} for line in kept]
        elif suffix == ".csv":
            reader = csv.DictReader(io.StringIO(text))
            records = list(reader)
            columns = reader.fieldnames or []
        else:  # .jsonl
            records = []
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise AttnclfError(f"{path}: line {n} is not JSON: {e.msg}") from e
            if not all(isinstance(r, dict) for r in records):
                raise AttnclfError(f"{path}: every line must be a JSON object with a {column!r} key")
            columns = sorted({k for r in records for k in r})
            lacking = [n for n, r in enumerate(records, 1) if column not in r]
            # some rows have it: name those that do not
            if lacking and len(lacking) < len(records):
                raise AttnclfError(
                    f"{path}: row(s) {first_few(lacking)} have no {column!r} key (the other rows "
                    "have it); give every row one"
                )
    if not records:
        raise AttnclfError(f"input={path} holds no review to classify (no rows)")
    if column not in columns:
        raise AttnclfError(f"{path} has no {column!r} column; columns found: {columns}")
    texts = ["" if r[column] is None else str(r[column]) for r in records]
    return texts, records


# the columns attnclf predict adds to each input row
PREDICTED = ("label", "prob", "top_words")


def write_output(path: Path, rows: list[dict], preds: list[Prediction], top_k: int) -> None:
    """Each input row with its prediction added: label, prob, top_words (predicted_label, predicted_prob,
    predicted_top_words where the input already has a column of one of those names, such as a gold label)."""
    # checked with the settings, before the work: PredictConfig
    suffix = path.suffix.lower()
    taken = set().union(*(r.keys() for r in rows))
    # all three, so that they read as one group
    prefix = "predicted_" if taken & set(PREDICTED) else ""
    names = {k: prefix + k for k in PREDICTED}
    out = [
        {
            **row,
            names["label"]: p.label_name,
            names["prob"]: round(p.prob, 6),
            names["top_words"]: " ".join(w for w, _ in p.top_words(top_k)),
        }
        for row, p in zip(rows, preds, strict=True)
    ]

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            if suffix == ".csv":
                writer = csv.DictWriter(f, fieldnames=list(out[0]))
                writer.writeheader()
                writer.writerows(out)
            else:
                f.writelines(dumps(r, ensure_ascii=False, default=str) + "\n" for r in out)

    write_atomic(path, write)


def predict(argv: list[str]) -> list[Prediction]:
    if any(a in ("-h", "--help") for a in argv):
        print(HELP)
        raise SystemExit(0)
    # the files to write too are checked before any work, not after it
    args = predict_settings(argv)
    with torch_threads(args.num_threads):
        return predict_as_set(args)


def predict_as_set(args: PredictConfig) -> list[Prediction]:
    """predict() with its arguments read and checked."""
    # (the model's imports here: the arguments are read and refused without torch)
    from attnclf.inference.trained import TrainedClassifier, check_not_empty
    from attnclf.presentation.html import predictions_page
    from attnclf.training.checkpoint import best_checkpoint

    if args.text is not None:
        texts, rows = [args.text], [{"text": args.text}]
    else:
        texts, rows = read_rows(Path(args.input), args.column)
        check_not_empty(texts, f"input={args.input}: the {args.column!r} of rows", first=1)
    clf = TrainedClassifier.from_checkpoint(best_checkpoint(args.ckpt), args.device, args.quantize)
    preds = clf.predict(texts, batch_size=args.batch_size)
    cut = [i + 1 for i, p in enumerate(preds) if p.truncated]
    # as the run's test read them: said, not silent
    if cut:
        print(
            f"{len(cut)} review(s) longer than the run reads ({clf.max_length} tokens, {clf.truncation}) were "
            f"read in part: {first_few(f'#{i}' for i in cut)}",
            file=sys.stderr,
        )
    for t, p in zip(texts, preds, strict=True):
        top = ", ".join(f"{w} {v:.2f}" for w, v in p.top_words(args.top_k))
        preview = " ".join(t.split())[:70]
        print(f"{p.label_name}\t{p.prob:.3f}\t{preview!r}\ttop: {top}")
    if args.output is not None:
        write_output(Path(args.output), rows, preds, args.top_k)
        print(f"predictions written to {args.output}", file=sys.stderr)
    if args.html is not None:
        about = f"{clf.run.name}: {clf.module.hparams.attention} attention ({best_checkpoint(args.ckpt)})"
        if not Path(args.html).parent.exists():
            print(f"html={args.html}: made its folder {Path(args.html).parent}", file=sys.stderr)
        gold = [r.get(args.label_column) for r in rows]
        # its folder made where missing
        write_text_atomic(args.html, predictions_page(preds, about, gold))
        print(f"attention page written to {args.html}", file=sys.stderr)
    return preds


PREDICT_INPUTS = (".txt", ".csv", ".jsonl", ".parquet")


PREDICT_OUTPUTS = (".csv", ".jsonl")


@dataclass
class PredictConfig:
    """attnclf predict's key=value arguments (taken literally: a review may hold any character)."""

    ckpt: str | None = None
    text: str | None = None
    input: str | None = None
    output: str | None = None
    html: str | None = None
    batch_size: int = 64
    top_k: int = 5
    device: str = "cpu"
    column: str = "text"
    # the true label's column of input=, shown on the html= page where present
    label_column: str = "label"
    # torch CPU threads, as train.py's; None: PyTorch's default
    num_threads: int | None = None
    # none, or int8: the encoder's recurrent layers and the output layer in int8 (CPU)
    quantize: str = "none"

    def check(self) -> None:
        if self.ckpt is None:
            raise AttnclfError("give the checkpoint: ckpt=<path to .ckpt>")
        if (self.text is None) == (self.input is None):
            raise AttnclfError('give exactly one of text="a review" or input=<file>')
        if self.text is not None and not self.text.strip():
            raise AttnclfError('text= is empty; give a review: text="a wonderful film"')
        if self.input is not None and Path(self.input).is_dir():
            raise AttnclfError(f"input={self.input} is a folder; give a file ({', '.join(PREDICT_INPUTS)})")
        # the files to write are checked before any work, not after it
        if self.output is not None:
            if Path(self.output).is_dir():
                raise AttnclfError(f"output={self.output} is a folder; give a file ({', '.join(PREDICT_OUTPUTS)})")
            suffix = Path(self.output).suffix.lower()
            if suffix not in PREDICT_OUTPUTS:
                raise AttnclfError(
                    f"output={self.output}: unknown file type {suffix!r}; allowed: {', '.join(PREDICT_OUTPUTS)}"
                )
            check_writable_file("output", self.output)
        if self.html is not None:
            check_writable_file("html", self.html)
        check_device(self.device)
        check_quantize(self.quantize, self.device)


def predict_settings(argv: list[str]) -> PredictConfig:
    """attnclf predict's arguments, key=value each, as a checked PredictConfig. The one command not read through
    Hydra and typed(): a review is taken as written, and Hydra's override grammar refuses quotes and brackets
    ("it's great (really)") while OmegaConf would resolve "${...}" in it. The numbers are checked here instead,
    as they were given."""
    keys = [f.name for f in fields(PredictConfig)]
    args: dict = {}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq or key not in keys:
            raise AttnclfError(f"unknown argument {a!r}; give key=value with key one of: {', '.join(sorted(keys))}")
        at = next((i for i, ch in enumerate(value) if "\udc80" <= ch <= "\udcff"), None)
        # sys.argv holds bytes that are not UTF-8 as surrogate escapes
        if at is not None:
            raise AttnclfError(f"{key}= holds bytes that are not UTF-8 (at character {at + 1}); give UTF-8 text")
        args[key] = value
    for key in ("batch_size", "top_k", "num_threads"):
        if key in args:
            if not args[key].isdigit() or int(args[key]) <= 0:
                raise AttnclfError(f"{key}={args[key]!r} must be a positive integer")
            args[key] = int(args[key])
    config = PredictConfig(**args)
    config.check()
    return config


# what `attnclf predict key=value ...` calls with its arguments (attnclf/commands/__init__.py)
command = predict
