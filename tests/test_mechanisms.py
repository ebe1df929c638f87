"""The mechanisms beyond dot and additive (general, multihead, structured), each against its definition
computed here with numpy, one review and one query at a time; and every mechanism of the package under
padding, on every encoder kernel, with every normaliser and both query forms."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.classifier import classifier_settings, mechanism, net
from helpers.reference import reference_entmax

from attnclf.errors import AttnclfError

ALL = ["dot", "additive", "general", "multihead", "structured"]
NORMALIZERS = ["softmax", "sparsemax", "entmax15"]


def normalised(scores: np.ndarray, normalizer: str) -> np.ndarray:
    """One row of scores (the real tokens') made weights, by each normaliser's definition."""
    if normalizer == "softmax":
        e = np.exp(scores - scores.max())
        return e / e.sum()
    return reference_entmax(scores, {"sparsemax": 2.0, "entmax15": 1.5}[normalizer])


def batch(B=3, Tq=1, Tk=7, D=8, lengths=(7, 4, 1), seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (
        torch.randn(B, Tq, D, generator=g, dtype=torch.float64),
        torch.randn(B, Tk, D, generator=g, dtype=torch.float64),
    )
    mask = torch.arange(Tk) < torch.tensor(lengths).unsqueeze(1)
    return q, k, mask, list(lengths)


def np_of(t):
    return t.detach().double().numpy()


def check_rows(att, q, k, mask, lengths, expected_row):
    """att's context and weights against expected_row(b, i, n) -> (context, weights over the n real tokens)."""
    ctx, w = att(q, k, k, mask)
    for b, n in enumerate(lengths):
        for i in range(q.size(1)):
            want_ctx, want_w = expected_row(b, i, n)
            np.testing.assert_allclose(np_of(w[b, i, :n]), want_w, atol=1e-9)
            np.testing.assert_allclose(np_of(ctx[b, i]), want_ctx, atol=1e-9)
            assert (w[b, i, n:] == 0).all()


@pytest.mark.parametrize("normalizer", NORMALIZERS)
@pytest.mark.parametrize("Tq", [1, 3])
def test_general_is_luongs_bilinear_score(normalizer, Tq):
    torch.manual_seed(0)
    att = mechanism("general", 8, 8, normalizer=normalizer).double()
    q, k, mask, lengths = batch(Tq=Tq)
    W = np_of(att.w.weight)  # (Dq, Dk)

    def row(b, i, n):
        keys = np_of(k[b, :n])
        w = normalised(np.array([np_of(q[b, i]) @ W @ keys[t] for t in range(n)]), normalizer)
        return w @ keys, w

    check_rows(att, q, k, mask, lengths, row)
    scaled = mechanism("general", 8, 8, scale=True).double()
    scaled.load_state_dict(att.state_dict())
    torch.testing.assert_close(scaled.scores(q, k), att.scores(q, k) / np.sqrt(8))  # (scale=True: divided by sqrt(Dk))


@pytest.mark.parametrize("normalizer", NORMALIZERS)
@pytest.mark.parametrize("Tq", [1, 3, 7])  # (fewer queries than keys: the values pooled before their projection)
def test_multihead_is_heads_of_scaled_dot_concatenated_and_projected(normalizer, Tq):
    torch.manual_seed(0)
    att = mechanism("multihead", 8, 8, dim=6, normalizer=normalizer, heads=3).double()
    q, k, mask, lengths = batch(Tq=Tq)
    p = {
        name: (np_of(m.weight), np_of(m.bias))
        for name, m in [("q", att.q_proj), ("k", att.k_proj), ("v", att.v_proj), ("o", att.o_proj)]
    }

    def lin(name, x):
        return p[name][0] @ x + p[name][1]

    def row(b, i, n):
        keys = np_of(k[b, :n])
        Q, K, V = lin("q", np_of(q[b, i])), [lin("k", x) for x in keys], [lin("v", x) for x in keys]
        heads, contexts = [], []
        for h in range(3):
            s = slice(2 * h, 2 * h + 2)  # d/H = 2
            w = normalised(np.array([Q[s] @ K[t][s] / np.sqrt(2) for t in range(n)]), normalizer)
            heads.append(w)
            contexts.append(sum(w[t] * V[t][s] for t in range(n)))
        return lin("o", np.concatenate(contexts)), np.mean(heads, axis=0)

    check_rows(att, q, k, mask, lengths, row)
    assert att.rows.shape == (3, 3, Tq, 7) and (att.rows[1, :, :, 4:] == 0).all()


@pytest.mark.parametrize("normalizer", NORMALIZERS)
def test_structured_is_lins_hops_concatenated_with_their_penalty(normalizer):
    torch.manual_seed(0)
    att = mechanism("structured", 8, 8, dim=5, normalizer=normalizer, hops=3, penalty=0.7).double()
    q, k, mask, lengths = batch(Tq=2)
    W1, W2 = np_of(att.w1.weight), np_of(att.w2.weight)  # (d_a, Dk), (r, d_a)
    hops = {}

    def row(b, i, n):
        keys = np_of(k[b, :n])
        A = np.stack(
            [normalised(np.array([W2[j] @ np.tanh(W1 @ keys[t]) for t in range(n)]), normalizer) for j in range(3)]
        )
        hops[b] = A
        return np.concatenate([A[j] @ keys for j in range(3)]), A.mean(0)

    check_rows(att, q, k, mask, lengths, row)
    # ||A A^T - I||_F^2 / r^2, averaged over the reviews (the authors' code), times the coefficient
    want = np.mean([((A @ A.T - np.eye(3)) ** 2).sum() / 9 for A in hops.values()])
    assert att.penalty().item() == pytest.approx(0.7 * want, rel=1e-9)
    att.eval()(q, k, k, mask)  # (the training loss's only: not computed to evaluate)
    assert att.penalty() is None
    # query-free: another query gives the same
    torch.testing.assert_close(att(q.flip(0), k, k, mask)[0], att(q, k, k, mask)[0])


@pytest.mark.parametrize("name", ALL)
def test_pool_under_the_mechanisms_own_single_row_is_its_forward(name):
    """Given weights stand for every head's and hop's: where every row is the same, pool is forward."""
    torch.manual_seed(0)
    clf = net(
        40,
        2,
        embed_dim=8,
        hidden_dim=4,
        attention=name,
        attention_keys={"hops": 1} if name == "structured" else {"heads": 1} if name == "multihead" else {},
        dropout=0.0,
        embed_dropout=0.0,
    ).eval()
    ids, lengths = torch.randint(2, 40, (3, 6)), torch.tensor([6, 3, 1])
    logits, w = clf(ids, lengths)
    out, _, _ = clf.encode(clf.embed(ids), lengths)
    torch.testing.assert_close(clf.classify(clf.pool(out, w)), logits)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("kernel", ["padded", "packed", "concurrent"])
@pytest.mark.parametrize("query", ["final", "learned"])
def test_each_mechanism_is_exact_under_padding_on_every_kernel(name, kernel, query):
    """A review alone and the same review padded in a batch beside a longer one: the same logits and weights,
    and exactly 0 on its padding, under each normaliser, with the GRU and the LSTM."""
    for normalizer, rnn in itertools.product(NORMALIZERS, ("gru", "lstm")):
        torch.manual_seed(1)
        clf = net(
            40,
            2,
            embed_dim=6,
            hidden_dim=4,
            attention=name,
            rnn_kernel=kernel,
            query=query,
            rnn=rnn,
            attention_normalizer=normalizer,
        ).eval()
        ids = torch.randint(2, 40, (2, 9))
        with torch.no_grad():
            both, w_both = clf(ids, torch.tensor([9, 5]))
            alone, w_alone = clf(ids[1:, :5], torch.tensor([5]))
        torch.testing.assert_close(both[1], alone[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(w_both[1, :5], w_alone[0], atol=1e-6, rtol=1e-5)
        assert (w_both[1, 5:] == 0).all(), (name, kernel, query, normalizer, rnn)


def test_the_structured_penalty_is_added_to_the_loss(tiny_imdb, tmp_path):
    """One training step's loss: the cross-entropy plus the penalty times its coefficient (not minus)."""
    from attnclf.training.module import ClassifierModule

    config = classifier_settings(
        "structured", {"hops": 4, "penalty": 0.3}, embed_dim=8, hidden_dim=4, dropout=0.0, embed_dropout=0.0
    )
    module = ClassifierModule(60, 2, config=config)
    ids, lengths, y = torch.randint(2, 60, (4, 6)), torch.tensor([6, 5, 3, 2]), torch.tensor([0, 1, 1, 0])
    with pytest.warns(UserWarning, match="self.log"):
        loss = module.training_step((ids, lengths, y), 0)
    logits, _ = module.model(ids, lengths)
    A = module.model.attention.rows[:, :, 0].double()  # (B, r, T)
    penalty = (A @ A.transpose(1, 2) - torch.eye(4, dtype=A.dtype)).square().sum((1, 2)).mean() / 16
    torch.testing.assert_close(loss.double(), F.cross_entropy(logits, y).double() + 0.3 * penalty)


@pytest.mark.parametrize(
    "name,keys,message",
    [
        (
            "multihead",
            {"heads": 3},
            "attention.heads=3 must be a whole number >= 1 that divides the attention's size 8",
        ),
        ("structured", {"hops": 0}, "attention.hops=0 must be a whole number >= 1"),
        ("structured", {"penalty": -1.0}, "attention.penalty=-1.0 must be a number >= 0"),
        (
            "general",
            {"heads": 2},
            "attention.heads: attnclf.models.general.GeneralAttention takes no such setting (its settings: scale)",
        ),
        ("dot", {"scale": "maybe"}, "attention.scale='maybe' must be true or false"),
    ],
)
def test_a_mechanisms_bad_key_is_one_line(name, keys, message):
    with pytest.raises(AttnclfError) as e:
        classifier_settings(name, keys, hidden_dim=4)
    assert message in str(e.value) and "\n" not in str(e.value)
