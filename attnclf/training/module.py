"""The LightningModule: loss, metrics, optimiser and schedule around ClassifierNet."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytorch_lightning as L
import torch
import torch.nn.functional as F
from torchmetrics import MaxMetric
from torchmetrics.classification import MulticlassAccuracy, MulticlassConfusionMatrix, MulticlassF1Score

from attnclf.errors import AttnclfError
from attnclf.models.classifier import ClassifierNet
from attnclf.settings.attention import AttentionConfig
from attnclf.settings.model import (
    CLASSIFIER,
    ClassifierConfig,
    ModelConfig,
    OptimizerConfig,
    RegularizerConfig,
)
from attnclf.training.regularizers import adversarial_losses, virtual_adversarial_loss

log = logging.getLogger(__name__)


def attention_sharpness(weights: torch.Tensor, k: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """Per review: entropy of the weights (nats; padding has weight 0) and the share of weight on the top-k tokens."""
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1)  # (B,)
    top = weights.topk(min(k, weights.size(-1)), dim=-1).values.sum(-1)  # (B,)
    return entropy, top


# the parameters a pretrained start (model.init_from) gives: names' prefixes
ENCODER = ("embed", "encoder")


def adamw(
    model: torch.nn.Module, lr: float, weight_decay: float, fused: bool = True, encoder_lr_scale: float = 1.0
) -> torch.optim.AdamW:
    """AdamW with no weight decay on biases and the embedding (rare words would be pulled to 0).

    `encoder_lr_scale`: the embedding's and encoder's rate as a share of `lr` (their groups' own "lr"; the
    schedule scales every group alike). `fused`: one kernel for all parameters (about 4x faster a step than
    the per-parameter loop on CPU); off under a loss scaler (16-mixed), which must unscale the gradients
    before they are clipped.
    """
    decays = {n: p.ndim >= 2 and not n.startswith("embed") for n, p in model.named_parameters()}
    # one rate: two groups, with and without weight decay (the layout checkpoints hold)
    scaled = encoder_lr_scale != 1
    groups = []
    for encoder in (False, True) if scaled else (False,):
        named = [(n, p) for n, p in model.named_parameters() if not scaled or n.startswith(ENCODER) == encoder]
        for decay in (True, False):
            params = [p for n, p in named if decays[n] == decay]
            if params or not scaled:
                rate = lr * encoder_lr_scale if encoder else lr
                groups.append({"params": params, "weight_decay": weight_decay if decay else 0.0, "lr": rate})
    return torch.optim.AdamW(groups, lr=lr, fused=fused, foreach=None if fused else True)


def unpack(batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids, lengths, labels, host lengths) of a batch from the loader (ids, lengths, labels), or of one
    moved to the device (ids, host lengths, labels, lengths: TextDataModule.transfer_batch_to_device)."""
    if len(batch) == 4:
        ids, host, y, lengths = batch
        return ids, lengths, y, host
    ids, lengths, y = batch
    return ids, lengths, y, lengths


