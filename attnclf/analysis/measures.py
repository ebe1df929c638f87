"""Is the attention an explanation? Faithfulness measures of a classifier's attention weights.

Each measure runs on a list of reviews (token id arrays, as the model reads them) and an
ClassifierNet in eval mode. Every forward pass is batched: reviews (or their variants
with tokens removed) of similar length go together, up to `batch_tokens` tokens a batch.

- `attributions`: the attention weights, the predicted class and its probability, and
  gradient x input: d p(predicted) / d embedding . embedding, summed over the embedding dim;
  with `fixed_weights`, the same with the attention weights held fixed (Jain & Wallace's gradient).
- `leave_one_out`: the drop in p(predicted) when each token is removed in turn.
- `erasure`: remove the top-k tokens by a ranking, count decisions flipped.
- `comprehensiveness_sufficiency`: ERASER's scores: p(predicted) lost when a ranking's top k% of tokens is
  deleted, and when only they are kept, over ERASER's bins, and their AOPC.
- `tokens_to_flip`: how many tokens of a ranking must be removed, in its order, before the decision flips.
- `permutation`: shuffle the weights among a review's real tokens; how far the output moves.
- `uniform`: every real token the same weight.
- `js_distance`: Jensen-Shannon distance between two sets of weights on the same reviews.

Importance is signed throughout: how much a token supports the predicted class (attention is
>= 0; a token whose removal raises p(predicted) gets a negative LOO score). `magnitude` turns a
signed score into Jain & Wallace's (2019): how much the token moves the output, either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial.distance import jensenshannon
from scipy.stats import kendalltau, spearmanr

from attnclf.data.dataset import collate
from attnclf.data.sampling import chunks
from attnclf.models.classifier import ClassifierNet
from attnclf.models.deletions import each_deleted, shares_states
from attnclf.models.states import conicity

RANKINGS = ("attention", "gradient", "loo", "random")

# leave_one_out: reviews of at least this many tokens read with their states shared among their deletions
# (attnclf/models/deletions.py): on CPU, 2 threads, 0.6-0.9x as fast below 100 tokens, 1.15-1.7x from 100 to
# 1,000 (scripts/bench_loo.py; docs/performance.md)
SHARED_FROM = 100


def pad(seqs: Sequence[np.ndarray], device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Token id arrays -> ids (B, T) padded as the loaders pad them (attnclf.data.collate), lengths (B,)."""
    ids, lengths, _ = collate([(s, 0) for s in seqs])
    return ids.to(device), lengths


def weights_and_logits(model: ClassifierNet, x: torch.Tensor, lengths: torch.Tensor, fixed: bool = False):
    """Embedded reviews -> attention weights (B, T), logits (B, C): the pooled sum through model.pool.
    `fixed`: the weights enter the sum as constants (no gradient flows through them)."""
    out, final, mask = model.encode(x, lengths, lengths)
    _, w = model.attention(final.unsqueeze(1), out, out, mask)  # (B, 1, T)
    w = w.squeeze(1)
    return w, model.classify(model.pool(out, w.detach() if fixed else w)), out, mask


@torch.no_grad()
def probabilities(model: ClassifierNet, seqs: Sequence[np.ndarray], batch_tokens: int = 32768) -> np.ndarray:
    """Class probabilities (N, C) of each review."""
    device = next(model.parameters()).device
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    probs = np.empty((len(seqs), model.fc.out_features), dtype=np.float64)
    for group in chunks(lengths, batch_tokens):
        ids, lens = pad([seqs[i] for i in group], device)
        _, logits, _, _ = weights_and_logits(model, model.embed(ids), lens)
        probs[group] = torch.softmax(logits.float(), -1).cpu().numpy()
    return probs


@dataclass
class Attributions:
    # attention weight of each real token
    weights: list[np.ndarray]
    # gradient x input of each real token
    gradient: list[np.ndarray]
    probs: np.ndarray  # (N, C)

    @property
    def pred(self) -> np.ndarray:
        return self.probs.argmax(-1)


