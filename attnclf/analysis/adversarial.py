"""Jain & Wallace's adversarial attention (2019, "Attention is not Explanation", their section on adversarial
attention; code: github.com/successar/AttentionExplanation): for each review, attention distributions as
different as possible from the model's own that leave its output where it was.

The encoder's outputs stay as they are; only the weights that pool them change. `candidates` distributions a
review are searched at once by gradient descent on their logits (Adam with AMSGrad, as theirs), each pushed
away from the model's weights (Jensen-Shannon divergence up), penalised where the output moves more than
`epsilon` (total variation: for two classes, |p_new(positive) - p(positive)|, their output difference), and
pushed apart from one another. A review's figure is the largest JSD of a candidate within epsilon (0, the
model's own weights, where none is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnclf.analysis.measures import encoded, probs_under, shuffled_weights
from attnclf.models.attention import masked_softmax
from attnclf.models.classifier import ClassifierNet

# their search: 5 candidates a review, 500 steps of Adam (AMSGrad) at 0.01, a penalty of 500 on the output moved
# past epsilon, candidates started from uniform weights plus noise of sd 3 on the logits
CANDIDATES, STEPS, LR, PENALTY, NOISE = 5, 500, 0.01, 500.0, 3.0


def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) (nats) over the last dim, as their code computes it (logs of p + 1e-10): padding, where p is 0,
    adds nothing."""
    return (p * ((p + 1e-10).log() - (q + 1e-10).log())).sum(-1)


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (nats, in [0, ln 2]) between distributions over the last dim, as theirs
    (probabilities clamped to [0, 1])."""
    p, q = p.clamp(0, 1), q.clamp(0, 1)
    m = 0.5 * (p + q)
    return 0.5 * (kl(p, m) + kl(q, m))


@dataclass
class Adversaries:
    # (N,) the largest JSD from the model's weights of a candidate within epsilon
    jsd: np.ndarray
    # (N,) that candidate's output change (total variation; 0 where none was within epsilon)
    tv: np.ndarray
    # (N,) whether any candidate stayed within epsilon
    found: np.ndarray
    # (N,) JSD of the model's weights shuffled once among the real tokens: a baseline
    permuted_jsd: np.ndarray
    # the chosen candidate's weights (the model's own where none was found)
    weights: list[np.ndarray]


def _search(model, out, w, mask, epsilon: float, candidates: int, steps: int, gen: torch.Generator):
    """The candidates' weights (K, B, T) and their output change (K, B) after the search, for one batch."""
    p0 = probs_under(model, out, w.unsqueeze(0))[0]  # (B, C)
    uniform = mask.float() / mask.sum(-1, keepdim=True)  # (B, T)
    noise = torch.randn((candidates, *w.shape), generator=gen).to(w.device) * NOISE
    logits = (uniform.clamp_min(1e-12).log().unsqueeze(0) + noise).requires_grad_(True)  # (K, B, T)
    opt = torch.optim.Adam([logits], lr=LR, amsgrad=True)
    for step in range(steps + 1):
        a = _weights(logits, mask)  # (K, B, T)
        tv = 0.5 * (probs_under(model, out, a) - p0).abs().sum(-1)  # (K, B)
        if step == steps:
            return a.detach(), tv.detach()
        away = jsd(a, w.unsqueeze(0))  # (K, B)
        # (K, K, B): candidates kept apart from one another
        apart = jsd(a.unsqueeze(1), a.unsqueeze(0))
        loss = (-away + PENALTY * torch.relu(tv - epsilon)).sum() - apart.sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def _weights(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax of logits (K, B, T) over each review's real tokens (mask (B, T)); padding weighs 0."""
    return masked_softmax(logits.transpose(0, 1), mask).transpose(0, 1)


def adversarial_attention(
    model: ClassifierNet,
    seqs: Sequence[np.ndarray],
    epsilon: float = 0.01,
    candidates: int = CANDIDATES,
    steps: int = STEPS,
    seed: int = 0,
    batch_tokens: int = 8192,
) -> Adversaries:
    """Per review, the most different attention (largest JSD from the model's) found whose output stays within
    `epsilon` of the model's (total variation), with a random permutation of the model's weights beside it."""
    gen = torch.Generator().manual_seed(seed)
    n = len(seqs)
    best, moved, found, permuted = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n)
    weights: list = [None] * n
    frozen = [p.requires_grad for p in model.parameters()]
    # only the candidates' logits are searched
    model.requires_grad_(False)
    try:
        for group, out, w, mask in encoded(model, seqs, batch_tokens):
            with torch.enable_grad():
                a, tv = _search(model, out, w, mask, epsilon, candidates, steps, gen)
            # (K, B): out of bounds never chosen
            away = jsd(a, w.unsqueeze(0)).masked_fill(tv > epsilon, -1.0)
            pick = away.argmax(0)  # (B,)
            cols = torch.arange(len(group))
            ok = (away[pick, cols] >= 0).cpu().numpy()
            chosen = torch.where(torch.as_tensor(ok).unsqueeze(-1), a[pick, cols], w)  # (B, T)
            best[group] = np.where(ok, away[pick, cols].cpu().numpy(), 0.0)
            moved[group] = np.where(ok, tv[pick, cols].cpu().numpy(), 0.0)
            found[group] = ok
            permuted[group] = jsd(shuffled_weights(w, mask, 1, gen)[0], w).cpu().numpy()
            for row, i in enumerate(group):
                weights[i] = chosen[row, : len(seqs[i])].cpu().numpy().astype(np.float64)
    finally:
        for p, wanted in zip(model.parameters(), frozen, strict=True):
            p.requires_grad_(wanted)
    return Adversaries(best, moved, found, permuted, weights)