class TrainingModule(L.LightningModule):
    """What every model trained here shares: AdamW on `self.model` with warm-up and cosine decay, gradient
    clipping that keeps the fused optimizer, and a stop on a nan/inf loss. The hyperparameters `lr`,
    `weight_decay`, `schedule` and `warmup_ratio` come from the subclass's save_hyperparameters()."""

    # on a GPU: (first bad step, its loss)
    _bad_loss: tuple[torch.Tensor, torch.Tensor] | None = None

    def _check_finite(self, loss: torch.Tensor) -> None:
        """Stop on a nan/inf loss. On CPU at once; on a GPU the first bad step is kept on the device and
        read every `log_every_n_steps` steps and before a checkpoint (reading it each step would wait for
        the step to finish, and the GPU would idle while the next one is launched)."""
        if loss.device.type == "cpu":
            if not torch.isfinite(loss):
                self._raise_bad_loss(self.global_step, loss.item())
            return
        loss = loss.detach().float()
        if self._bad_loss is None:
            self._bad_loss = (torch.full((), -1, device=loss.device), torch.zeros((), device=loss.device))
        step, value = self._bad_loss
        first = ~torch.isfinite(loss) & (step < 0)
        self._bad_loss = (torch.where(first, self.global_step, step), torch.where(first, loss, value))

    def _stop_if_bad_loss(self) -> None:
        if self._bad_loss is not None and int(self._bad_loss[0]) >= 0:
            self._raise_bad_loss(int(self._bad_loss[0]), float(self._bad_loss[1]))

    def _raise_bad_loss(self, step: int, value: float):
        raise AttnclfError(
            f"train/loss became {value} at step {step}; stopping "
            "(the last good checkpoint is kept; try a smaller optimizer.lr)"
        )

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:
        if self.global_step % self.trainer.log_every_n_steps == 0:
            self._stop_if_bad_loss()

    def on_train_epoch_end(self) -> None:
        self._stop_if_bad_loss()

    def _loss_scaler(self):
        return getattr(self.trainer.precision_plugin, "scaler", None) if self._trainer is not None else None

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        """Clip with torch's own functions when no loss scaler is in play (32-true, bf16-mixed).

        Lightning's mixed-precision plugin refuses to clip for a fused optimizer under any *-mixed
        precision, bf16 included, although only a loss scaler (16-mixed) needs the gradients unscaled
        first; with one, the optimizer is not fused and Lightning's own path unscales, then clips.
        """
        if self._loss_scaler() is not None:
            return self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)
        if not gradient_clip_val:
            return
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if gradient_clip_algorithm == "value":
            torch.nn.utils.clip_grad_value_(params, gradient_clip_val)
        # no error_if_nonfinite: that reads the norm back from the device every step
        else:
            torch.nn.utils.clip_grad_norm_(params, gradient_clip_val)

    def optimizer_settings(self):
        """lr, weight_decay, schedule, warmup_ratio (the language models': their flat hyperparameters)."""
        return self.hparams

    def configure_optimizers(self):
        hp = self.optimizer_settings()
        # the language models': one rate
        scale = getattr(hp, "encoder_lr_scale", 1.0)
        opt = adamw(self.model, hp.lr, hp.weight_decay, fused=self._loss_scaler() is None, encoder_lr_scale=scale)
        if hp.schedule == "constant":
            return opt
        total = max(int(self.trainer.estimated_stepping_batches), 1)
        warmup = int(hp.warmup_ratio * total)

        # linear warm-up, then cosine decay to 0
        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(total - warmup, 1))))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        # never replace a good checkpoint with a diverged one
        self._stop_if_bad_loss()
        bad = next((n for n, p in self.named_parameters() if not torch.isfinite(p).all()), None)
        if bad is not None:
            raise AttnclfError(
                f"parameter {bad} became nan/inf by step {self.global_step}; stopping "
                "(the last good checkpoint is kept; try a smaller optimizer.lr)"
            )
        # dropout's random streams, so that a resumed run continues exactly where it stopped: every rank's
        # own (their batches differ), the CPU's and, where dropout draws on a GPU, that device's
        checkpoint["rng_states"] = self._gather_rng_states()

    def _gather_rng_states(self) -> list[dict[str, torch.Tensor]]:
        device = self.trainer.strategy.root_device
        states = {"cpu": torch.get_rng_state()}
        if device.type == "cuda":
            states["cuda"] = torch.cuda.get_rng_state(device)
        if self.trainer.world_size == 1:
            return [states]
        # (every rank saves the checkpoint's contents; rank 0 writes them)
        gathered = {k: self.all_gather(v.to(device)).cpu() for k, v in states.items()}  # (world, N) each
        return [{k: v[r].clone() for k, v in gathered.items()} for r in range(self.trainer.world_size)]  # (own storage)

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        # loaded for evaluation or prediction: leave the process's RNG alone
        if self._trainer is None:
            return
        states = checkpoint.get("rng_states")
        # checkpoints from before rng_states
        if states is None and "torch_rng_state" in checkpoint:
            states = [{"cpu": checkpoint["torch_rng_state"]}]
        if not states:
            return
        rank = self.trainer.global_rank
        if len(states) != self.trainer.world_size:
            log.warning(
                "the checkpoint holds random states of %d rank(s), this run has %d: dropout will not "
                "continue exactly as the interrupted run would have",
                len(states),
                self.trainer.world_size,
            )
        own = states[min(rank, len(states) - 1)]
        # a view segfaults it
        torch.set_rng_state(own["cpu"].cpu().clone())
        device = self.trainer.strategy.root_device
        if "cuda" in own and device.type == "cuda":
            torch.cuda.set_rng_state(own["cuda"].cpu().clone(), device)


