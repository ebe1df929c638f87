"""Callbacks: token throughput, and attention maps in TensorBoard."""

from __future__ import annotations

import time

import numpy as np
import pytorch_lightning as L
import torch
from pytorch_lightning.loggers import TensorBoardLogger

from attnclf.text import UNK


class Throughput(L.Callback):
    """Training samples/s and useful (non-padding) tokens/s, and evaluation reviews/s.

    Logs `train/samples_per_sec` and `train/tokens_per_sec` over the last
    `log_every_n_steps` steps (Lightning's ThroughputMonitor counts "items" and
    nothing overall), and keeps the totals over the whole fit for metrics.json.
    Validation time is excluded from training time.
    """

    def __init__(self):
        self.train_seconds = self.train_tokens = self.train_samples = 0.0
        self.eval_seconds = self.eval_samples = 0.0
        self._window = [0.0, 0, 0]  # seconds, samples, tokens since the last log
        self._t = None

    def state_dict(self) -> dict:
        keys = ("train_seconds", "train_tokens", "train_samples", "eval_seconds", "eval_samples")
        return {k: getattr(self, k) for k in keys}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)

    @property
    def tokens_per_sec(self) -> float:
        return self.train_tokens / self.train_seconds if self.train_seconds else float("nan")

    @property
    def eval_reviews_per_sec(self) -> float:
        return self.eval_samples / self.eval_seconds if self.eval_seconds else float("nan")

    def on_train_start(self, trainer, pl_module):
        self._t = time.perf_counter()  # (a resumed run starts mid-epoch, without on_train_epoch_start)

    def on_train_epoch_start(self, trainer, pl_module):
        self._t = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        now = time.perf_counter()
        dt, self._t = now - self._t, now
        samples, tokens = len(batch[1]), int(batch[1].sum())
        self.train_seconds += dt
        self.train_samples += samples
        self.train_tokens += tokens
        w = self._window
        w[0] += dt
        w[1] += samples
        w[2] += tokens
        if trainer.global_step % trainer.log_every_n_steps == 0 and w[0] > 0:
            pl_module.log_dict(
                {"train/samples_per_sec": w[1] / w[0], "train/tokens_per_sec": w[2] / w[0]},
                on_step=True,
                on_epoch=False,
            )
            self._window = [0.0, 0, 0]

    def on_validation_start(self, trainer, pl_module):
        self._v = time.perf_counter()

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if not trainer.sanity_checking:
            self.eval_samples += len(batch[1])

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self.eval_seconds += time.perf_counter() - self._v
        self._t = time.perf_counter()  # training time restarts after validation


def _tensorboard(trainer) -> TensorBoardLogger | None:
    return next((lg for lg in trainer.loggers if isinstance(lg, TensorBoardLogger)), None)


class AttentionMaps(L.Callback):
    """Each validation epoch, for a fixed set of validation reviews, log to TensorBoard:
    a heatmap (the review's tokens in reading order, weight as colour, true and
    predicted label in the title) under `attention/review_<i>`, and the review as
    text with its `top_k` highest-weighted words in bold.
    """

    def __init__(
        self,
        num_reviews: int = 4,
        min_tokens: int = 30,
        max_tokens: int = 120,
        top_k: int = 5,
        columns: int = 12,
    ):
        self.num_reviews, self.min_tokens, self.max_tokens = num_reviews, min_tokens, max_tokens
        self.top_k, self.columns = top_k, columns

    def _pick(self, dataset) -> list[int]:
        """The first reviews of validation (in its fixed order) of a readable length; else the first ones."""
        fits = np.flatnonzero((dataset.lengths >= self.min_tokens) & (dataset.lengths <= self.max_tokens))
        rest = np.setdiff1d(np.arange(len(dataset)), fits)
        return np.concatenate([fits, rest])[: self.num_reviews].tolist()

    def on_validation_epoch_end(self, trainer, pl_module):
        tb = _tensorboard(trainer)
        dm = trainer.datamodule
        if tb is None or trainer.sanity_checking or not trainer.is_global_zero or dm is None:
            return
        picked = self._pick(dm.val_set)
        reviews = [dm.val_set.tokens(i) for i in picked]
        labels = [dm.val_set[i][1] for i in picked]
        names = dm.vocab.meta.get("labels") or [str(c) for c in range(pl_module.hparams.num_classes)]
        for i, (ids, weights, probs) in enumerate(self.attend(pl_module, reviews)):
            words = dm.vocab.decode(ids)
            pred = int(probs.argmax())
            title = (
                f"{pl_module.hparams.attention} attention | true: {names[labels[i]]} | "
                f"predicted: {names[pred]} (p={probs[pred]:.2f})"
            )
            fig = self.heatmap(words, weights, title)
            tb.experiment.add_figure(f"attention/review_{i}", fig, trainer.global_step, close=True)
            tb.experiment.add_text(
                f"attention/review_{i}", f"**{title}**\n\n" + self.marked_text(words, weights), trainer.global_step
            )

    @staticmethod
    @torch.no_grad()
    def attend(pl_module, reviews: list[np.ndarray]):
        """(ids, weights, probabilities) for each review, run one at a time in eval mode."""
        was_training = pl_module.training
        pl_module.eval()
        try:
            for ids in reviews:
                x = torch.as_tensor(ids, dtype=torch.long, device=pl_module.device).unsqueeze(0)  # (1, T)
                logits, w = pl_module(x, torch.tensor([len(ids)], device=pl_module.device))
                yield ids, w[0].float().cpu().numpy(), torch.softmax(logits[0].float(), -1).cpu().numpy()
        finally:
            pl_module.train(was_training)

    def marked_text(self, words: list[str], weights: np.ndarray) -> str:
        top = set(np.argsort(-weights)[: self.top_k].tolist())
        return " ".join(f"**{w}**({weights[j]:.2f})" if j in top else w for j, w in enumerate(words))

    def heatmap(self, words: list[str], weights: np.ndarray, title: str):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cols = self.columns
        rows = -(-len(words) // cols)
        fig, ax = plt.subplots(figsize=(cols * 0.95, 0.42 * rows + 0.9))
        im = draw_weights(ax, words, weights, cols)
        ax.set_yticks(range(rows), [str(r * cols) for r in range(rows)], fontsize=7)
        ax.set_ylabel("token index")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01, label="attention weight")
        fig.tight_layout()
        return fig


def draw_weights(ax, words: list[str], weights, columns: int):
    """The words in reading order on a grid `columns` wide, each cell coloured by its attention weight."""
    weights = np.asarray(weights, dtype=float)
    rows = -(-len(words) // columns)
    grid = np.full(rows * columns, np.nan)
    grid[: len(words)] = weights[: len(words)]
    im = ax.imshow(grid.reshape(rows, columns), cmap="Reds", aspect="auto", vmin=0, vmax=float(weights.max()))
    for j, w in enumerate(words):
        ax.text(
            j % columns,
            j // columns,
            w[:12],
            ha="center",
            va="center",
            fontsize=7,
            color="grey" if w == UNK else "black",
        )
    ax.set_xticks([])
    return im
