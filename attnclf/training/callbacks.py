"""Callbacks: token throughput, attention maps in TensorBoard, and a checkpoint where a signal stops the fit."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytorch_lightning as L
import torch
from pytorch_lightning.callbacks import RichModelSummary, RichProgressBar
from pytorch_lightning.loggers import TensorBoardLogger
from pytorch_lightning.utilities.exceptions import SIGTERMException
from pytorch_lightning.utilities.model_summary import get_formatted_model_size, get_human_readable_count

from attnclf.presentation.tensorboard import log_attention_review, log_confusion


class Throughput(L.Callback):
    """Training samples/s and useful (non-padding) tokens/s, and evaluation reviews/s, over all ranks.

    Logs `train/samples_per_sec` and `train/tokens_per_sec` over the last
    `log_every_n_steps` steps (Lightning's ThroughputMonitor counts "items" and
    nothing overall), and keeps the totals over the whole fit for metrics.json.
    Validation time is excluded from training time. Tokens are counted from the
    lengths, which stay on the host (no device sync), of the labelled batch only:
    under regularizer=virtual_adversarial the unlabeled batch each step also reads
    is not counted, so the rate says how fast the labelled data is gone through.
    Under DDP each rank counts its own batches: logged rates are summed over ranks,
    and `totals()` sums the counts and takes the longest rank's time.
    """

    COUNTS = ("train_tokens", "train_samples", "eval_samples")
    TIMES = ("train_seconds", "eval_seconds", "fit_seconds")

    def __init__(self):
        self.train_seconds = self.train_tokens = self.train_samples = 0.0
        self.eval_seconds = self.eval_samples = 0.0
        # all ranks' totals from a checkpoint
        self._base = dict.fromkeys(self.COUNTS + self.TIMES, 0.0)
        # seconds, samples, tokens since the last log
        self._window = [0.0, 0, 0]
        self._t = None
        self._fit_t0: float | None = None
        self._trainer = None
        # totals() at the end of the fit
        self.final: dict[str, float] | None = None

    def setup(self, trainer, pl_module, stage):
        self._trainer = trainer

    def on_fit_start(self, trainer, pl_module):
        self._fit_t0 = time.perf_counter()

    @property
    def fit_seconds(self) -> float:
        return time.perf_counter() - self._fit_t0 if self._fit_t0 is not None else 0.0

    def total_fit_seconds(self, this_fit: float) -> float:
        """This process's fit time plus that of the run's earlier part (a resumed run)."""
        return self._base["fit_seconds"] + this_fit

    def totals(self) -> dict[str, float]:
        """Counts summed over ranks, times of the slowest rank, including a resumed run's earlier part.

        A collective under DDP: every rank must call it (Lightning saves checkpoints on every rank).
        """
        local = {k: getattr(self, k) for k in self.COUNTS + self.TIMES}
        t = self._trainer
        if t is not None and t.world_size > 1:
            device = t.strategy.root_device
            counts = torch.tensor([local[k] for k in self.COUNTS], dtype=torch.float64, device=device)
            times = torch.tensor([local[k] for k in self.TIMES], dtype=torch.float64, device=device)
            counts = t.strategy.reduce(counts, reduce_op="sum").tolist()
            times = t.strategy.reduce(times, reduce_op="max").tolist()
            local = dict(zip(self.COUNTS + self.TIMES, counts + times, strict=True))
        return {k: v + self._base[k] for k, v in local.items()}

    def state_dict(self) -> dict:
        return self.totals()

    def load_state_dict(self, state: dict) -> None:
        if self._trainer is not None and self._trainer.state.fn != "fit":
            # testing the best checkpoint restores callback states too: not a resumed fit
            return
        self._base = {k: float(state.get(k, 0.0)) for k in self.COUNTS + self.TIMES}
        for k in self.COUNTS + self.TIMES:
            if k != "fit_seconds":
                setattr(self, k, 0.0)

    def on_train_end(self, trainer, pl_module):
        self.final = self.totals()

    @property
    def tokens_per_sec(self) -> float:
        t = self.final or self.totals()
        return t["train_tokens"] / t["train_seconds"] if t["train_seconds"] else float("nan")

    @property
    def eval_reviews_per_sec(self) -> float:
        t = self.final or self.totals()
        return t["eval_samples"] / t["eval_seconds"] if t["eval_seconds"] else float("nan")

    def on_train_start(self, trainer, pl_module):
        # a resumed run starts mid-epoch, without on_train_epoch_start
        self._t = time.perf_counter()

    def on_train_epoch_start(self, trainer, pl_module):
        self._t = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        now = time.perf_counter()
        dt, self._t = now - self._t, now
        # batch[1]: the lengths, on the host
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
                # every rank logs at the same steps
                sync_dist=trainer.world_size > 1,
                reduce_fx="sum",
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
        # training time restarts after validation
        self._t = time.perf_counter()


class ProgressBar(RichProgressBar):
    """Rich's progress bar; on a GPU its metrics (the loss) are refreshed every `log_every_n_steps` steps.

    Showing a metric reads it back from the device, which waits for the step to finish: every step,
    that would leave the GPU idle while Python launches the next one. On CPU it costs nothing.
    """

    _skip_metrics = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        on_gpu = pl_module.device.type != "cpu"
        self._skip_metrics = on_gpu and trainer.global_step % trainer.log_every_n_steps != 0
        try:
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        finally:
            self._skip_metrics = False

    def _update_metrics(self, trainer, pl_module) -> None:
        if not self._skip_metrics:
            super()._update_metrics(trainer, pl_module)


def _tensorboard(trainer) -> TensorBoardLogger | None:
    return next((lg for lg in trainer.loggers if isinstance(lg, TensorBoardLogger)), None)


class ConfusionMatrixImage(L.Callback):
    """After each validation, the confusion matrix (rows: true class, columns: predicted) as an image in
    TensorBoard under `val/confusion_matrix`, counts in the cells, class names on the axes."""

    def on_validation_end(self, trainer, pl_module):
        tb = _tensorboard(trainer)
        confusion = pl_module.confusion.get("val")
        if tb is None or trainer.sanity_checking or not trainer.is_global_zero or confusion is None:
            return
        log_confusion(tb.experiment, confusion.numpy(), pl_module._class_names(), trainer.global_step)


class AttentionMaps(L.Callback):
    """Each validation epoch, for a fixed set of validation reviews, log to TensorBoard:
    a heatmap (the review's tokens in reading order, weight as colour, true and
    predicted label in the title) under `attention/review_<i>`, the review as
    text with its `top_k` highest-weighted words in bold, and its words shaded by
    attention, gradient x input and leave-one-out under `attention/importance_<i>`.
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
        reviews = [np.asarray(dm.val_set.tokens(i), dtype=np.int64) for i in picked]
        labels = [dm.val_set[i][1] for i in picked]
        names = dm.vocab.meta.get("labels") or [str(c) for c in range(pl_module.hparams.num_classes)]
        attr, loo = self.importance(pl_module, reviews)
        for i, ids in enumerate(reviews):
            probs = attr.probs[i]
            pred = int(probs.argmax())
            title = (
                f"{pl_module.hparams.attention} attention | true: {names[labels[i]]} | "
                f"predicted: {names[pred]} (p={probs[pred]:.2f})"
            )
            rows = {"attention": attr.weights[i], "gradient x input": attr.gradient[i], "leave-one-out": loo[i]}
            log_attention_review(
                tb.experiment, i, dm.vocab.decode(ids), title, rows, trainer.global_step, self.top_k, self.columns
            )

    @staticmethod
    def importance(pl_module, reviews: list[np.ndarray]):
        """attnclf.analysis.measures's attributions (attention weights, probabilities, gradient x input) and
        leave-one-out of each review, in eval mode (`attnclf faithfulness` for the measures over many
        reviews)."""
        from attnclf.analysis import measures

        was_training = pl_module.training
        pl_module.eval()
        try:
            # (validation runs in inference mode, which gradients cannot leave)
            with torch.inference_mode(False), torch.enable_grad():
                attr = measures.attributions(pl_module.model, reviews)
                return attr, measures.leave_one_out(pl_module.model, reviews, attr.probs)
        finally:
            pl_module.train(was_training)


