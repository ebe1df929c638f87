import math

import pytest
import torch
from helpers.classifier import mechanism

from attnclf.errors import AttnclfError
from attnclf.models.attention import AdditiveAttention, AttentionShape, DotAttention, masked_softmax

# every mechanism the package ships (conf/attention/)
ALL = ["dot", "additive", "general", "multihead", "structured"]


def inputs(B=3, Tq=1, Tk=9, D=8, lengths=(9, 4, 1), seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Tq, D, generator=g)
    k = torch.randn(B, Tk, D, generator=g)
    mask = torch.arange(Tk) < torch.tensor(lengths).unsqueeze(1)  # (B, Tk)
    return q, k, mask


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("Tq", [1, 5])
def test_weights_sum_to_one_and_are_zero_on_padding(name, Tq):
    torch.manual_seed(0)
    att = mechanism(name, 8, 8, 6, **({"heads": 2} if name == "multihead" else {}))
    q, k, mask = inputs(Tq=Tq)
    v = torch.randn(3, 9, 8)
    ctx, w = att(q, k, v, mask)
    assert ctx.shape == (3, Tq, att.out_dim) and w.shape == (3, Tq, 9)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, Tq))
    assert (w[~mask.unsqueeze(1).expand_as(w)] == 0).all()  # exactly zero, not small
    assert (w[mask.unsqueeze(1).expand_as(w)] > 0).all()


@pytest.mark.parametrize("name", ALL)
def test_padding_values_have_no_effect(name):
    torch.manual_seed(0)
    att = mechanism(name, 8, 8, None)
    q, k, mask = inputs()
    v = torch.randn(3, 9, 8)
    k2, v2 = k.clone(), v.clone()
    k2[~mask] = 1e4  # garbage at padded positions
    v2[~mask] = -1e4
    torch.testing.assert_close(att(q, k, v, mask)[0], att(q, k2, v2, mask)[0])


@pytest.mark.parametrize("Tq", [1, 9])
def test_dot_matches_the_formula(Tq):
    """Both forms: the query brought into key space (fewer queries than keys) and the keys projected."""
    torch.manual_seed(0)
    att = DotAttention(AttentionShape(8, 8, 4))
    q, k, mask = inputs(Tq=Tq)
    Q, K = att.q_proj(q), att.k_proj(k)
    scores = Q @ K.transpose(1, 2) / math.sqrt(4)
    expected = torch.softmax(scores.masked_fill(~mask.unsqueeze(1), -math.inf), -1)
    torch.testing.assert_close(att(q, k, k, mask)[1], expected)
    unscaled = DotAttention(AttentionShape(8, 8, 4), scale=False)
    unscaled.load_state_dict(att.state_dict())
    expected = torch.softmax((Q @ K.transpose(1, 2)).masked_fill(~mask.unsqueeze(1), -math.inf), -1)
    torch.testing.assert_close(unscaled(q, k, k, mask)[1], expected)


def test_additive_matches_the_formula_and_allows_different_dims():
    torch.manual_seed(0)
    att = AdditiveAttention(AttentionShape(query_dim=6, key_dim=10, dim=5))
    q = torch.randn(2, 1, 6)
    k = torch.randn(2, 7, 10)
    w = att(q, k, k, None)[1]
    v = att.score_proj.weight[0]
    expected = torch.softmax(torch.tanh(att.q_proj(q) + att.k_proj(k)) @ v, -1).unsqueeze(1)  # (B, 1, Tk)
    torch.testing.assert_close(w, expected)
    assert att.q_proj.bias is None and att.k_proj.bias is None and att.score_proj.bias is None
    assert AdditiveAttention(AttentionShape(6, 10)).q_proj.out_features == 8  # mean of query and key dims


