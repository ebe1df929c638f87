"""What one text's decision rests on, beside its attention: the measures `attnclf faithfulness` takes over a
sample, for the one text a user typed.

- |gradient x input| of each word, with the attention weights held fixed (Jain & Wallace's gradient);
- |leave-one-out|: how far p(predicted) moves when the word is deleted;
- Kendall's tau of the attention weights against each, with its p-value (null where undefined: a text of
  one word, or a measure that is the same for every word);
- what flips it: the fewest words, taken in each measure's order, whose deletion changes the decision
  (`measures.tokens_to_flip`, the count `attnclf faithfulness` summarises), searched up to `within` words.
"""

from __future__ import annotations

import numpy as np
import torch

from attnclf.analysis import measures
from attnclf.inference.trained import Prediction, Reading, TrainedClassifier
from attnclf.utils.jsonfile import finite


def prediction_json(name: str, p: Prediction, labels: list[str]) -> dict:
    """A Prediction as the API gives it: class names (`labels`) for the label and each probability."""
    return {
        "model": name,
        "label": p.label_name,
        "prob": p.prob,
        "probs": dict(zip(labels, p.probs, strict=True)),
        "tokens": p.tokens,
        "weights": p.weights,
        "truncated": p.truncated,
    }


# the measures a flip is searched in the order of, as /explain names them
FLIP_ORDERS = ("attention", "gradient", "leave_one_out")


def explain(clf: TrainedClassifier, reading: Reading, within: int = 50) -> tuple[Prediction, dict]:
    """A text's Prediction, and its importance measures, taus and flips (up to `within` words deleted) as the
    API gives them."""
    model, seq = clf.module.model, [reading.ids]
    attr = measures.attributions(model, seq, fixed_weights=True)
    # (the rows of the forward just run, before leave-one-out's forwards replace them)
    rows = weight_rows(model)
    loo = measures.leave_one_out(model, seq, attr.probs)
    gradient, left_out = measures.magnitude(attr.gradient)[0], measures.magnitude(loo)[0]
    weights = attr.weights[0]
    tau_g, p_g = measures.kendall_test([weights], [gradient])
    tau_l, p_l = measures.kendall_test([weights], [left_out])
    pred = clf.prediction(reading, torch.from_numpy(attr.probs[0]), torch.from_numpy(weights))
    scores = (weights, gradient, left_out)
    # (JSON has no NaN: an undefined value is null)
    return pred, finite(
        {
            "gradient": gradient.tolist(),
            "leave_one_out": left_out.tolist(),
            "tau": {"gradient": float(tau_g[0]), "leave_one_out": float(tau_l[0])},
            "tau_p_value": {"gradient": float(p_g[0]), "leave_one_out": float(p_l[0])},
            "rows": rows,
            "flip_within": within,
            "flip": flips(model, reading, attr.probs, dict(zip(FLIP_ORDERS, scores, strict=True)), within),
        }
    )


def flips(model, reading: Reading, probs: np.ndarray, scores: dict, within: int) -> dict:
    """For each measure (`scores`: one value a read word), the fewest words taken in its order (highest
    first) whose deletion flips the decision: {count, words (their places among the read words)}; count null
    where `within` words do not flip it. The three searches run as one (their deletions batched together)."""
    orders = [measures.ranking(np.nan_to_num(v, nan=-np.inf)) for v in scores.values()]
    found = measures.tokens_to_flip(
        model, [reading.ids] * len(orders), np.repeat(probs, len(orders), 0), orders, within=within
    )
    out = {}
    for name, order, count in zip(scores, orders, found, strict=True):
        k = None if np.isnan(count) else int(count)
        out[name] = {"count": k, "words": [] if k is None else sorted(order[:k].tolist())}
    return out


def weight_rows(model) -> list[list[float]] | None:
    """Each head's or hop's row of weights over the words of the text the model's last forward read (the
    weights shown are their mean); None for a mechanism of one row."""
    rows = model.attention.rows
    return None if rows is None else rows[0, :, 0].detach().float().cpu().tolist()


def gradient_taus(clf: TrainedClassifier, readings: list[Reading], batch_tokens: int = 16384):
    """Many texts at once (/browse): their class probabilities (N, C) and each one's tau of the attention
    against |gradient x input| (NaN where undefined)."""
    attr = measures.attributions(clf.module.model, [r.ids for r in readings], batch_tokens, fixed_weights=True)
    return attr.probs, measures.kendall(attr.weights, measures.magnitude(attr.gradient)), np.asarray(attr.pred)
