"""Regularisers that perturb the embedded review while the classifier trains (Miyato et al. 2017,
"Adversarial Training Methods for Semi-Supervised Text Classification").

- adversarial: also fit each labelled review moved a small step, along the loss's gradient, in the
  direction that hurts it most;
- virtual_adversarial: on unlabeled reviews, keep the prediction where a small step (found by one power
  iteration) would change it most. It needs no labels, so it learns from IMDb's 50,000 unlabeled reviews.

The step's size is `epsilon` times the norm of the review's own embeddings (over its real tokens). The paper
normalises the embedding and takes an absolute size (5.0); a size relative to the embeddings likewise stops
the model from outgrowing a fixed perturbation by scaling its embedding up, without changing the network.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnclf.models.classifier import real_tokens as model_real_tokens


def real_tokens(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, T, 1) mask of the real tokens of embedded reviews x (B, T, E): the model's own, to scale with."""
    return model_real_tokens(x, lengths).unsqueeze(-1)


def scaled_direction(v: torch.Tensor, mask: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """v (B, T, E) on the real tokens only, scaled to norm `size` (B, 1, 1) per review."""
    v = v * mask
    return size * v / v.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, 1, 1)


def embedding_norm(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The norm of each review's embeddings over its real tokens, (B, 1, 1), as a constant."""
    return (x.detach() * mask).flatten(1).norm(dim=1).view(-1, 1, 1)


def adversarial_losses(
    model,
    ids: torch.Tensor,
    lengths: torch.Tensor,
    host: torch.Tensor | None,
    y: torch.Tensor,
    epsilon: float,
    scale: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits, cross-entropy, adversarial cross-entropy, stand-in) of labelled reviews ids (B, T).

    The adversarial cross-entropy is that of the embedded reviews moved by epsilon along the gradient of the
    cross-entropy. That gradient comes from one backward that also gives the cross-entropy's gradients of the
    parameters, so the caller need not run it again: the stand-in is a scalar (its value means nothing) whose
    gradient is those; the caller backpropagates stand-in + weight x adversarial cross-entropy. (A backward
    for the input's gradient alone would cost the concurrent GRU kernel a full one all the same.)

    `scale`: the loss scale of float16 mixed precision (the trainer's GradScaler), if any. This backward
    happens outside the scaler, so it scales the loss itself (small float16 gradients would otherwise
    underflow to zero) and divides the parameters' gradients back; the outer backward scales them again.
    `weight`: the cross-entropy's weight per class (C,), or None.
    """
    x = model.embed(ids)  # (B, T, E)
    if not x.requires_grad:  # (a frozen embedding)
        x.requires_grad_()
    logits, _ = model.from_embeddings(x, lengths, host)
    loss = F.cross_entropy(logits, y, weight=weight)
    params = [p for p in model.parameters() if p.requires_grad]
    grad, *grads = torch.autograd.grad(loss if scale is None else loss * scale, [x, *params], allow_unused=True)
    # x's gradient only gives a direction: its scale does not matter
    if scale is not None:
        grads = [None if g is None else g / scale for g in grads]
    mask = real_tokens(x, lengths)
    # (B, T, E), a constant
    r = scaled_direction(grad, mask, epsilon * embedding_norm(x, mask))
    # embedded again: that graph is spent
    moved, _ = model.from_embeddings(model.embed(ids) + r, lengths, host)
    stand_in = sum((p * g).sum() for p, g in zip(params, grads, strict=True) if g is not None)
    return logits.detach(), loss.detach(), F.cross_entropy(moved, y, weight=weight), stand_in


def kl(p_log: torch.Tensor, q_log: torch.Tensor) -> torch.Tensor:
    """KL(p || q) per review, averaged, from log-probabilities (B, C)."""
    return F.kl_div(q_log, p_log, log_target=True, reduction="batchmean")


def virtual_adversarial_loss(
    model, ids: torch.Tensor, lengths: torch.Tensor, host: torch.Tensor | None, epsilon: float, xi: float
) -> torch.Tensor:
    """KL between the model's prediction on reviews `ids` (B, T) (no labels needed) and on the same reviews
    moved by epsilon in the direction that changes it most: one power iteration from a random direction of
    relative size xi, as in the paper."""
    x = model.embed(ids)  # (B, T, E)
    mask = real_tokens(x, lengths)
    size = embedding_norm(x, mask)
    # the target: not pushed towards the perturbed prediction
    with torch.no_grad():
        p_log = F.log_softmax(model.from_embeddings(x, lengths, host)[0].float(), -1)  # (B, C)
    d = scaled_direction(torch.randn_like(x), mask, xi * size).requires_grad_()
    q_log = F.log_softmax(model.from_embeddings(x.detach() + d, lengths, host)[0].float(), -1)
    (grad,) = torch.autograd.grad(kl(p_log, q_log), d)
    r = scaled_direction(grad, mask, epsilon * size)
    q_log = F.log_softmax(model.from_embeddings(x + r, lengths, host)[0].float(), -1)
    return kl(p_log, q_log)
