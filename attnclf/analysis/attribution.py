"""Importance sources from Captum (captum.ai), beside the attention, gradient x input and leave-one-out of
attnclf.analysis.measures: each token's importance for the predicted class, signed (positive: it supports it).

- `integrated_gradients`: Sundararajan et al. (2017) on the embedding layer: the gradient of p(predicted)
  integrated along the straight path from an all-zero embedding (the padding's) to the review's (Captum's
  Gauss-Legendre rule, 50 points), times the embedding, summed over its dims. The tokens' scores add up to
  p(predicted | review) - p(predicted | zeros).
- `feature_ablation`: a perturbation source: the drop in p(predicted) when one token's embedding is replaced by
  zeros (leave-one-out deletes the token instead, shortening the review).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnclf.analysis.measures import pad, weights_and_logits
from attnclf.data.sampling import chunks
from attnclf.models.classifier import ClassifierNet

# Captum's default number of points on the path
IG_STEPS = 50


def _probabilities_of(model: ClassifierNet):
    """The function Captum attributes: embedded reviews (B, T, E) and their lengths -> probabilities (B, C)."""

    def forward(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return torch.softmax(weights_and_logits(model, x, lengths)[1].float(), -1)

    return forward


def importance(
    model: ClassifierNet, seqs: Sequence[np.ndarray], source: str, pred: np.ndarray, batch_tokens: int = 8192
) -> list[np.ndarray]:
    """Each review's token scores from Captum's `source` (integrated_gradients or feature_ablation: the settings'
    ATTRIBUTION_SOURCES) for its predicted class `pred` (N,)."""
    from captum.attr import FeatureAblation, IntegratedGradients

    forward = _probabilities_of(model)
    method = IntegratedGradients(forward) if source == "integrated_gradients" else FeatureAblation(forward)
    device = next(model.parameters()).device
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    out: list = [None] * len(seqs)
    # integrated gradients runs IG_STEPS points of each review at once: batches a share of the usual size
    size = max(1, batch_tokens // IG_STEPS) if source == "integrated_gradients" else batch_tokens
    for group in chunks(lengths, size):
        ids, lens = pad([seqs[i] for i in group], device)
        with torch.no_grad():
            x = model.embed(ids)  # (B, T, E)
        target = torch.as_tensor(pred[group], device=device)
        if source == "integrated_gradients":
            scores = method.attribute(
                x, baselines=torch.zeros_like(x), target=target, additional_forward_args=(lens,), n_steps=IG_STEPS
            )
        # one token's embedding at a time (all its dims together), zeros in its place
        else:
            mask = torch.arange(x.size(1), device=device).view(1, -1, 1).expand_as(x)
            scores = method.attribute(
                x, baselines=0.0, target=target, additional_forward_args=(lens,), feature_mask=mask
            )
            # each dim of a token is given the token's whole change
            scores = scores / x.size(-1)
        scores = scores.sum(-1).detach().cpu().numpy()  # (B, T)
        for row, i in enumerate(group):
            out[i] = scores[row, : lengths[i]].astype(np.float64)
    return out
