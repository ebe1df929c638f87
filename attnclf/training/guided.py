"""Models trained under a trained classifier (the base, frozen): Wiegreffe & Pinter's two tests (2019,
"Attention is not not Explanation"; code: github.com/sarahwie/attention).

- `diagnostic`: a context-free model (attnclf.models.context_free) trained on the labels, pooling with the
  base's attention weights held fixed (`frozen`), with uniform weights, or with an attention of its own
  (`learned`); or, given `source`, with another trained model's weights held fixed (an adversary's: their
  Table 3's last row). Its JSD is of the weights it pooled with from the base's.
- `adversarial`: a model of the base's own architecture trained from a fresh start to give the base's
  predictions with attention as far as it can from the base's: loss = TVD(its output, the base's) - lambda x
  KL(its weights || the base's), per review (theirs sum over a batch; here the mean: lambda is per review
  either way). Adam with AMSGrad at 1e-3 and weight decay 1e-5, as theirs.
"""

from __future__ import annotations

import pytorch_lightning as L
import torch
import torch.nn.functional as F
from torch import nn

from attnclf.analysis.adversarial import jsd, kl
from attnclf.training.module import unpack


class GuidedModule(L.LightningModule):
    def __init__(
        self,
        base: nn.Module,
        student: nn.Module,
        test: str,
        weights: str = "frozen",
        lam: float = 0.0,
        lr: float = 1e-3,
        source: nn.Module | None = None,
    ):
        super().__init__()
        self.base, self.student = base.eval().requires_grad_(False), student
        # the diagnostic's frozen weights: the base's own, or `source`'s (a model of the base's kind)
        self.source = None if source is None else source.eval().requires_grad_(False)
        self.test, self.weights, self.lam, self.lr = test, weights, lam, lr
        self.outputs: dict[str, list] = {"correct": [], "base_correct": [], "tvd": [], "jsd": []}
        # the frozen weights of each review read so far, by its token ids: a model held fixed gives a review
        # the same weights every epoch, so they are computed once (the fixed model's pass is most of an epoch)
        self.held: dict[bytes, torch.Tensor] = {}

    def _step(self, batch, everything: bool = False):
        """(labels, the student's logits and weights, the base's logits and weights) of a batch. The base runs
        only where its output is used: always with `everything` (the test), else where the loss needs it (the
        adversarial loss) or the student pools with its weights (the diagnostic's frozen weights, where no
        `source` gives them); (None, None) in its place otherwise."""
        ids, lengths, y, host = unpack(batch)
        base_logits = base_w = None
        if everything or self.test == "adversarial":
            with torch.no_grad():
                self.base.eval()
                base_logits, base_w = self.base(ids, lengths, host)
        if self.test == "diagnostic":
            logits, w = self.student(ids, lengths, self._frozen(ids, lengths, host))
        else:
            logits, w = self.student(ids, lengths, host)
        return y, logits, w, base_logits, base_w

    def _frozen(self, ids, lengths, host):
        """The diagnostic's weights held fixed (B, T): the base's, or `source`'s; None: uniform or its own.
        Each review's are computed the first time it is read, then kept."""
        if self.weights != "frozen":
            return None
        ns = host.tolist()
        keys = [ids[i, :n].cpu().numpy().tobytes() for i, n in enumerate(ns)]
        if any(k not in self.held for k in keys):
            model = self.base if self.source is None else self.source
            with torch.no_grad():
                model.eval()
                w = model(ids, lengths, host)[1]  # (B, T)
            self.held.update((k, w[i, :n]) for i, (k, n) in enumerate(zip(keys, ns, strict=True)))
        # (B, T): 0 past each review's end
        out = ids.new_zeros(ids.shape, dtype=torch.float)
        for i, (k, n) in enumerate(zip(keys, ns, strict=True)):
            out[i, :n] = self.held[k]
        return out

    def training_step(self, batch, batch_idx):
        y, logits, w, base_logits, base_w = self._step(batch)
        if self.test == "diagnostic":
            loss = F.cross_entropy(logits, y)
        else:
            tvd = 0.5 * (logits.softmax(-1) - base_logits.softmax(-1)).abs().sum(-1)  # (B,)
            loss = (tvd - self.lam * kl(w, base_w)).mean()
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        y, logits, *_ = self._step(batch)
        self.log("val/acc", (logits.argmax(-1) == y).float().mean(), prog_bar=True)

    def test_step(self, batch, batch_idx):
        y, logits, w, base_logits, base_w = self._step(batch, everything=True)
        self.outputs["correct"].append((logits.argmax(-1) == y).cpu())
        self.outputs["base_correct"].append((base_logits.argmax(-1) == y).cpu())
        self.outputs["tvd"].append((0.5 * (logits.softmax(-1) - base_logits.softmax(-1)).abs().sum(-1)).cpu())
        self.outputs["jsd"].append(jsd(w, base_w).cpu())

    def configure_optimizers(self):
        return torch.optim.Adam(self.student.parameters(), lr=self.lr, weight_decay=1e-5, amsgrad=True)
