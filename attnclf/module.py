"""The LightningModule: loss, metrics, optimiser and schedule around AttentionClassifier."""

from __future__ import annotations

import math

import pytorch_lightning as L
import torch
import torch.nn.functional as F
from torchmetrics import MaxMetric
from torchmetrics.classification import MulticlassAccuracy

from attnclf.errors import AttnclfError
from attnclf.model import AttentionClassifier

SCHEDULES = ("cosine", "constant")


def attention_sharpness(weights: torch.Tensor, k: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """Per review: entropy of the weights (nats; padding has weight 0) and the share of weight on the top-k tokens."""
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1)  # (B,)
    top = weights.topk(min(k, weights.size(-1)), dim=-1).values.sum(-1)  # (B,)
    return entropy, top


def adamw(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with no weight decay on biases and the embedding (rare words would be pulled to 0)."""
    decays = {n: p.ndim >= 2 and not n.startswith("embed") for n, p in model.named_parameters()}
    groups = [
        {"params": [p for n, p in model.named_parameters() if decays[n]], "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if not decays[n]], "weight_decay": 0.0},
    ]
    # fused: one kernel for all parameters (about 4x faster a step than the per-parameter loop on CPU)
    return torch.optim.AdamW(groups, lr=lr, fused=True)


class AttnClassifierModule(L.LightningModule):
    def __init__(
        self,
        vocab_size: int,
        num_classes: int = 2,
        attention: str = "dot",
        embed_dim: int = 128,
        hidden_dim: int = 128,
        num_layers: int = 1,
        attention_dim: int | None = None,
        attention_scale: bool = True,
        attention_init: str = "xavier",
        dropout: float = 0.3,
        embed_dropout: float = 0.2,
        gru_kernel: str = "auto",
        lr: float = 2e-3,
        weight_decay: float = 0.01,
        schedule: str = "cosine",
        warmup_ratio: float = 0.05,
    ):
        super().__init__()
        if schedule not in SCHEDULES:
            raise AttnclfError(f"optimizer.schedule={schedule!r}; allowed: {', '.join(SCHEDULES)}")
        # logger=False: train(cfg) writes the hparams once, at the end, with the final metrics
        self.save_hyperparameters(logger=False)
        self.model = AttentionClassifier(
            vocab_size,
            num_classes,
            embed_dim,
            hidden_dim,
            num_layers,
            attention,
            attention_dim,
            attention_scale,
            attention_init,
            dropout,
            embed_dropout,
            gru_kernel,
        )
        self.train_acc = MulticlassAccuracy(num_classes, average="micro")
        self.val_acc = MulticlassAccuracy(num_classes, average="micro")
        self.test_acc = MulticlassAccuracy(num_classes, average="micro")
        self.val_acc_best = MaxMetric()  # (the sanity check does not update it: on_validation_epoch_end)
        self.val_acc_best.persistent(True)  # in the checkpoint, so a resumed run keeps its best

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model(ids, lengths)

    def training_step(self, batch, batch_idx):
        ids, lengths, y = batch
        logits, _ = self(ids, lengths)
        loss = F.cross_entropy(logits, y)
        if not torch.isfinite(loss):
            raise AttnclfError(
                f"train/loss became {loss.item()} at step {self.global_step}; stopping "
                "(the last good checkpoint is kept; try a smaller optimizer.lr)"
            )
        self.train_acc(logits.argmax(-1), y)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(y))
        self.log("train/acc", self.train_acc, on_step=False, on_epoch=True, batch_size=len(y))
        return loss

    def _eval_step(self, batch, stage: str, acc: MulticlassAccuracy):
        ids, lengths, y = batch
        logits, weights = self(ids, lengths)
        acc(logits.argmax(-1), y)
        entropy, top5 = attention_sharpness(weights)
        n = len(y)
        self.log(f"{stage}/loss", F.cross_entropy(logits, y), batch_size=n, sync_dist=True)
        self.log(f"{stage}/acc", acc, batch_size=n, prog_bar=True)
        self.log(f"{stage}/attn_entropy", entropy.mean(), batch_size=n, sync_dist=True)
        self.log(f"{stage}/attn_top5", top5.mean(), batch_size=n, sync_dist=True)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        # never replace a good checkpoint with a diverged one
        bad = next((n for n, p in self.named_parameters() if not torch.isfinite(p).all()), None)
        if bad is not None:
            raise AttnclfError(
                f"parameter {bad} became nan/inf by step {self.global_step}; stopping "
                "(the last good checkpoint is kept; try a smaller optimizer.lr)"
            )
        # dropout's random stream, so that a resumed run continues exactly where it stopped
        checkpoint["torch_rng_state"] = torch.get_rng_state()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if "torch_rng_state" in checkpoint:
            torch.set_rng_state(checkpoint["torch_rng_state"].cpu())

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "val", self.val_acc)

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        self.val_acc_best(self.val_acc.compute())
        self.log("val/acc_best", self.val_acc_best.compute(), sync_dist=True)

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test", self.test_acc)

    def configure_optimizers(self):
        hp = self.hparams
        opt = adamw(self.model, hp.lr, hp.weight_decay)
        if hp.schedule == "constant":
            return opt
        total = max(int(self.trainer.estimated_stepping_batches), 1)
        warmup = int(hp.warmup_ratio * total)

        def factor(step: int) -> float:  # linear warm-up, then cosine decay to 0
            if step < warmup:
                return (step + 1) / warmup
            return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(total - warmup, 1))))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
