"""The GRU's precision under bf16 mixed precision: time of a training step and how far the gradients move.

    python scripts/bench_precision.py [--device cpu|cuda] [--batch 64] [--length 220] [--repeats 15]

One batch of random reviews (lengths within 10% of `--length`), the default
model (embed 128, hidden 128, dot attention), three ways:
- `fp32`: no autocast (trainer.precision=32-true);
- `bf16, GRU fp32` (the product under bf16-mixed): autocast, the GRU in float32 (TF32 on CUDA);
- `bf16, GRU autocast`: autocast left to decide the GRU's dtype (on CUDA, cuDNN's RNN in float16 even
  under a bf16 autocast; on CPU, the GRU's matrix products in bf16).
For each: the median ms of forward + backward + clipping + fused AdamW (`--repeats`, round robin after a
warm-up), and the relative error of the GRU's and of all parameters' gradients against fp32 on the same
weights and batch (||g - g_fp32|| / ||g_fp32||). Timings, not a test.
"""

from __future__ import annotations

import argparse
import copy

import torch
import torch.nn.functional as F
from harness import medians_ms  # (scripts/harness.py: what the benchmarks share)

from attnclf.models.classifier import ClassifierNet
from attnclf.models.encoder import BiRNN
from attnclf.settings.attention import DEFAULT_ATTENTION, AttentionConfig
from attnclf.settings.model import ModelConfig
from attnclf.training.module import adamw

MODES = {"fp32": (False, True), "bf16, GRU fp32": (True, True), "bf16, GRU autocast": (True, False)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=220)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--vocab", type=int, default=30000)
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    base = ClassifierNet(args.vocab, 2, AttentionConfig.named(DEFAULT_ATTENTION), ModelConfig()).to(device)
    B, T = args.batch, args.length
    host = torch.randint(int(0.9 * T), T + 1, (B,))
    ids = torch.randint(2, args.vocab, (B, int(host.max())), device=device)
    lengths, y = host.to(device), torch.randint(0, 2, (B,), device=device)

    def grads(autocast: bool, gru_fp32: bool, model) -> dict:
        BiRNN.float32_under_autocast = gru_fp32
        model.zero_grad(set_to_none=True)
        with torch.autocast(device.type, torch.bfloat16, enabled=autocast):
            logits, _ = model(ids, lengths, host)
            loss = F.cross_entropy(logits.float(), y)
        loss.backward()
        return {n: p.grad.detach().float().clone() for n, p in model.named_parameters()}

    base.eval()  # (no dropout: the same function in every mode)
    ref = grads(False, True, base)

    def rel(g: dict, prefix: str = "") -> float:
        keys = [k for k in g if k.startswith(prefix)]
        num = sum((g[k] - ref[k]).square().sum() for k in keys) ** 0.5
        return float(num / sum(ref[k].square().sum() for k in keys) ** 0.5)

    errors = {name: grads(*flags, base) for name, flags in MODES.items()}
    models = {name: copy.deepcopy(base).train() for name in MODES}
    opts = {name: adamw(m, 2e-3, 0.01, fused=True) for name, m in models.items()}

    def step(name: str) -> None:
        autocast, gru_fp32 = MODES[name]
        model, opt = models[name], opts[name]
        grads(autocast, gru_fp32, model)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()

    ms_of = medians_ms({name: lambda name=name: step(name) for name in MODES}, args.repeats)
    BiRNN.float32_under_autocast = True
    print(f"device {device} | batch {B} x ~{T} tokens | torch {torch.__version__} | {torch.get_num_threads()} threads")
    print(f"{'mode':<20}{'step ms':>9}{'tokens/s':>11}{'GRU grad rel. err':>19}{'all grads rel. err':>20}")
    for name in MODES:
        ms = ms_of[name]
        print(
            f"{name:<20}{ms:>9.1f}{int(host.sum()) / ms * 1000:>11,.0f}"
            f"{rel(errors[name], 'encoder.'):>19.2e}{rel(errors[name]):>20.2e}"
        )


if __name__ == "__main__":
    main()