def test_additive_init_starts_near_uniform():
    torch.manual_seed(0)
    q, k, mask = inputs(lengths=(9, 9, 9))
    w = AdditiveAttention(AttentionShape(8, 8), init="xavier")(q, k, k, mask)[1]
    assert (w - 1 / 9).abs().max() < 0.02
    with pytest.raises(ValueError, match="xavier, default"):
        AdditiveAttention(AttentionShape(8, 8), init="zeros")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_masked_softmax_no_overflow_and_fully_masked_rows_are_zero(dtype):
    scores = torch.randn(2, 1, 5).to(dtype)
    mask = torch.tensor([[True, True, False, False, False], [False] * 5])
    w = masked_softmax(scores, mask)
    assert torch.isfinite(w).all()
    assert w[0, 0, 2:].eq(0).all() and w[1].eq(0).all()
    torch.testing.assert_close(w[0, 0].sum().float(), torch.tensor(1.0), atol=1e-2, rtol=0)


def test_unknown_attention_names_the_choices():
    with pytest.raises(AttnclfError, match="additive, dot, general, multihead, structured"):
        mechanism("foo", 4, 4, None)


def test_dot_pooling_gradients_match_the_formula():
    torch.manual_seed(0)
    att = DotAttention(AttentionShape(8, 8, 4))
    q, k, mask = inputs()
    w = torch.randn(3, 1, 9)
    got = torch.autograd.grad((att(q, k, k, mask)[1] * w).sum(), list(att.parameters()))
    Q, K = att.q_proj(q), att.k_proj(k)
    expected = torch.softmax((Q @ K.transpose(1, 2) / 2).masked_fill(~mask.unsqueeze(1), -math.inf), -1)
    want = torch.autograd.grad((expected * w).sum(), list(att.parameters()))
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize(("name", "Tq"), [("dot", 1), ("dot", 3), ("additive", 1)])
def test_pooling_with_keys_as_values_matches_the_plain_path(name, Tq):
    """keys = values (the classifier's case) takes a fused Function: the same outputs and every gradient."""
    torch.manual_seed(0)
    att = mechanism(name, 8, 8, 6)
    q, k, mask = inputs(B=4, Tq=Tq, lengths=(9, 4, 1, 0))  # the last review has no real token
    mix = torch.randn(4, Tq, 9)

    def run(values_of):
        qq, kk = q.clone().requires_grad_(), k.clone().requires_grad_()
        ctx, w = att(qq, kk, values_of(kk), mask)
        loss = ctx.square().sum() + (w * mix).sum()
        grads = torch.autograd.grad(loss, [qq, kk, *att.parameters()])
        return ctx, w, grads, type(ctx.grad_fn).__name__

    fused = run(lambda kk: kk)  # the same tensor: the fused path
    plain = run(lambda kk: kk * 1.0)  # another tensor with the same numbers: autograd's path
    assert fused[3].startswith("SharedKeys") and plain[3] == "BmmBackward0"
    torch.testing.assert_close(fused[0], plain[0])
    torch.testing.assert_close(fused[1], plain[1])
    assert (fused[1][3] == 0).all()  # no real token: all weights 0, no NaN
    for a, b in zip(fused[2], plain[2], strict=True):
        torch.testing.assert_close(a, b)


def test_fused_pooling_gradcheck():
    from attnclf.models.attention import SharedKeysAdditivePool, SharedKeysPool

    q, k, mask = inputs(Tq=2)
    args = [t.double().requires_grad_() for t in (q, k, torch.randn(3, 2, 1))]
    assert torch.autograd.gradcheck(lambda a, b, c: SharedKeysPool.apply(a, b, c, mask, 0.5), args)
    g = torch.Generator().manual_seed(1)
    q1, w_k, v = torch.randn(3, 1, 5, generator=g), torch.randn(5, 8, generator=g), torch.randn(1, 5, generator=g)
    args = [t.double().requires_grad_() for t in (q1, k, w_k, v)]
    assert torch.autograd.gradcheck(lambda *a: SharedKeysAdditivePool.apply(*a, mask), args)