def attributions(
    model: ClassifierNet, seqs: Sequence[np.ndarray], batch_tokens: int = 32768, fixed_weights: bool = False
) -> Attributions:
    """Attention weights, probabilities and gradient x input of each review (one backward pass a batch).
    `fixed_weights`: the gradient with the attention weights held fixed, flowing through the encoder
    outputs they weigh only, as Jain & Wallace compute it (their code detaches the weights)."""
    device = next(model.parameters()).device
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    weights: list = [None] * len(seqs)
    grads: list = [None] * len(seqs)
    probs = np.empty((len(seqs), model.fc.out_features), dtype=np.float64)
    for group in chunks(lengths, batch_tokens):
        ids, lens = pad([seqs[i] for i in group], device)
        x = model.embed(ids).detach().requires_grad_(True)  # (B, T, E)
        w, logits, _, _ = weights_and_logits(model, x, lens, fixed_weights)
        p = torch.softmax(logits.float(), -1)  # (B, C)
        # reviews are independent in eval mode: the gradient of the sum is each review's own
        p.gather(1, p.argmax(-1, keepdim=True)).sum().backward()
        gxi = (x.grad * x.detach()).sum(-1).cpu().numpy()  # (B, T)
        w = w.detach().float().cpu().numpy()
        probs[group] = p.detach().cpu().numpy()
        for row, i in enumerate(group):
            n = lens[row]
            weights[i], grads[i] = w[row, :n].astype(np.float64), gxi[row, :n].astype(np.float64)
    return Attributions(weights, grads, probs)


def _without(seq: np.ndarray, positions) -> np.ndarray:
    keep = np.ones(len(seq), dtype=bool)
    keep[positions] = False
    return seq[keep]