class CheckpointOnStop(L.Callback):
    """A stop by SIGTERM (a scheduler's) or Ctrl-C lets the training step in flight finish, writes
    `dirpath`/last.ckpt at that step, then stops the fit (SIGTERMException, KeyboardInterrupt): a resume
    loses no step. A second Ctrl-C stops at once. One process only: under several (DDP), Lightning's own
    SIGTERM handling stops every rank together, from the last checkpoint written."""

    def __init__(self, dirpath: str | Path):
        self.dirpath = Path(dirpath)
        # the signal that asked the fit to stop
        self.by: signal.Signals | None = None
        self.previous: dict = {}

    def on_train_start(self, trainer, pl_module):
        if trainer.world_size > 1 or threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.previous[sig] = signal.signal(sig, self.ask_to_stop)

    def ask_to_stop(self, signum, frame):
        if self.by is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.by = signal.Signals(signum)

    def on_train_batch_end(self, trainer, *args):
        if self.by is None:
            return
        trainer.save_checkpoint(self.dirpath / "last.ckpt")
        self.restore()
        # (Lightning's own ways out: it saves nothing more, and timed_fit says how to resume)
        raise SIGTERMException if self.by == signal.SIGTERM else KeyboardInterrupt

    def on_fit_end(self, trainer, pl_module):
        self.restore()

    def on_exception(self, trainer, pl_module, exception):
        self.restore()

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}


class ModelSummary(RichModelSummary):
    """Rich's model summary, without FLOPs: Lightning counts them only for a model with an
    `example_input_array` and otherwise prints a column of zeros and "Total FLOPs: 0"."""

    @staticmethod
    def summarize(
        summary_data,
        total_parameters,
        trainable_parameters,
        model_size,
        total_training_modes,
        total_flops,
        **summarize_kwargs,
    ) -> None:
        from rich import get_console
        from rich.table import Table

        columns = [(name, values) for name, values in summary_data if name not in ("FLOPs",)]
        table = Table(header_style=summarize_kwargs.get("header_style", "bold magenta"))
        table.add_column(" ", style="dim")
        for name, _ in columns:
            table.add_column(name, justify="left" if name in ("Name", "Type", "Mode") else "right")
        for row in zip(*(values for _, values in columns), strict=True):
            table.add_row(*row)
        get_console().print(table)
        grid = Table.grid(expand=True)
        frozen = total_parameters - trainable_parameters
        grid.add_row(f"[bold]Trainable params[/]: {get_human_readable_count(int(trainable_parameters))}")
        grid.add_row(f"[bold]Non-trainable params[/]: {get_human_readable_count(int(frozen))}")
        grid.add_row(f"[bold]Total params[/]: {get_human_readable_count(int(total_parameters))}")
        grid.add_row(f"[bold]Total estimated model params size (MB)[/]: {get_formatted_model_size(model_size)}")
        get_console().print(grid)
