"""The CUDA path, on a GPU only (skipped elsewhere; `bash scripts/gpu_check.sh` runs them on a CUDA machine).

What a CPU can prove of the same path (bf16 autocast, the packed kernel's logic, gloo DDP) is in
test_precision.py.
"""

import json
import subprocess
import sys

import pytest
import torch
from helpers.classifier import classifier_settings, net
from helpers.config import ROOT, compose_cfg, tiny_overrides

from attnclf.models.encoder import BiRNN
from attnclf.training.module import adamw, unpack

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

GPU = ["trainer=gpu", "logger=none", "callbacks.rich_progress_bar=null", "callbacks.attention_maps=null"]


def gpu_overrides(tiny_imdb, out):
    return [o for o in tiny_overrides(tiny_imdb, out) if o != "trainer.accelerator=cpu"] + GPU


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_bf16_mixed_training_steps_on_cuda(tiny_imdb, tmp_path, attention):
    from attnclf.commands.train import train

    cfg = compose_cfg([*gpu_overrides(tiny_imdb, tmp_path), f"attention={attention}", "experiment=smoke"])
    assert cfg.trainer.precision == "bf16-mixed"
    train(cfg)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["steps"] > 0 and m["peak_gpu_mb"] > 0
    assert 0 <= m["test/acc"] <= 1 and m["test/loss"] == m["test/loss"]  # (not nan)


# TF32 (the default for cuDNN's RNN) keeps 10 mantissa bits: about 1e-3 relative per product
TOLERANCE = {"tf32": dict(atol=2e-2, rtol=2e-2), "fp32": dict(atol=1e-5, rtol=1e-4)}


@pytest.mark.parametrize("math", ["tf32", "fp32"])
def test_cuda_encoder_matches_the_cpu_exact_encoder(math):
    """The packed bidirectional cuDNN kernel gives the CPU kernel's outputs on the same weights and reviews."""
    torch.manual_seed(0)
    cpu = BiRNN(16, 32, num_layers=2, kernel="padded").eval()
    gpu = BiRNN(16, 32, num_layers=2, kernel="packed").eval()
    gpu.load_state_dict(cpu.state_dict())  # the same parameter names on every kernel
    gpu.cuda()
    lengths = torch.tensor([40, 3, 17, 1, 40, 25])
    x = torch.randn(6, 40, 16)
    mask = torch.arange(40) < lengths.unsqueeze(1)
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = math == "tf32"
    try:
        with torch.no_grad():
            out_c, final_c = cpu(x, lengths)
            out_g, final_g = gpu(x.cuda(), lengths.cuda(), lengths)
    finally:
        torch.backends.cudnn.allow_tf32 = before
    torch.testing.assert_close(out_g.cpu()[mask], out_c[mask], **TOLERANCE[math])
    torch.testing.assert_close(final_g.cpu(), final_c, **TOLERANCE[math])


def test_output_dtypes_under_bf16_autocast():
    model = net(100, embed_dim=16, hidden_dim=16).cuda()
    ids, lengths = torch.randint(2, 100, (4, 9)).cuda(), torch.tensor([9, 5, 3, 1])
    with torch.autocast("cuda", torch.bfloat16):
        out, final = model.encoder(model.embed(ids), lengths.cuda(), lengths)
        logits, weights = model(ids, lengths.cuda(), lengths)
    assert out.dtype == final.dtype == torch.float32  # the GRU in fp32/TF32
    assert logits.dtype == torch.bfloat16  # the classifier in the autocast dtype
    assert all(p.dtype == torch.float32 for p in model.parameters())  # master weights


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_no_host_sync_inside_a_training_step(attention):
    """Forward, loss, finiteness check, backward, clipping and the fused AdamW step never wait for the GPU."""
    from attnclf.training.module import ClassifierModule

    torch.manual_seed(0)
    module = ClassifierModule(500, 2, classifier_settings(attention, embed_dim=32, hidden_dim=32)).cuda()
    opt = adamw(module.model, 1e-3, 0.01, fused=True)
    lengths = torch.randint(1, 60, (16,))
    ids = torch.randint(2, 500, (16, int(lengths.max()))).pin_memory()
    y = torch.randint(0, 2, (16,)).pin_memory()
    host = lengths.pin_memory()

    def step():
        # as TextDataModule.transfer_batch_to_device moves it: (ids, host lengths, labels, lengths)
        batch = (ids.cuda(non_blocking=True), host, y.cuda(non_blocking=True), host.cuda(non_blocking=True))
        b_ids, b_lengths, b_y, b_host = unpack(batch)
        with torch.autocast("cuda", torch.bfloat16):
            logits, _ = module(b_ids, b_lengths, b_host)
            loss = torch.nn.functional.cross_entropy(logits.float(), b_y)
        module._check_finite(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # the first step sets up cuDNN and the allocator
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            step()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()


def test_a_checkpoint_trained_on_cuda_evaluates_and_predicts_on_cpu(tiny_imdb, tmp_path):
    from attnclf.commands.train import train

    train(compose_cfg([*gpu_overrides(tiny_imdb, tmp_path), "experiment=smoke"]))
    best = json.loads((tmp_path / "metrics.json").read_text())["best_checkpoint"]
    ev = subprocess.run(
        [sys.executable, "-m", "attnclf", "eval", f"ckpt={best}", f"data.path={tiny_imdb}", "device=cpu"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ev.returncode == 0, ev.stderr[-2000:]
    result = json.loads((tmp_path / "eval_test.json").read_text())
    assert result["reviews"] == 80
    pr = subprocess.run(
        [sys.executable, "-m", "attnclf", "predict", f"ckpt={best}", "text=a wonderful superb film"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pr.returncode == 0, pr.stderr[-2000:]
    assert "wonderful" in pr.stdout
