"""The interface every attention mechanism has (`Attention`), and masked scaled dot-product and additive
(Bahdanau) attention.

Each takes queries (B, Tq, Dq), keys (B, Tk, Dk), values (B, Tk, Dv) and a key
mask (B, Tk) that is True on real tokens, and returns (context (B, Tq, out_dim),
weights (B, Tq, Tk)). The classifier pools with one query (Tq = 1); the
benchmark also runs them as self-attention (Tq = Tk). CONTRIBUTING.md, "Adding an
attention", says how a class of one's own joins them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from attnclf.models.names import ATTENTION_INITS, NORMALIZERS
from attnclf.utils.checks import one_of


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last dim with masked keys at weight exactly 0.

    The fill is the dtype's own minimum (the usual fixed -1e9 overflows in float16);
    the final masked_fill makes padding exactly 0 and a row with no real key all
    zeros rather than NaN.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    # (B, 1, Tk), broadcast over queries
    keep = mask.unsqueeze(-2)
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1).masked_fill(~keep, 0.0)


def masked_weights(scores: torch.Tensor, mask: torch.Tensor | None, normalizer: str = "softmax") -> torch.Tensor:
    """The weights of scores (B, Tq, Tk) under `normalizer`: softmax (masked_softmax), or sparsemax or
    1.5-entmax (the entmax package's), which give some real tokens weight exactly 0. Masked keys weigh
    exactly 0 under each; the sparse ones see them at the dtype's minimum, as masked_softmax does."""
    if normalizer == "softmax":
        return masked_softmax(scores, mask)
    import entmax

    normalize = entmax.sparsemax if normalizer == "sparsemax" else entmax.entmax15
    if mask is None:
        return normalize(scores, dim=-1)
    keep = mask.unsqueeze(-2)  # (B, 1, Tk)
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    return normalize(scores, dim=-1).masked_fill(~keep, 0.0)


@dataclass(frozen=True)
class AttentionShape:
    """What the classifier tells every attention it builds: the sizes of its queries and keys (the values are
    the keys), and the settings of the model that every mechanism shares (ModelConfig's attention_dim,
    attention_normalizer and query)."""

    query_dim: int
    key_dim: int
    # model.attention_dim: the mechanism's inner size; None: its own default
    dim: int | None = None
    # softmax, sparsemax or entmax15: what turns scores into weights
    normalizer: str = "softmax"
    # model.query=learned: the query is one learned vector for every review, not the review's own summary
    learned_query: bool = False


class Attention(nn.Module):
    """An attention mechanism: one class, built as `cls(shape, **its_own_keys)` from the `_target_` and keys of
    its YAML in conf/attention/.

    forward(query (B, Tq, Dq), keys (B, Tk, Dk), values (B, Tk, Dv), mask (B, Tk) True on real tokens)
    -> context (B, Tq, out_dim), weights (B, Tq, Tk): one row of weights per query, each summing to 1 over the
    real tokens and exactly 0 on padding. These are the weights the tool shows and measures.

    A subclass writes `scores` (the default forward normalises them under the mask and pools the values), or
    forward itself. A mechanism with several rows of weights a query (heads, hops) keeps them as `rows` (B, R,
    Tq, Tk) and returns their mean as its weights; one whose context is not a weighted sum of the values says
    how given weights pool (`pool`) and its context's size (`out_dim`); one with a term of its own in the
    training loss returns it from `penalty`.
    """

    def __init__(self, shape: AttentionShape):
        super().__init__()
        self.shape = shape
        self.normalizer = shape.normalizer
        one_of("model.attention_normalizer", shape.normalizer, NORMALIZERS)
        # the context's size: the values' (the classifier's values are its keys)
        self.out_dim = shape.key_dim
        # the last forward's rows of weights (B, R, Tq, Tk), where a query has several; None where it has one
        self.rows: torch.Tensor | None = None

    def scores(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """(B, Tq, Dq), (B, Tk, Dk) -> (B, Tq, Tk): how well each key answers each query."""
        raise NotImplementedError(f"{type(self).__name__} writes neither scores() nor forward()")

    def forward(self, query, keys, values, mask=None):
        weights = masked_weights(self.scores(query, keys), mask, self.normalizer)  # (B, Tq, Tk)
        # (B, Tq, Dv), (B, Tq, Tk)
        return torch.bmm(weights, values), weights

    def pool(self, weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """The context (B, Tq, out_dim) of given weights (B, Tq, Tk) in place of the mechanism's own: what the
        measures that permute, flatten or erase the weights read the model's answer from."""
        return torch.bmm(weights.to(values.dtype), values)

    def penalty(self) -> torch.Tensor | None:
        """A term of the last forward's to add to the training loss (weighted already), or None."""
        return None


def fused_pooling(attention: nn.Module, keys: torch.Tensor, values: torch.Tensor) -> bool:
    """Whether a fused pooling Function below applies: keys = values (the classifier pools its
    encoder's output with itself), softmax weights (their backward is softmax's), and no autocast (the
    Functions compute in the inputs' dtype)."""
    softmax = attention.normalizer == "softmax"
    return values is keys and softmax and not torch.is_autocast_enabled(keys.device.type)


def _scores_grad(w, x, d_context, d_weights):
    """The fused Functions' gradient of the scores (B, Tq, Tk), from those of context = w x and of w itself.

    Masked softmax backward: 0 on padding, where w is 0.
    """
    dw = torch.bmm(d_context, x.transpose(1, 2))  # (B, Tq, Tk)
    if d_weights is not None:
        dw = dw + d_weights
    return w * (dw - (dw * w).sum(-1, keepdim=True))


class SharedKeysPool(torch.autograd.Function):
    """Masked softmax of scale * (qk . x_t) + shift, then the weighted sum of the same x: keys = values = x.

    The same numbers as the plain autograd path; only x's gradient is formed
    differently. Autograd writes it twice, once through the scores (transposed,
    (B, D, Tk)) and once through the weighted sum, and adds the two; here it is
    one product, [ds^T, w^T] (B, Tk, 2Tq) @ [scale * qk; dcontext] (B, 2Tq, D).
    Pooling a (64, 220, 256) encoder output, forward + backward: 10.0 -> 5.5 ms
    (scripts/bench_step.py; 3% of a training step instead of 5%).
    """

    @staticmethod
    def forward(ctx, qk, x, shift, mask, scale: float):
        # qk (B, Tq, D), x (B, Tk, D), shift (B, Tq, 1), mask (B, Tk) True on real tokens
        weights = masked_softmax(torch.baddbmm(shift, qk, x.transpose(1, 2), alpha=scale), mask)  # (B, Tq, Tk)
        ctx.save_for_backward(qk, x, weights)
        ctx.scale = scale
        # (B, Tq, D), (B, Tq, Tk)
        return torch.bmm(weights, x), weights

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_context, d_weights):
        qk, x, w = ctx.saved_tensors
        ds = _scores_grad(w, x, d_context, d_weights)  # (B, Tq, Tk)
        d_qk = torch.bmm(ds, x).mul_(ctx.scale)  # (B, Tq, D)
        dx = torch.bmm(torch.cat([ds, w], 1).transpose(1, 2), torch.cat([qk * ctx.scale, d_context], 1))  # (B, Tk, D)
        return d_qk, dx, ds.sum(-1, keepdim=True), None, None


class DotAttention(Attention):
    """softmax(Q K^T / sqrt(d)) V with Q = W_q q, K = W_k k, d = model.attention_dim (default: the keys' size).

    Values are used as given: a value projection would commute with the weighted
    sum and is absorbed by the classifier's linear layer, so it adds parameters
    and no power. `scale=False` drops the 1/sqrt(d) (to measure the claim that scaling speeds
    convergence by about 30%: `experiment=claim_scaling`). With a learned query and no
    model.attention_dim, Jain & Wallace's form: w . h / sqrt(d), no projections.
    """

    name = "dot"

    def __init__(self, shape: AttentionShape, scale: bool = True):
        super().__init__(shape)
        self.projected = not (shape.learned_query and shape.dim is None)
        d = shape.key_dim if shape.dim is None else shape.dim
        self.q_proj = nn.Linear(shape.query_dim, d) if self.projected else None
        self.k_proj = nn.Linear(shape.key_dim, d) if self.projected else None
        self.scale = 1.0 / math.sqrt(d) if scale else 1.0

    def forward(self, query, keys, values, mask=None):
        if not self.projected:
            scores = torch.bmm(query, keys.transpose(1, 2))  # (B, Tq, Tk)
        elif query.size(1) < keys.size(1):
            q = self.q_proj(query)  # (B, Tq, d)
            # fewer queries than keys (pooling: one): (W_k k + b_k) . q = k . (W_k^T q) + b_k . q, so bring
            # the query into key space (B*Tq*d*Dk) rather than every key into d (B*Tk*Dk*d). Same scores;
            # this took the classifier's attention from ~19% of a training step to ~4% (docs/performance.md).
            qk = q @ self.k_proj.weight  # (B, Tq, Dk)
            shift = (q @ self.k_proj.bias).unsqueeze(-1)  # (B, Tq, 1)
            if fused_pooling(self, keys, values):
                return SharedKeysPool.apply(qk, keys, shift * self.scale, mask, self.scale)
            scores = torch.bmm(qk, keys.transpose(1, 2)) + shift  # (B, Tq, Tk)
        else:
            scores = torch.bmm(self.q_proj(query), self.k_proj(keys).transpose(1, 2))  # (B, Tq, Tk)
        weights = masked_weights(scores * self.scale, mask, self.normalizer)
        # (B, Tq, Dv), (B, Tq, Tk)
        return torch.bmm(weights, values), weights


class SharedKeysAdditivePool(torch.autograd.Function):
    """One query, keys = values = x: masked softmax of v^T tanh(q + W_k x_t), then the weighted sum of x.

    The same numbers as the plain autograd path, with fewer passes over the
    (B, T, h) activations: the query added and tanh taken in place on the key
    projection, the tanh gradient formed in place, and x's two gradients (through
    the scores and through the weighted sum) written by one matmul that
    accumulates onto the other instead of added afterwards. Pooling a
    (64, 220, 256) output at h = 256, forward + backward: 29-31 -> 28-30 ms
    (scripts/bench_step.py), of which the three key-projection matmuls alone
    take about 20 ms.
    """

    @staticmethod
    def forward(ctx, q, x, w_k, v, mask):
        # q (B, 1, h) the projected query, x (B, T, D), w_k (h, D), v (1, h), mask (B, T)
        B, T, D = x.shape
        th = torch.mm(x.reshape(B * T, D), w_k.t()).view(B, T, -1)  # (B, T, h)
        th.add_(q).tanh_()
        weights = masked_softmax(torch.mm(th.view(B * T, -1), v.t()).view(B, 1, T), mask)  # (B, 1, T)
        ctx.save_for_backward(x, w_k, v, th, weights)
        # (B, 1, D), (B, 1, T)
        return torch.bmm(weights, x), weights

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_context, d_weights):
        x, w_k, v, th, w = ctx.saved_tensors
        B, T, D = x.shape
        ds = _scores_grad(w, x, d_context, d_weights).view(B * T, 1)
        dv = torch.mm(ds.t(), th.view(B * T, -1))  # (1, h)
        # (B*T, h): through tanh
        d_pre = th.square().neg_().add_(1).mul_(v).view(B * T, -1).mul_(ds)
        d_q = d_pre.view(B, T, -1).sum(1, keepdim=True)  # (B, 1, h)
        d_wk = torch.mm(d_pre.t(), x.reshape(B * T, D))  # (h, D)
        # (B, T, D): through the weighted sum...
        dx = torch.bmm(w.transpose(1, 2), d_context)
        # ... plus through the scores
        dx.view(B * T, D).addmm_(d_pre, w_k)
        return d_q, dx, d_wk, dv, None


class AdditiveAttention(Attention):
    """score(q, k) = v^T tanh(W_q q + W_k k), W_q, W_k and v without bias.

    Its tanh layer is model.attention_dim wide; by default the mean of the query and key sizes (a size
    between the two where they differ), or half the keys' with a learned query (Jain & Wallace's
    v^T tanh(W h + b): the encoder's hidden_dim).
    `init="xavier"`: Xavier-uniform W_q, W_k and a near-zero v, so training starts
    from almost uniform weights (mean pooling); `init="default"`: PyTorch's own.
    """

    name = "additive"

    def __init__(self, shape: AttentionShape, init: str = "xavier"):
        super().__init__(shape)
        one_of("attention.init", init, ATTENTION_INITS)
        hidden_dim = shape.dim
        if hidden_dim is None:
            hidden_dim = shape.key_dim // 2 if shape.learned_query else (shape.query_dim + shape.key_dim) // 2
        self.q_proj = nn.Linear(shape.query_dim, hidden_dim, bias=False)
        self.k_proj = nn.Linear(shape.key_dim, hidden_dim, bias=False)
        self.score_proj = nn.Linear(hidden_dim, 1, bias=False)  # v
        if init == "xavier":
            nn.init.xavier_uniform_(self.q_proj.weight)
            nn.init.xavier_uniform_(self.k_proj.weight)
            nn.init.normal_(self.score_proj.weight, std=1e-2)

    def forward(self, query, keys, values, mask=None):
        q = self.q_proj(query)  # (B, Tq, h)
        if query.size(1) == 1 and fused_pooling(self, keys, values):
            return SharedKeysAdditivePool.apply(q, keys, self.k_proj.weight, self.score_proj.weight, mask)
        k = self.k_proj(keys)  # (B, Tk, h)
        # (B, Tq, 1, h) + (B, 1, Tk, h) -> (B, Tq, Tk, h): the cost that grows as Tq * Tk * h
        scores = self.score_proj(torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))).squeeze(-1)  # (B, Tq, Tk)
        weights = masked_weights(scores, mask, self.normalizer)
        # (B, Tq, Dv), (B, Tq, Tk)
        return torch.bmm(weights, values), weights
