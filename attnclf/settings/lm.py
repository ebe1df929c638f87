"""The language models `attnclf pretrain` trains (`lm.*`, conf/pretrain.yaml): their settings and defaults,
in one place; the LightningModule takes them whole (attnclf/training/lm_module.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from attnclf.errors import AttnclfError
from attnclf.settings.typed import register
from attnclf.utils.checks import fraction, one_of, positive_int, positive_number

SOFTMAXES = ("adaptive", "sampled")  # pretraining's output layer (attnclf/models/language_model.py)


@dataclass
class LMConfig:
    """The language models pretrain.py trains (conf/pretrain.yaml says each value)."""

    dropout: float = 0.2
    softmax: str = "sampled"
    samples: int = 512
    cutoffs: list[int] = field(default_factory=lambda: [2000, 10000])
    div_value: float = 4.0
    lr: float = 2e-3
    weight_decay: float = 0.0
    warmup_ratio: float = 0.02
    val_texts: int = 1000
    unlabeled_split: str | None = "unsupervised"

    def check(self, vocab_size: int) -> None:
        positive_number("lm.lr", self.lr)
        one_of("lm.softmax", self.softmax, SOFTMAXES)
        positive_int("lm.samples", self.samples)
        if self.softmax == "adaptive":
            self.check_cutoffs(vocab_size)
        fraction("lm.dropout", self.dropout)
        positive_number("lm.div_value", self.div_value)
        fraction("lm.warmup_ratio", self.warmup_ratio)
        if not 0 <= self.weight_decay:
            raise AttnclfError(f"lm.weight_decay={self.weight_decay!r} must be a number >= 0")
        positive_int("lm.val_texts", self.val_texts)

    def check_cutoffs(self, vocab_size: int) -> None:
        if not self.cutoffs or not all(c > 0 for c in self.cutoffs):
            raise AttnclfError(f"lm.cutoffs={self.cutoffs!r}; allowed: a list of positive integers, e.g. [2000,10000]")
        if any(c >= vocab_size - 1 for c in self.cutoffs):
            raise AttnclfError(
                f"lm.cutoffs={list(self.cutoffs)}: each must be below data.vocab_size={vocab_size} less 1 (the words "
                "before the first cutoff are the adaptive softmax's head, the rest its tail clusters)"
            )

    def model_keys(self) -> dict:
        """The settings the module is built and optimised with (its checkpoints' hyperparameters): not which
        texts it reads (val_texts, unlabeled_split: the data's)."""
        return {k: v for k, v in asdict(self).items() if k not in ("val_texts", "unlabeled_split")}


register(lm=LMConfig)
