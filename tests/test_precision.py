"""The parts of the GPU path that a CPU can prove: bf16 mixed precision, the GRU's precision under
autocast, the packed bidirectional kernel, gradient clipping with a fused optimizer, no device reads
for packing, and the DDP sampler giving the ranks batches of similar lengths."""

import json

import numpy as np
import pytest
import torch
from helpers.classifier import classifier_settings, net
from helpers.config import compose_cfg, tiny_overrides

from attnclf.commands.train import train
from attnclf.data.sampling import BucketBatchSampler
from attnclf.models.encoder import BiRNN
from attnclf.training.module import ClassifierModule, adamw

QUIET = ["logger=none", "callbacks.rich_progress_bar=null", "callbacks.attention_maps=null"]


@pytest.mark.parametrize("kernel", ["concurrent", "padded", "packed"])
@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_bf16_mixed_trains_in_one_process(tiny_imdb, tmp_path, attention, kernel):
    """trainer.precision=bf16-mixed (what trainer=gpu and trainer=ddp set) with gradient clipping on and
    the fused AdamW: Lightning refused this combination at the first step."""
    cfg = compose_cfg(
        [
            *tiny_overrides(tiny_imdb, tmp_path),
            *QUIET,
            f"attention={attention}",
            f"model.rnn_kernel={kernel}",
            "trainer.precision=bf16-mixed",
            "trainer.max_epochs=1",
            "trainer.limit_train_batches=4",
            "trainer.limit_val_batches=1",
            "trainer.limit_test_batches=1",
            "trainer.num_sanity_val_steps=0",
        ]
    )
    assert cfg.trainer.gradient_clip_val == 1.0
    train(cfg)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["steps"] == 4
    assert np.isfinite([m["val/acc"], m["test/acc"], m["test/loss"]]).all()
    state = torch.load(m["best_checkpoint"], weights_only=True)["state_dict"]
    assert all(t.dtype == torch.float32 for t in state.values() if t.is_floating_point())  # fp32 master weights


def test_the_gru_runs_in_float32_under_autocast():
    """Under bf16 autocast the encoder's numbers are exactly its float32 numbers; the classifier's are bf16."""
    torch.manual_seed(0)
    model = net(100, embed_dim=16, hidden_dim=16, rnn_kernel="padded").eval()
    ids, lengths = torch.randint(2, 100, (4, 9)), torch.tensor([9, 5, 3, 1])
    x = model.embed(ids)
    with torch.no_grad():
        plain = model.encoder(x, lengths)
        with torch.autocast("cpu", torch.bfloat16):
            cast = model.encoder(x, lengths)
            logits, weights = model(ids, lengths)
    assert cast[0].dtype == cast[1].dtype == torch.float32
    assert torch.equal(cast[0], plain[0]) and torch.equal(cast[1], plain[1])
    assert logits.dtype == torch.bfloat16


@pytest.mark.parametrize("layers", [1, 2])
def test_packed_bidirectional_kernel_same_gradients_as_padded(layers):
    """One bidirectional call per layer on the two directions' own parameters: the same outputs and
    gradients as the exact padded kernel, and no parameters of its own (checkpoints move between kernels)."""
    torch.manual_seed(0)
    enc = BiRNN(4, 6, num_layers=layers)
    names = [n for n, _ in enc.named_parameters()]
    x, lengths = torch.randn(4, 11, 4), torch.tensor([2, 11, 7, 1])
    mask = torch.arange(11) < lengths.unsqueeze(1)
    results = {}
    for kernel in ("padded", "packed"):
        enc.kernel = kernel
        enc.zero_grad()
        xk = x.clone().requires_grad_(True)
        out, final = enc(xk, lengths)
        (out[mask].square().sum() + final.sum()).backward()
        results[kernel] = (out[mask], final, xk.grad, [p.grad.clone() for p in enc.parameters()])
    for a, b in zip(results["packed"][:3], results["padded"][:3], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    for a, b in zip(results["packed"][3], results["padded"][3], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert [n for n, _ in enc.named_parameters()] == names and list(enc.state_dict()) == names


def test_packing_reads_only_the_host_copy_of_the_lengths():
    """Given the host copy, the packing order never touches the device lengths (on a GPU: a sync)."""
    host = torch.tensor([3, 9, 1, 9, 4])
    on_device = torch.empty(5, dtype=torch.long, device="meta")  # any read of its values fails
    order, inverse, sorted_lengths = BiRNN.packing_order(on_device, host, torch.device("cpu"))
    assert sorted_lengths.tolist() == [9, 9, 4, 3, 1]
    assert order.tolist() == [1, 3, 4, 0, 2] and torch.equal(order[inverse], torch.arange(5))


@pytest.mark.parametrize("algorithm", ["norm", "value"])
def test_gradient_clipping_without_a_loss_scaler(algorithm):
    """configure_gradient_clipping clips with torch's functions (the fused optimizer stays allowed)."""
    module = ClassifierModule(50, 2, classifier_settings(embed_dim=8, hidden_dim=8))
    opt = adamw(module.model, 1e-3, 0.01, fused=True)
    for p in module.parameters():
        p.grad = torch.full_like(p, 3.0)
    module.configure_gradient_clipping(opt, 1.0, algorithm)
    grads = torch.cat([p.grad.flatten() for p in module.parameters()])
    if algorithm == "norm":
        assert grads.norm() == pytest.approx(1.0, rel=1e-4)
    else:
        assert grads.abs().max() == 1.0
    module.configure_gradient_clipping(opt, 0.0, algorithm)  # 0: no clipping
    assert torch.equal(torch.cat([p.grad.flatten() for p in module.parameters()]), grads)


def test_ddp_ranks_get_batches_of_similar_lengths_at_each_step():
    """Under DDP the two ranks' batches at one step are neighbours in length order (one pool here),
    so neither waits for a much longer batch; every batch is still used and the steps are shuffled."""
    lengths = np.random.default_rng(0).permutation(640) + 1
    ranks = [list(BucketBatchSampler(lengths, 16, True, seed=3, pool=100, num_replicas=2, rank=r)) for r in (0, 1)]
    assert len(ranks[0]) == len(ranks[1]) == 20
    for b0, b1 in zip(*ranks, strict=True):
        assert abs(max(lengths[b0]) - max(lengths[b1])) <= 16  # adjacent batches of 16 sorted lengths
    seen = sorted(i for r in ranks for b in r for i in b)
    assert seen == list(range(640))
    first = [max(lengths[b]) for b in ranks[0]]
    assert first != sorted(first)  # the steps themselves come in a shuffled order


def test_a_moved_batch_keeps_its_lengths_on_the_host():
    """(ids, lengths, labels) -> (ids, host lengths, labels, device lengths): the packed GRU and the
    throughput count read the host copy, never the device one."""
    from attnclf.data.datamodule import TextDataModule
    from attnclf.training.module import unpack

    ids, lengths, y = torch.zeros(2, 3, dtype=torch.long), torch.tensor([3, 1]), torch.tensor([0, 1])
    moved = TextDataModule().transfer_batch_to_device((ids, lengths, y), torch.device("cpu"), 0)
    assert len(moved) == 4 and moved[1] is lengths
    b_ids, b_lengths, b_y, host = unpack(moved)
    assert torch.equal(b_lengths, lengths) and host is lengths and torch.equal(b_y, y)
    assert unpack((ids, lengths, y))[3] is lengths  # a batch straight from the loader
