"""Plausibility: how well an importance score picks the tokens people marked, by ERASER's definitions
(DeYoung et al. 2020, its rationale_benchmark metrics).

- token F1: the top-k tokens by the score, k the review's number of marked tokens, against the marked
  ones; per review (precision = recall = F1 there, as k is the rationale's length), averaged.
- AUPRC: the area under the precision-recall curve of the score against the marked tokens (the curve at
  each distinct score, from recall 0 at precision 1, trapezoids), per review, averaged.
- IOU-F1: the top-k tokens' contiguous runs as predicted spans; a predicted span matches where its
  intersection over union with some marked span is >= 0.5; precision = matches / predicted spans, recall
  = matches / marked spans (ERASER's partial_match_score), micro (counts summed over reviews) and macro
  (per review, averaged).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torchmetrics.functional.classification import binary_precision_recall_curve
from torchmetrics.utilities.compute import auc

from attnclf.analysis.measures import ranking

IOU_THRESHOLD = 0.5


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """A bool a token: among the k highest scores (ties keep reading order)."""
    picked = np.zeros(len(scores), dtype=bool)
    picked[ranking(scores)[:k]] = True
    return picked


def runs(picked: np.ndarray) -> list[tuple[int, int]]:
    """The contiguous runs of True, as (start, end) with end exclusive."""
    edges = np.diff(np.concatenate([[0], picked.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def auprc(scores: np.ndarray, gold: np.ndarray) -> float:
    """Area under the precision-recall curve (torchmetrics' curve: a point at each distinct score, and
    recall 0 at precision 1). The scores are ranked first (ties kept): torchmetrics squashes scores outside
    [0, 1] with a sigmoid, which would tie large ones."""
    rank = np.unique(scores, return_inverse=True)[1].reshape(-1)
    preds = torch.as_tensor((rank + 1) / (rank.max() + 1), dtype=torch.float64)
    precision, recall, _ = binary_precision_recall_curve(preds, torch.as_tensor(gold, dtype=torch.long))
    # the curve in its own order: recall falls
    return float(auc(recall, precision))


def _f1(p: float, r: float) -> float:
    return 0.0 if p == 0 or r == 0 else 2 * p * r / (p + r)


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def plausibility(
    scores: Sequence[np.ndarray], gold: Sequence[np.ndarray], spans: Sequence[list[tuple[int, int]]]
) -> dict:
    """One importance source's token F1, AUPRC and IOU-F1 over reviews with at least one marked token
    (`gold`: a bool a token; `spans`: the marked spans in the same tokens)."""
    f1s, areas, matched, predicted, marked, macro_p, macro_r = [], [], 0, 0, 0, [], []
    for s, g, want in zip(scores, gold, spans, strict=True):
        k = int(g.sum())
        picked = top_k(np.asarray(s, dtype=float), k)
        f1s.append(float((picked & g).sum() / k))
        areas.append(auprc(np.asarray(s, dtype=float), g))
        got = runs(picked)
        hits = sum(max(_iou(p, t) for t in want) >= IOU_THRESHOLD for p in got)
        matched, predicted, marked = matched + hits, predicted + len(got), marked + len(want)
        macro_p.append(hits / len(got))
        macro_r.append(hits / len(want))
    if not f1s:
        return {"token_f1": float("nan"), "auprc": float("nan"), "iou_f1": float("nan"), "iou_f1_micro": float("nan")}
    return {
        "token_f1": float(np.mean(f1s)),
        "auprc": float(np.mean(areas)),
        # macro: ERASER's per-review means
        "iou_f1": _f1(float(np.mean(macro_p)), float(np.mean(macro_r))),
        "iou_f1_micro": _f1(matched / predicted, matched / marked),
    }
