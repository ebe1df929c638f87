import math
import multiprocessing
import threading

import numpy as np
import pytest
import torch
from helpers.classifier import classifier_settings, net

from attnclf.models.dropout import Dropout
from attnclf.models.encoder import BiRNN, reverse_within_length


def test_reverse_within_length():
    x = torch.arange(10.0).view(2, 5, 1)
    out = reverse_within_length(x, torch.tensor([3, 5]))[..., 0]
    assert out.tolist() == [[2, 1, 0, 3, 4], [9, 8, 7, 6, 5]]


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_exact_bigru_matches_nn_gru_bidirectional_per_review(cell):
    """Each review alone through PyTorch's own bidirectional GRU (or LSTM) gives the same outputs."""
    torch.manual_seed(0)
    enc = BiRNN(6, 5, cell=cell).eval()
    ref = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[cell](6, 5, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ref, f"{name}_l0").copy_(getattr(enc.fwd[0], f"{name}_l0"))
            getattr(ref, f"{name}_l0_reverse").copy_(getattr(enc.bwd[0], f"{name}_l0"))
    lengths = torch.tensor([7, 3, 1])
    x = torch.randn(3, 7, 6)
    out, final = enc(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        expected, h = ref(x[b : b + 1, :n])
        h = h[0] if cell == "lstm" else h  # an LSTM's (hidden, cell) states
        torch.testing.assert_close(out[b, :n], expected[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(final[b], torch.cat([h[0, 0], h[1, 0]]), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("layers,cell", [(1, "gru"), (2, "gru"), (2, "lstm")])
def test_kernels_agree(layers, cell):
    """padded and packed give the same outputs and final states on every real position."""
    torch.manual_seed(0)
    enc = BiRNN(4, 6, num_layers=layers, cell=cell).eval()
    x, lengths = torch.randn(4, 11, 4), torch.tensor([11, 2, 7, 1])
    mask = torch.arange(11) < lengths.unsqueeze(1)
    results = {}
    for kernel in ("padded", "packed"):
        enc.kernel = kernel
        results[kernel] = enc(x, lengths)
    torch.testing.assert_close(results["packed"][0][mask], results["padded"][0][mask], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(results["packed"][1], results["padded"][1], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("layers,cell", [(1, "gru"), (2, "gru"), (1, "lstm")])
def test_concurrent_directions_same_as_one_after_the_other(layers, cell):
    """The concurrent kernel: the same outputs and the same gradients of the input and every parameter."""
    torch.manual_seed(0)
    enc = BiRNN(4, 6, num_layers=layers, cell=cell)
    x, lengths = torch.randn(4, 11, 4), torch.tensor([11, 2, 7, 1])
    results = {}
    for kernel in ("padded", "concurrent"):
        enc.kernel = kernel
        enc.zero_grad()
        xk = x.clone().requires_grad_()
        torch.manual_seed(1)  # the dropout between layers
        out, final = enc(xk, lengths)
        (out.sin().sum() + final.cos().sum()).backward()
        results[kernel] = [out, final, xk.grad, *(p.grad for p in enc.parameters())]
        with torch.no_grad():
            results[kernel + " no_grad"] = list(enc.eval()(x, lengths))
        with torch.inference_mode():
            results[kernel + " inference"] = list(enc(x, lengths))
        enc.train()
    assert all(t is not None for t in results["concurrent"])
    for mode in ("", " no_grad", " inference"):
        for a, b in zip(results["padded" + mode], results["concurrent" + mode], strict=True):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_concurrent_kernel_only_for_the_input_that_needs_a_gradient():
    """A frozen input gets no gradient; the parameters still do."""
    enc = BiRNN(4, 3, kernel="concurrent")
    out, _ = enc(torch.randn(2, 5, 4), torch.tensor([5, 3]))
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in enc.parameters())


def test_auto_kernel_and_thread_counts():
    """auto: concurrent with 2+ torch threads for batches of CONCURRENT_FROM tokens or more, padded with 1 thread
    or for shorter batches; the direction threads leave the caller's count alone."""
    from attnclf.models.encoder import CONCURRENT_FROM

    enc = BiRNN(4, 3)
    T = CONCURRENT_FROM
    x, lengths = torch.randn(2, T, 4), torch.tensor([T, 3])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert enc.resolved_kernel(x) == "padded"
        torch.set_num_threads(2)
        assert enc.resolved_kernel(x) == "concurrent"
        assert enc.resolved_kernel(x[:, : T - 1]) == "padded"  # a short batch: one direction after the other
        enc(x, lengths)
        assert torch.get_num_threads() == 2
        seen = []
        t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        t.start()
        t.join()
        assert seen == [2]  # a new thread still starts with the caller's count
    finally:
        torch.set_num_threads(before)


def _concurrent_forward_in_child(queue):
    enc = BiRNN(4, 3, kernel="concurrent")
    queue.put(enc(torch.randn(2, 5, 4), torch.tensor([5, 3]))[0].shape)


def test_concurrent_kernel_works_in_a_forked_child():
    """The direction threads do not survive a fork: a child makes its own instead of waiting on none."""
    BiRNN(4, 3, kernel="concurrent")(torch.randn(2, 5, 4), torch.tensor([5, 3]))  # the parent's threads
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_concurrent_forward_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0
    assert queue.get(timeout=1) == torch.Size([2, 5, 6])


def test_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="model.rnn_kernel='cudnn'; allowed: auto, concurrent, padded, packed"):
        BiRNN(4, 4, kernel="cudnn")


@pytest.mark.parametrize("attention", ["dot", "additive"])
@pytest.mark.parametrize("layers", [1, 2])
def test_logits_same_alone_and_in_a_padded_batch(attention, layers):
    torch.manual_seed(0)
    model = net(50, embed_dim=8, hidden_dim=8, num_layers=layers, attention=attention).eval()
    short = torch.randint(2, 50, (6,))
    batch = torch.zeros(3, 300, dtype=torch.long)
    batch[0, :6] = short
    batch[1] = torch.randint(2, 50, (300,))
    batch[2, :40] = torch.randint(2, 50, (40,))
    with torch.no_grad():
        alone, w_alone = model(short.unsqueeze(0), torch.tensor([6]))
        padded, w_padded = model(batch, torch.tensor([6, 300, 40]))
    torch.testing.assert_close(alone[0], padded[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(w_alone[0], w_padded[0, :6], atol=1e-5, rtol=0)
    assert (w_padded[0, 6:] == 0).all() and (w_padded[2, 40:] == 0).all()
    torch.testing.assert_close(w_padded.sum(-1), torch.ones(3))


@pytest.mark.parametrize("attention", ["dot", "additive"])
@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_model_learns_and_its_attention_finds_the_signal_word(attention):
    """Label = whether token 2 occurs (once, anywhere) among random tokens: a few hundred AdamW steps take the
    loss far below chance, and the attention puts most of its weight on that one token."""
    torch.manual_seed(0)
    model = net(30, embed_dim=16, hidden_dim=16, attention=attention, dropout=0.0, embed_dropout=0.0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def batch(n=32, T=12):
        ids = torch.randint(3, 30, (n, T))
        y = torch.randint(0, 2, (n,))
        where = torch.randint(0, T, (n,))
        ids[y == 1, where[y == 1]] = 2
        return ids, torch.full((n,), T), y, where

    first = None
    for _ in range(300):
        ids, lengths, y, _ = batch()
        loss = torch.nn.functional.cross_entropy(model(ids, lengths)[0], y)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    ids, lengths, y, where = batch(256)
    with torch.no_grad():
        logits, weights = model(ids, lengths)
    assert first > 0.6 and torch.nn.functional.cross_entropy(logits, y).item() < 0.1
    on_signal = weights[y == 1].gather(1, where[y == 1].unsqueeze(1))
    assert on_signal.mean() > 0.5  # uniform attention would give 1/12


def test_learning_rate_warms_up_linearly_then_decays_by_cosine_to_zero():
    from types import SimpleNamespace

    from attnclf.training.module import ClassifierModule

    module = ClassifierModule(50, 2, classifier_settings(embed_dim=8, hidden_dim=8, lr=1e-2, warmup_ratio=0.1))
    module._trainer = SimpleNamespace(estimated_stepping_batches=100, precision_plugin=None)
    conf = module.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    assert conf["lr_scheduler"]["interval"] == "step"
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[:10] == pytest.approx([1e-2 * (i + 1) / 10 for i in range(10)])  # 10 warm-up steps
    assert lrs[10] == pytest.approx(1e-2)  # the peak, then cosine over the other 90
    assert lrs[55] == pytest.approx(0.5e-2)  # half-way
    assert lrs[99] == pytest.approx(1e-2 * 0.5 * (1 + math.cos(math.pi * 89 / 90)))
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))


def test_weight_decay_only_on_weight_matrices_not_the_embedding_or_biases():
    from attnclf.training.module import adamw

    model = net(50, embed_dim=8, hidden_dim=8, attention="dot")
    opt = adamw(model, 1e-3, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for g in opt.param_groups if g["weight_decay"] == 0.05 for p in g["params"]}
    free = {names[id(p)] for g in opt.param_groups if g["weight_decay"] == 0.0 for p in g["params"]}
    assert decayed | free == set(names.values()) and not decayed & free
    assert "embed.weight" in free and all("bias" in n for n in free - {"embed.weight"})
    assert decayed == {n for n, p in model.named_parameters() if p.ndim >= 2 and n != "embed.weight"}
    assert "fc.weight" in decayed and "encoder.fwd.0.weight_hh_l0" in decayed


def test_dropout_keeps_1_minus_p_scaled_and_its_gradient_follows_the_mask():
    torch.manual_seed(0)
    drop = Dropout(0.2)
    x = torch.full((200, 500), 3.0, requires_grad=True)
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.8) < 0.005  # 100,000 draws: sd 0.0013
    assert torch.equal(y[kept], torch.full_like(y[kept], 3.0 / 0.8))
    y.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.8)
    assert torch.equal(drop.eval()(x), x)
    assert torch.equal(Dropout(1.0)(x), torch.zeros_like(x))


def test_an_attention_map_marks_the_highest_weighted_words():
    from attnclf.presentation.figures import attention_heatmap
    from attnclf.presentation.markdown import top_words_marked

    words = ["a", "superb", "film", "and", "awful", "end"]
    weights = np.array([0.05, 0.5, 0.1, 0.05, 0.25, 0.05])
    assert top_words_marked(words, weights, 2) == "a **superb**(0.50) film and **awful**(0.25) end"
    fig = attention_heatmap(words, weights, "title", columns=3)
    grid = fig.axes[0].images[0].get_array()
    assert grid.shape == (2, 3) and np.allclose(np.asarray(grid).ravel(), weights)  # reading order, 3 a row
    assert [t.get_text() for t in fig.axes[0].texts] == words
