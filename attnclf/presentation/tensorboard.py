"""What goes into TensorBoard as images and text: training's attention maps and confusion matrix
(attnclf/training/callbacks.py) and the faithfulness command's results (attnclf/commands/faithfulness.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attnclf.presentation.figures import attention_heatmap, confusion_figure, importance_figure
from attnclf.presentation.markdown import top_words_marked


def log_confusion(experiment, confusion: np.ndarray, names: list[str], step: int) -> None:
    """`val/confusion_matrix`: rows the true class, columns the predicted one."""
    experiment.add_figure("val/confusion_matrix", confusion_figure(confusion, names), step, close=True)


def log_attention_review(
    experiment, i: int, words: list[str], title: str, rows: dict[str, np.ndarray], step: int, top_k: int, columns: int
) -> None:
    """One validation review: `attention/review_<i>` (heatmap, and the text with its top words in bold) and
    `attention/importance_<i>` (attention, gradient x input and leave-one-out one above the other)."""
    weights = rows["attention"]
    experiment.add_figure(f"attention/review_{i}", attention_heatmap(words, weights, title, columns), step, close=True)
    experiment.add_text(f"attention/review_{i}", f"**{title}**\n\n" + top_words_marked(words, weights, top_k), step)
    about = title.split(" | ", 1)[0] + ": importance of each word for the predicted class"
    experiment.add_figure(f"attention/importance_{i}", importance_figure(words, rows, about, columns), step, close=True)


def write_faithfulness(
    out: Path, r: dict, arrays: dict, fig, reviews: list[tuple[list[str], str, dict]], aopc=None, adversarial=None
) -> None:
    """attnclf faithfulness's TensorBoard events in `out`: its scalars and histograms, the summary figure, and
    a few reviews (words, title, importance rows) shaded by each measure. ERASER's scores go under
    `faithfulness_<split>/` (comprehensiveness and sufficiency per bin, their AOPC, per importance source), and
    with human rationales the plausibility scores (token F1, AUPRC, IOU-F1, per source)."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(out)) as tb:
        a = r["agreement"]
        for name, t in a["kendall_tau"].items():
            tb.add_scalar(f"faithfulness/kendall_tau_{name}", t["mean"], 0)
            tb.add_histogram(f"faithfulness/kendall_tau_{name}", np.nan_to_num(arrays["tau"][name]), 0)
            tb.add_scalar(f"faithfulness/significant_{name}", t["significant"], 0)
        # Jain & Wallace's definition: importance by its size
        for name, t in a["magnitude"].items():
            tb.add_scalar(f"faithfulness/kendall_tau_magnitude_{name}", t["mean"], 0)
            tb.add_scalar(f"faithfulness/significant_magnitude_{name}", t["significant"], 0)
        for name, v in a["top1_same"].items():
            tb.add_scalar(f"faithfulness/top1_same_{name}", v, 0)
        for name, by_k in r["erasure"].items():
            for k, v in by_k.items():
                tb.add_scalar(f"faithfulness/erasure_flipped/{name}_{k}", v["flipped"], 0)
        tb.add_scalar("faithfulness/tokens_to_flip_median", r["tokens_to_flip"]["attention"]["median_tokens"], 0)
        tb.add_scalar("faithfulness/permutation_median_tv", r["permutation"]["median_tv"], 0)
        tb.add_histogram("faithfulness/permutation_tv", arrays["tv"], 0)
        tb.add_scalar("faithfulness/uniform_accuracy_change", r["uniform"]["accuracy_change"], 0)
        tb.add_scalar("faithfulness/conicity", r["states"]["conicity"]["mean"], 0)
        tb.add_scalar("faithfulness/zero_weight_share", r["states"]["zero_weight_share"]["mean"], 0)
        tb.add_figure("faithfulness/summary", fig, 0, close=False)
        # Jain & Wallace's adversarial attention (attnclf faithfulness adversarial=<epsilon>)
        if adversarial is not None:
            adv = r["adversarial"]
            tb.add_scalar("faithfulness/adversarial_median_jsd", adv["median_jsd"], 0)
            tb.add_scalar("faithfulness/adversarial_permuted_median_jsd", adv["permuted_median_jsd"], 0)
            tb.add_histogram("faithfulness/adversarial_jsd", arrays["adversarial"].jsd, 0)
            tb.add_figure("faithfulness/adversarial", adversarial, 0, close=False)
        tag = f"faithfulness_{r['split']}"
        for name, scores in r.get("eraser", {}).get("sources", {}).items():
            for score in ("comprehensiveness", "sufficiency"):
                tb.add_scalar(f"{tag}/aopc_{score}/{name}", scores[f"aopc_{score}"], 0)
                for b, v in scores[score].items():
                    tb.add_scalar(f"{tag}/{score}_{b}/{name}", v, 0)
        if aopc is not None:
            tb.add_figure(f"{tag}/aopc", aopc, 0, close=False)
        for name, scores in r.get("plausibility", {}).get("sources", {}).items():
            for score, v in scores.items():
                tb.add_scalar(f"{tag}/plausibility_{score}/{name}", v, 0)
        for i, (words, title, rows) in enumerate(reviews):
            tb.add_figure(f"faithfulness/review_{i}", importance_figure(words, rows, title), 0, close=True)