def saved_attention(name: str, target: str, keys: dict) -> AttentionConfig:
    """A checkpoint's attention, its class importable here (one line saying which module to make importable
    where not)."""
    mechanism = AttentionConfig(target, dict(keys), name)
    try:
        mechanism.check()
    except AttnclfError as e:
        raise AttnclfError(f"this checkpoint's attention, {name}, is {target}: {e}") from e
    return mechanism


class ClassifierModule(TrainingModule):
    """The classifier's LightningModule, built from a ClassifierConfig (attnclf/settings/model.py), which
    it saves in its checkpoint, nested, beside the data's vocabulary size and classes and its kind."""

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        config: ClassifierConfig | None = None,
        *,
        kind: str = CLASSIFIER,
        attention: str | None = None,
        attention_class: str | None = None,
        attention_keys: dict | None = None,
        model: dict | None = None,
        optimizer: dict | None = None,
        regularizer: dict | None = None,
    ):
        """`config`: the settings as train() built and checked them. Or, as a checkpoint holds them (its
        hyperparameters as load_checkpoint gives them, whatever form it was written in: `kind`, `attention`
        (its name), `attention_class`, `attention_keys`, `model`, `optimizer`, `regularizer`, the last three
        the dicts ClassifierConfig.as_dict() saves), checked here."""
        super().__init__()
        if config is None:
            mechanism = saved_attention(attention, attention_class, attention_keys)
            config = ClassifierConfig(
                mechanism, ModelConfig(**model), OptimizerConfig(**optimizer), RegularizerConfig(**regularizer)
            )
            config.check()
        self.config = config
        # logger=False: train(cfg) writes the hparams once, at the end, with the final metrics
        saved = {"kind": CLASSIFIER, "vocab_size": vocab_size, "num_classes": num_classes, **self.config.as_dict()}
        self.save_hyperparameters(saved, logger=False)
        m = self.config.model
        self.model = ClassifierNet(vocab_size, num_classes, config.attention, m)
        # `embeddings` (random, word2vec or a vectors file) and `init_from` (a checkpoint of attnclf pretrain) are where
        # train() took the initial weights from: a record only, as the weights themselves are in the state dict
        self.model.embed.weight.requires_grad_(not m.freeze_embeddings)
        # optimizer.class_weights: the training loss's weight per class, from the training rows (train() sets
        # it; not in the state dict: a resumed run computes it again from the same rows)
        self.register_buffer("class_weight", None, persistent=False)
        # validate_args=False: the checks read the labels back from the device, a sync every step
        self.train_acc = MulticlassAccuracy(num_classes, average="micro", validate_args=False)
        self.val_acc = MulticlassAccuracy(num_classes, average="micro", validate_args=False)
        self.test_acc = MulticlassAccuracy(num_classes, average="micro", validate_args=False)
        # per-class F1 (macro-F1 is their mean) and the confusion matrix of each evaluation
        self.val_f1 = MulticlassF1Score(num_classes, average=None, validate_args=False)
        self.test_f1 = MulticlassF1Score(num_classes, average=None, validate_args=False)
        self.val_confusion = MulticlassConfusionMatrix(num_classes, validate_args=False)
        self.test_confusion = MulticlassConfusionMatrix(num_classes, validate_args=False)
        # the last computed one per stage (rows: true label)
        self.confusion: dict[str, torch.Tensor] = {}
        # the sanity check does not update it: on_validation_epoch_end
        self.val_acc_best = MaxMetric()
        # in the checkpoint, so a resumed run keeps its best
        self.val_acc_best.persistent(True)

    def optimizer_settings(self) -> OptimizerConfig:
        return self.config.optimizer

    def forward(
        self, ids: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model(ids, lengths, host_lengths)

    def on_train_epoch_end(self) -> None:
        super().on_train_epoch_end()
        # the epoch's train/acc, logged once: Lightning's log() costs a millisecond or so a call, which a step of
        # short texts (15-20 ms) feels
        self.log("train/acc", self.train_acc.compute())
        self.train_acc.reset()

    def on_train_start(self) -> None:
        # (Lightning skips on_train_epoch_start for the epoch a run resumes in the middle of)
        self.freeze_for_epoch()

    def on_train_epoch_start(self) -> None:
        self.freeze_for_epoch()

    def freeze_for_epoch(self) -> None:
        """optimizer.freeze_encoder_epochs: the embedding and encoder frozen for the first epochs (the new
        attention and output layer learn on a pretrained encoder first), then fine-tuned. Decided by the
        epoch alone, so a resumed run freezes as the uninterrupted one did."""
        frozen = self.current_epoch < self.config.optimizer.freeze_encoder_epochs
        for name, p in self.model.named_parameters():
            if name.startswith(ENCODER):
                fixed = name.startswith("embed") and self.config.model.freeze_embeddings
                p.requires_grad_(not (frozen or fixed))

    def weigh_classes(self, labels: np.ndarray) -> torch.Tensor | None:
        """optimizer.class_weights=balanced: each class weighs n / (classes x its rows among `labels`, the
        training rows), as scikit-learn's "balanced"; a class with no training row weighs 0. None: unweighted."""
        if self.config.optimizer.class_weights == "none":
            return None
        c = self.hparams.num_classes
        counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=c)
        weight = np.divide(len(labels), c * counts, out=np.zeros(c), where=counts > 0)
        self.class_weight = torch.tensor(weight, dtype=torch.float32, device=self.device)
        return self.class_weight

    def training_step(self, batch, batch_idx):
        ids, lengths, y, host = unpack(batch)
        reg = self.config.regularizer
        if reg.name == "adversarial":
            logits, loss, extra, clean = adversarial_losses(
                self.model, ids, lengths, host, y, reg.epsilon, self._loss_scale(ids), self.class_weight
            )
        else:
            logits, _ = self(ids, lengths, host)
            loss = clean = F.cross_entropy(logits, y, weight=self.class_weight)
        # the Diversity RNN: its states' conicity, penalised (attnclf/models/states.py)
        if self.model.diversity:
            penalty = self.model.last_conicity.mean()
            self.log("train/conicity", penalty, batch_size=len(y))
            loss = clean = clean + self.config.model.diversity_weight * penalty
        # the attention's own term (structured attention: its hops kept apart), weighted by its own setting
        attention_penalty = self.model.attention.penalty()
        if attention_penalty is not None:
            self.log("train/attention_penalty", attention_penalty, batch_size=len(y))
            loss = clean = clean + attention_penalty
        self._check_finite(loss)
        self.train_acc(logits.argmax(-1), y)
        # the cross-entropy (weighted per class where optimizer.class_weights says), whatever regulariser is on top
        self.log("train/loss", loss, prog_bar=True, batch_size=len(y))
        if reg.name == "none":
            return loss
        if reg.name == "virtual_adversarial":
            u_ids, u_lengths, _ = self.unlabeled_batch()
            u_dev = u_lengths.to(self.device, non_blocking=True)
            u_ids = u_ids.to(self.device, non_blocking=True)
            extra = virtual_adversarial_loss(self.model, u_ids, u_dev, u_lengths, reg.epsilon, reg.xi)
        self.log(f"train/{reg.name}_loss", extra, batch_size=len(y))
        return clean + reg.weight * extra

    def _loss_scale(self, like: torch.Tensor) -> torch.Tensor | None:
        """The float16 loss scale of the trainer's GradScaler (precision=16-mixed on CUDA) as a tensor (no
        host sync), or None without one (or without a trainer: a step called on its own)."""
        scaler = getattr(getattr(self._trainer, "precision_plugin", None), "scaler", None)
        if scaler is None or not scaler.is_enabled():
            return None
        return scaler.scale(torch.ones((), device=like.device))

    def unlabeled_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """This step's batch of unlabeled reviews (regularizer=virtual_adversarial), on the host: fixed by the
        batch's number, so that a resumed run draws the same ones."""
        return self.trainer.datamodule.unlabeled_batch(self.trainer.fit_loop.total_batch_idx)

    def _eval_step(self, batch, stage: str, acc: MulticlassAccuracy):
        ids, lengths, y, host = unpack(batch)
        logits, weights = self(ids, lengths, host)
        pred = logits.argmax(-1)
        acc(pred, y)
        getattr(self, f"{stage}_f1").update(pred, y)
        getattr(self, f"{stage}_confusion").update(pred, y)
        entropy, top5 = attention_sharpness(weights)
        n = len(y)
        self.log(f"{stage}/loss", F.cross_entropy(logits, y), batch_size=n, sync_dist=True)
        self.log(f"{stage}/acc", acc, batch_size=n, prog_bar=True)
        self.log(f"{stage}/attn_entropy", entropy.mean(), batch_size=n, sync_dist=True)
        self.log(f"{stage}/attn_top5", top5.mean(), batch_size=n, sync_dist=True)
        return logits

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "val", self.val_acc)

    def _log_f1(self, stage: str) -> None:
        """{stage}/macro_f1 and {stage}/f1/<class> (the class names from the run's vocab.json), and keep the
        confusion matrix for the callbacks and metrics.json."""
        f1 = getattr(self, f"{stage}_f1").compute()  # (C,), all ranks
        names = self._class_names()
        self.log(f"{stage}/macro_f1", f1.mean())
        for name, value in zip(names, f1, strict=True):
            self.log(f"{stage}/f1/{name}", value)
        self.confusion[stage] = getattr(self, f"{stage}_confusion").compute().cpu()
        getattr(self, f"{stage}_f1").reset()
        getattr(self, f"{stage}_confusion").reset()

    def _class_names(self) -> list[str]:
        dm = self.trainer.datamodule if self._trainer is not None else None
        names = dm.vocab.meta.get("labels") if dm is not None and getattr(dm, "vocab", None) else None
        return list(names) if names else [str(c) for c in range(self.hparams.num_classes)]

    def on_validation_epoch_end(self) -> None:
        self._log_f1("val")
        if self.trainer.sanity_checking:
            return
        self.val_acc_best(self.val_acc.compute())
        self.log("val/acc_best", self.val_acc_best.compute(), sync_dist=True)

    def on_test_epoch_start(self) -> None:
        # {batch index: class probabilities (B, C)} of this rank's test batches
        self._test_probs: dict[int, torch.Tensor] = {}

    def test_step(self, batch, batch_idx):
        logits = self._eval_step(batch, "test", self.test_acc)
        self._test_probs[batch_idx] = F.softmax(logits.float(), -1).detach()

    def on_test_epoch_end(self) -> None:
        self._log_f1("test")
        self.test_probs = self._test_probabilities()

    def _test_probabilities(self) -> tuple[np.ndarray, np.ndarray]:
        """(probabilities (N, C), tested (N,) bool) over the test set's N rows, in its order, every rank's batches
        together (a row not tested, as under trainer.limit_test_batches: zeros, tested False). The test loader
        is not shuffled: its batch sampler lists each batch's rows, batch index by batch index."""
        batches = list(self.trainer.test_dataloaders.batch_sampler)
        n = len(self.trainer.datamodule.test_set)
        probs = torch.zeros(n, self.hparams.num_classes, device=self.device)
        tested = torch.zeros(n, device=self.device)
        for k, p in self._test_probs.items():
            rows = torch.as_tensor(batches[k], device=self.device)
            probs[rows], tested[rows] = p, 1.0
        self._test_probs = {}
        # each rank tested other rows (DDP): the sum is every rank's, each row once
        probs = self.trainer.strategy.reduce(probs, reduce_op="sum")
        tested = self.trainer.strategy.reduce(tested, reduce_op="sum")
        return probs.cpu().double().numpy(), tested.cpu().numpy() > 0
