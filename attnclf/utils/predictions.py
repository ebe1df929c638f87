"""A run's per-example test predictions, as one small Parquet file in its folder: written by `attnclf train`
(its best checkpoint's test) and `attnclf eval`, read by `attnclf report` for the example-level comparisons.

One row per example evaluated, in the order of the evaluated rows:
- `position`: the example's place among the rows evaluated (the test split's rows; under cross-validation the
  fold's held-out rows), 0 to n-1;
- `row`: its row in the split it was read from (the test split, or the training split a test share or a fold
  was carved from): two runs classified the same examples when their `row` columns are equal;
- `label`: the gold class; `predicted`: the class of highest probability;
- `prob_0` ... `prob_<C-1>`: the class probabilities.
The file's metadata holds the class names, the split, and the data it came from.

Light (numpy and pyarrow, which `datasets` brings): the report reads these without torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# in the run folder: the test split's predictions of the run's best checkpoint (train), or of `attnclf eval`
PREDICTIONS = "predictions_test.parquet"
# the file's metadata key
META = b"attnclf"


def predictions_name(split: str, quantize: str = "none") -> str:
    """The file a run folder keeps a split's predictions in: predictions_<split>.parquet (int8:
    predictions_<split>_int8.parquet, apart from the float model's)."""
    return f"predictions_{split}{'' if quantize == 'none' else '_' + quantize}.parquet"


@dataclass
class Predictions:
    """One run's predictions over the rows it evaluated (`rows`, `labels`, `probs` aligned: (n,), (n,), (n, C))."""

    rows: np.ndarray
    labels: np.ndarray
    probs: np.ndarray
    names: list[str]
    split: str = "test"
    data: str = ""
    # (n,) the class predicted (None: the most probable)
    predicted: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.predicted is None:
            self.predicted = np.asarray(self.probs).argmax(1)

    @property
    def correct(self) -> np.ndarray:
        """(n,) bool: each example classified right."""
        return self.predicted == self.labels

    def same_examples(self, other: Predictions) -> bool:
        """Whether both classified the same examples in the same order, with the same gold labels."""
        return np.array_equal(self.rows, other.rows) and np.array_equal(self.labels, other.labels)


def write_predictions(path: Path, p: Predictions) -> None:
    """`p` as Parquet at `path` (written beside and renamed into place: a kill never leaves half a file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(p.rows)
    columns = {
        "position": pa.array(np.arange(n, dtype=np.int64)),
        "row": pa.array(np.asarray(p.rows, dtype=np.int64)),
        "label": pa.array(np.asarray(p.labels, dtype=np.int64)),
        "predicted": pa.array(p.predicted.astype(np.int64)),
    }
    for c in range(p.probs.shape[1]):
        columns[f"prob_{c}"] = pa.array(np.asarray(p.probs[:, c], dtype=np.float32))
    meta = {"labels": list(p.names), "split": p.split, "data": p.data}
    table = pa.table(columns).replace_schema_metadata({META: json.dumps(meta).encode()})
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)


def read_predictions(path: Path) -> Predictions:
    """A predictions file as written by write_predictions."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = json.loads((table.schema.metadata or {}).get(META, b"{}"))
    names = meta.get("labels") or []
    probs = np.stack([table.column(f"prob_{c}").to_numpy() for c in range(len(names))], axis=1)
    return Predictions(
        rows=table.column("row").to_numpy(),
        labels=table.column("label").to_numpy(),
        probs=probs.astype(np.float64),
        names=names,
        split=meta.get("split", ""),
        data=meta.get("data", ""),
        predicted=table.column("predicted").to_numpy(),
    )