def each_deleted_probs(model: ClassifierNet, seq: np.ndarray, batch_tokens: int) -> np.ndarray:
    """Class probabilities (n, C) of the review with each of its n tokens deleted in turn, its states shared."""
    ids = torch.as_tensor(seq, dtype=torch.long, device=next(model.parameters()).device)
    logits = each_deleted(model, ids, max(1, batch_tokens // len(seq)))
    return torch.softmax(logits.float(), -1).cpu().numpy()


def leave_one_out(
    model: ClassifierNet,
    seqs: Sequence[np.ndarray],
    probs: np.ndarray,
    batch_tokens: int = 32768,
    group_tokens: int = 2_000_000,
) -> list[np.ndarray]:
    """Drop in p(predicted) when each token is removed in turn (nan for a one-token review).

    All of a review's variants run as one batch of its length minus one; reviews are taken a
    few at a time (`group_tokens` tokens of variants) to keep memory flat. A review of SHARED_FROM
    tokens or more, where the model allows it, is read once with its states shared among its deletions.
    """
    pred = probs.argmax(-1)
    out: list = [None] * len(seqs)
    pending: list[int] = []
    size = 0
    # a long review read once with its states shared among its deletions (attnclf/models/deletions.py)
    shared = shares_states(model)

    def flush():
        variants = [_without(seqs[i], t) for i in pending for t in range(len(seqs[i]))]
        p = probabilities(model, variants, batch_tokens)
        at = 0
        for i in pending:
            n = len(seqs[i])
            out[i] = probs[i, pred[i]] - p[at : at + n, pred[i]]
            at += n

    for i in np.argsort([len(s) for s in seqs], kind="stable"):
        n = len(seqs[i])
        if n < 2:
            out[i] = np.full(n, np.nan)
            continue
        if shared and n >= SHARED_FROM:
            out[i] = probs[i, pred[i]] - each_deleted_probs(model, seqs[i], batch_tokens)[:, pred[i]]
            continue
        pending.append(int(i))
        size += n * (n - 1)
        if size >= group_tokens:
            flush()
            pending, size = [], 0
    if pending:
        flush()
    return out


def ranking(scores: np.ndarray) -> np.ndarray:
    """Token positions from most to least important (ties keep reading order)."""
    return np.argsort(-scores, kind="stable")


def erase_count(k: float, n: int) -> int:
    """Tokens to erase for k (a count, or a fraction of the review when below 1), leaving at least one."""
    count = k if k >= 1 else max(1, round(k * n))
    return int(min(count, n - 1))


def erasure(
    model: ClassifierNet,
    seqs: Sequence[np.ndarray],
    probs: np.ndarray,
    orders: dict[str, list[np.ndarray]],
    ks: Sequence[float],
    batch_tokens: int = 32768,
) -> dict[str, dict[str, dict[str, float]]]:
    """For each ranking and k: share of decisions flipped and mean drop in p(predicted) once the
    top-k tokens are removed. Reviews of one token are left out (nothing can be removed)."""
    pred = probs.argmax(-1)
    rows = [i for i, s in enumerate(seqs) if len(s) >= 2]
    result: dict = {}
    for name, order in orders.items():
        result[name] = {}
        for k in ks:
            variants = [_without(seqs[i], order[i][: erase_count(k, len(seqs[i]))]) for i in rows]
            p = probabilities(model, variants, batch_tokens)
            flipped = p.argmax(-1) != pred[rows]
            drop = probs[rows, pred[rows]] - p[np.arange(len(rows)), pred[rows]]
            result[name][k_name(k)] = {"flipped": float(flipped.mean()), "prob_drop": float(drop.mean())}
    return result


# ERASER's bins (DeYoung et al. 2020): the top 1, 5, 10, 20 and 50% of a review's tokens
ERASER_BINS = (0.01, 0.05, 0.10, 0.20, 0.50)


def bin_count(share: float, n: int) -> int:
    """The tokens in the top `share` of a review of n >= 2 tokens: round(share * n), at least 1 (a short
    review's top 1% is its top token) and at most n - 1 (something is always removed and something kept)."""
    return int(min(max(1, round(share * n)), n - 1))


def comprehensiveness_sufficiency(
    model: ClassifierNet,
    seqs: Sequence[np.ndarray],
    probs: np.ndarray,
    orders: dict[str, list[np.ndarray]],
    bins: Sequence[float] = ERASER_BINS,
    batch_tokens: int = 32768,
) -> dict[str, dict]:
    """ERASER's faithfulness scores of each ranking (`orders`: token positions, most important first):
    comprehensiveness, p(predicted | review) - p(predicted | review without its top tokens), and
    sufficiency, p(predicted | review) - p(predicted | its top tokens alone, in reading order), at each
    bin (a share of the review's tokens, bin_count), their means over the reviews, and each one's AOPC
    (the mean over the bins). The tokens are deleted from the sequence, not masked in the attention.
    Reviews of one token are left out (nothing can be removed and kept apart). High comprehensiveness and
    low sufficiency: the ranking found what the decision rests on."""
    pred = probs.argmax(-1)
    rows = [i for i, s in enumerate(seqs) if len(s) >= 2]
    full = probs[rows, pred[rows]]
    result: dict = {}
    for name, order in orders.items():
        scores: dict = {"comprehensiveness": {}, "sufficiency": {}}
        if not rows:  # (nothing to score)
            nan = {bin_name(b): float("nan") for b in bins}
            result[name] = {
                "comprehensiveness": nan,
                "sufficiency": dict(nan),
                "aopc_comprehensiveness": float("nan"),
                "aopc_sufficiency": float("nan"),
            }
            continue
        for share in bins:
            top = [order[i][: bin_count(share, len(seqs[i]))] for i in rows]
            removed = [_without(seqs[i], t) for i, t in zip(rows, top, strict=True)]
            kept = [seqs[i][np.sort(t)] for i, t in zip(rows, top, strict=True)]
            at = np.arange(len(rows))
            scores["comprehensiveness"][bin_name(share)] = float(
                np.mean(full - probabilities(model, removed, batch_tokens)[at, pred[rows]])
            )
            scores["sufficiency"][bin_name(share)] = float(
                np.mean(full - probabilities(model, kept, batch_tokens)[at, pred[rows]])
            )
        for score in ("comprehensiveness", "sufficiency"):
            scores[f"aopc_{score}"] = float(np.mean(list(scores[score].values())))
        result[name] = scores
    return result


def bin_name(share: float) -> str:
    return f"{share * 100:g}pct"


def k_name(k: float) -> str:
    return f"k{int(k)}" if k >= 1 else f"k{k * 100:g}pct"


def tokens_to_flip(
    model: ClassifierNet,
    seqs: Sequence[np.ndarray],
    probs: np.ndarray,
    orders: list[np.ndarray],
    batch_tokens: int = 32768,
    steps: Sequence[int] = (4, 16, 64, 256),
    within: int | None = None,
) -> np.ndarray:
    """For each review, how many of its tokens, removed in `orders` order, flip the decision
    (nan where removing all but one never does, or where `within` tokens removed do not).

    This is ERASER's comprehensiveness read for one review: the smallest top-k of a ranking whose deletion
    takes the predicted class away. Counts 1, 2, ... are tried in rounds up to each of `steps` (then to the
    end, or to `within`), and a review leaves once it has flipped, so the cost follows the answer rather
    than the review's length.
    """
    pred = probs.argmax(-1)
    found = np.full(len(seqs), np.nan)
    active = [i for i, s in enumerate(seqs) if len(s) >= 2]
    lo = 1
    end = max((len(s) for s in seqs), default=1) if within is None else within
    for hi in [*(s for s in steps if s < end), end]:
        if not active or hi < lo:
            continue
        variants, owners = [], []
        for i in active:
            for m in range(lo, min(hi, len(seqs[i]) - 1) + 1):
                variants.append(_without(seqs[i], orders[i][:m]))
                owners.append((i, m))
        if variants:
            flips = probabilities(model, variants, batch_tokens).argmax(-1) != pred[[i for i, _ in owners]]
            for (i, m), f in zip(owners, flips, strict=True):
                if f and np.isnan(found[i]):
                    found[i] = m
        active = [i for i in active if np.isnan(found[i]) and len(seqs[i]) - 1 > hi]
        lo = hi + 1
    return found


def encoded(model: ClassifierNet, seqs: Sequence[np.ndarray], batch_tokens: int):
    """(positions, encoder outputs, weights, mask) batch by batch, without gradients."""
    device = next(model.parameters()).device
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    with torch.no_grad():
        for group in chunks(lengths, batch_tokens):
            ids, lens = pad([seqs[i] for i in group], device)
            w, _, out, mask = weights_and_logits(model, model.embed(ids), lens)
            yield group, out, w.float(), mask


def probs_under(model: ClassifierNet, out: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Class probabilities (..., B, C) of encoder outputs (B, T, D) pooled with weights (..., B, T)."""
    lead = weights.shape[:-2]
    flat = weights.reshape(-1, *weights.shape[-2:])  # (P, B, T)
    # P*B, T, D
    outs = out.unsqueeze(0).expand(flat.size(0), *out.shape).reshape(-1, *out.shape[1:])
    logits = model.classify(model.pool(outs, flat.reshape(-1, flat.size(-1))))  # (P*B, C)
    return torch.softmax(logits.float(), -1).reshape(*lead, *weights.shape[-2:-1], -1)


def shuffled_weights(w: torch.Tensor, mask: torch.Tensor, permutations: int, gen: torch.Generator) -> torch.Tensor:
    """`permutations` random orders of each review's weights w (B, T) among its real tokens (mask (B, T)):
    (P, B, T); padding keeps its weight, 0."""
    keys = torch.rand((permutations, *w.shape), generator=gen).to(w.device)  # (P, B, T)
    # padding sorts last and stays there
    keys = keys.masked_fill(~mask, 2.0)
    return w.unsqueeze(0).expand_as(keys).gather(2, keys.argsort(-1))


def permutation(
    model: ClassifierNet,
    seqs: Sequence[np.ndarray],
    permutations: int = 100,
    seed: int = 0,
    batch_tokens: int = 32768,
) -> tuple[np.ndarray, np.ndarray]:
    """Per review: the median total-variation distance between the output distribution under the
    model's weights and under its weights shuffled among the real tokens (`permutations` times),
    and the weights' entropy (nats)."""
    gen = torch.Generator().manual_seed(seed)
    tv = np.empty(len(seqs))
    entropy = np.empty(len(seqs))
    for group, out, w, mask in encoded(model, seqs, max(1, batch_tokens // 8)):
        with torch.no_grad():
            p0 = probs_under(model, out, w.unsqueeze(0))[0]  # (B, C)
            shuffled = shuffled_weights(w, mask, permutations, gen)  # (P, B, T)
            p = probs_under(model, out, shuffled)  # (P, B, C)
            dist = 0.5 * (p - p0).abs().sum(-1)  # (P, B)
            tv[group] = dist.median(0).values.cpu().numpy()
            entropy[group] = (-(w * w.clamp_min(1e-12).log()).sum(-1)).cpu().numpy()
    return tv, entropy


def states_and_sparsity(
    model: ClassifierNet, seqs: Sequence[np.ndarray], batch_tokens: int = 32768
) -> tuple[np.ndarray, np.ndarray]:
    """Per review: the conicity of its encoder states (attnclf/models/states.py: near 1, they point one way)
    and the share of its real tokens whose attention weight is exactly 0 (sparsemax, entmax)."""
    cone, zeros = np.empty(len(seqs)), np.empty(len(seqs))
    for group, out, w, mask in encoded(model, seqs, batch_tokens):
        cone[group] = conicity(out.float(), mask).cpu().numpy()
        zeros[group] = ((w == 0) & mask).sum(-1).cpu().numpy() / mask.sum(-1).cpu().numpy()
    return cone, zeros


def attention_weights(model: ClassifierNet, seqs: Sequence[np.ndarray], batch_tokens: int = 32768):
    """The attention weights of each review's real tokens."""
    weights: list = [None] * len(seqs)
    for group, _, w, _ in encoded(model, seqs, batch_tokens):
        w = w.cpu().numpy().astype(np.float64)
        for row, i in enumerate(group):
            weights[i] = w[row, : len(seqs[i])]
    return weights


def uniform(model: ClassifierNet, seqs: Sequence[np.ndarray], batch_tokens: int = 32768) -> np.ndarray:
    """Class probabilities (N, C) when every real token gets the same weight."""
    probs = np.empty((len(seqs), model.fc.out_features))
    for group, out, _, mask in encoded(model, seqs, batch_tokens):
        with torch.no_grad():
            w = mask.float() / mask.sum(-1, keepdim=True)
            probs[group] = probs_under(model, out, w.unsqueeze(0))[0].cpu().numpy()
    return probs


def kendall(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> np.ndarray:
    """Kendall tau-b between two importance vectors of each review (nan where either is constant or
    the review has fewer than two tokens)."""
    return kendall_test(a, b)[0]


def kendall_test(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Kendall tau-b of each review, as `kendall`, and its two-sided p-value (scipy's; nan likewise)."""
    tau, p = np.full(len(a), np.nan), np.full(len(a), np.nan)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if len(x) >= 2 and np.all(np.isfinite(y)):
            tau[i], p[i] = kendalltau(x, y)
    return tau, p


def magnitude(scores: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Signed importance -> Jain & Wallace's: its absolute value (how far the token moves the output)."""
    return [np.abs(s) for s in scores]


def top1_agreement(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """Share of reviews (two tokens or more) whose highest-scored token is the same under a and b."""
    same = [np.argmax(x) == np.nanargmax(y) for x, y in zip(a, b, strict=True) if len(x) >= 2]
    return float(np.mean(same)) if same else float("nan")


def js_distance(p: Sequence[np.ndarray], q: Sequence[np.ndarray]) -> np.ndarray:
    """Jensen-Shannon distance (base 2, in [0, 1]) between two weight vectors of each review."""
    return np.array([jensenshannon(a, b, base=2) for a, b in zip(p, q, strict=True)])


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    return float(spearmanr(x[ok], y[ok]).statistic) if ok.sum() > 2 else float("nan")
