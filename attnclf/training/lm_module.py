"""The LightningModule that pretrains the encoder as two language models (`attnclf pretrain`): the models are
attnclf/models/language_model.py's, the texts attnclf/data/lm.py's."""

from __future__ import annotations

import logging

import torch
from torchmetrics import MeanMetric

from attnclf.models.language_model import KIND, BiGRULanguageModel
from attnclf.settings.lm import LMConfig
from attnclf.training.module import TrainingModule, unpack

log = logging.getLogger(__name__)


class LanguageModelModule(TrainingModule):
    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, lm: LMConfig, freeze_embeddings: bool):
        """Both language models of these sizes, built and optimised by `lm` (its defaults: LMConfig's)."""
        super().__init__()
        # flat, as every pretraining checkpoint has held them (model.init_from and ckpt_path=last read them)
        self.save_hyperparameters(
            {
                "vocab_size": vocab_size,
                "embed_dim": embed_dim,
                "hidden_dim": hidden_dim,
                **lm.model_keys(),
                "schedule": "cosine",
                "freeze_embeddings": freeze_embeddings,
                "kind": KIND,
            },
            logger=False,
        )
        self.model = BiGRULanguageModel(vocab_size, embed_dim, hidden_dim, lm)
        # (model.freeze_embeddings: the GRUs learn on the vectors the embedding starts from, which a classifier
        # started from these models then starts from too)
        self.model.embed.weight.requires_grad_(not freeze_embeddings)
        # this validation's mean NLL per predicted token, for val/ppl
        self.val_nll = MeanMetric()

    def _losses(self, batch) -> tuple[torch.Tensor, torch.Tensor, int]:
        ids, lengths, _, host = unpack(batch)
        loss_f, loss_b = self.model(ids, lengths)
        return loss_f, loss_b, int((host - 1).clamp(min=0).sum())

    def training_step(self, batch, batch_idx):
        loss_f, loss_b, n = self._losses(batch)
        loss = (loss_f + loss_b) / 2
        self._check_finite(loss)
        self.log("train/loss", loss, prog_bar=True, batch_size=max(n, 1))
        self.log("train/ppl", torch.exp(loss.detach()), batch_size=max(n, 1))
        return loss

    def validation_step(self, batch, batch_idx):
        loss_f, loss_b, n = self._losses(batch)
        loss = (loss_f + loss_b) / 2
        # weighted by predicted tokens, summed over ranks
        self.val_nll.update(loss, max(n, 1))
        kw = dict(batch_size=max(n, 1), sync_dist=True)
        self.log("val/loss", loss, prog_bar=True, **kw)
        self.log("val/loss_forward", loss_f, **kw)
        self.log("val/loss_backward", loss_b, **kw)

    def on_validation_epoch_end(self) -> None:
        self.log("val/ppl", torch.exp(self.val_nll.compute()))
        self.val_nll.reset()
