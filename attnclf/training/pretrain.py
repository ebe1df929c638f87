"""`pretrain(cfg)`: the forward and backward language models (attnclf/training/lm_module.py) that a
classifier can start from (`attnclf train model.init_from=<run>`: attnclf/training/init_from.py)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytorch_lightning as L
import torch
from omegaconf import DictConfig

from attnclf.data.lm import LMDataModule
from attnclf.data.vectors import initial_embeddings
from attnclf.models.language_model import KIND
from attnclf.settings.lm import LMConfig, PretrainConfig
from attnclf.settings.model import ModelConfig
from attnclf.training.checkpoint import checkpoint_kind
from attnclf.training.lm_module import LanguageModelModule
from attnclf.training.resume import check_resumed_vocab, keep_config, resume_point, resumed_step_of
from attnclf.training.trainer import make_trainer, peak_rss_mb, prepare_process, quiet, timed_fit
from attnclf.utils.jsonfile import write_json

log = logging.getLogger(__name__)


def matches(hp: dict, model: ModelConfig, lm: LMConfig) -> bool:
    """Whether a checkpoint is a language model of this command's sizes and output layer (ckpt_path=last)."""
    return (
        checkpoint_kind(hp) == KIND
        and hp.get("embed_dim") == model.embed_dim
        and hp.get("hidden_dim") == model.hidden_dim
        # runs from before lm.softmax: adaptive
        and hp.get("softmax", "adaptive") == lm.softmax
        and hp.get("freeze_embeddings", False) == model.freeze_embeddings
    )


def mismatch(hp: dict, run: Path, model: ModelConfig, lm: LMConfig) -> str | None:
    """Why a checkpoint given by name cannot continue as this command's pretraining (None: it can)."""
    if checkpoint_kind(hp) != KIND:
        return f"{run} is not a run of attnclf pretrain (its checkpoint is a classifier's); give a pretraining run"
    if not matches(hp, model, lm):
        return (
            f"that run has model.embed_dim={hp.get('embed_dim')}, model.hidden_dim={hp.get('hidden_dim')}, "
            f"lm.softmax={hp.get('softmax', 'adaptive')}, model.freeze_embeddings="
            f"{str(hp.get('freeze_embeddings', False)).lower()}, this command {model.embed_dim}, {model.hidden_dim}, "
            f"{lm.softmax}, {str(model.freeze_embeddings).lower()}; resume with the run's own settings"
        )
    return None


def say_length(trainer: L.Trainer, datamodule: LMDataModule) -> None:
    """One line before the pretraining starts: its length (steps, texts, tokens), for it is long (an hour
    and more on CPU); the progress bar then says the time left."""
    train = datamodule.train_set
    batches = math.ceil(len(train) / datamodule.train_batch_size())
    steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else trainer.max_epochs * batches
    log.info(
        "pretraining: %d steps (%s epochs of %d batches) of both language models on %d texts, %.1f million "
        "tokens an epoch",
        steps,
        trainer.max_epochs,
        batches,
        len(train),
        train.lengths.sum() / 1e6,
    )


def fit_language_models(s: PretrainConfig, cfg: DictConfig | None = None) -> float:
    """pretrain() with its settings built and checked (`attnclf pretrain`, or a run's model.init_from=pretrain);
    `cfg`: the composed config, kept in a fresh run's folder where Hydra wrote none (keep_config)."""
    prepare_process(s.run)
    resume = resume_point(
        s.run.ckpt_path,
        s.paths,
        lambda hp: matches(hp, s.model, s.lm),
        lambda hp, run: mismatch(hp, run, s.model, s.lm),
    )
    # the seed is in the run's config and metrics
    L.seed_everything(s.run.seed, workers=True, verbose=False)
    out = Path(s.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if resume is None and cfg is not None:
        keep_config(cfg, out)
    # before any data work
    trainer, throughput = make_trainer(s.composed, s.paths, resumed_step_of(resume))

    datamodule = LMDataModule(s.data, s.lm, s.run.seed, vocab_path=str(out / "vocab.json"))
    datamodule.setup("fit")
    module = lm_module(s, len(datamodule.vocab))
    embeddings = {"source": "random"}
    # a resumed run reads the cached vectors; its checkpoint's weights win
    if s.model.embeddings != "random":
        matrix, embeddings = initial_embeddings(
            s.model.embeddings, datamodule, s.model.embed_dim, s.word2vec, s.paths.cache_dir, quiet(trainer)
        )
        with torch.no_grad():
            module.model.embed.weight.copy_(torch.from_numpy(matrix))
    check_resumed_vocab(resume, len(datamodule.vocab))
    say_length(trainer, datamodule)
    fit_seconds = timed_fit(trainer, module, datamodule, resume, "pretraining", out / "checkpoints")
    metrics = lm_metrics(s, trainer, throughput, fit_seconds, datamodule, embeddings, out)
    if trainer.is_global_zero:
        write_json(out / "metrics.json", metrics)
        log.info(
            "val/loss %.4f  val/ppl %.1f  %.0f s  %.0f tokens/s  -> %s  (attnclf train model.init_from=%s)",
            metrics["val/loss"],
            metrics["val/ppl"],
            metrics["fit_seconds"],
            metrics["train_tokens_per_sec"],
            out / "metrics.json",
            out,
        )
    return metrics["val/loss"]


def lm_module(s, vocab_size: int) -> LanguageModelModule:
    """The two language models of the settings' sizes, output layer and optimiser."""
    return LanguageModelModule(vocab_size, s.model.embed_dim, s.model.hidden_dim, s.lm, s.model.freeze_embeddings)


def lm_metrics(s, trainer: L.Trainer, throughput, fit_seconds: float, datamodule, embeddings: dict, out: Path) -> dict:
    """The pretraining run's metrics.json: the best val/loss (mean negative log-likelihood per predicted
    token, both directions) and its perplexity, time, texts and start."""
    ckpt_cb = trainer.checkpoint_callback
    score = ckpt_cb.best_model_score if ckpt_cb is not None else None
    val_loss = float(score) if score is not None else float(trainer.callback_metrics.get("val/loss", math.nan))
    totals = throughput.final or throughput.totals()
    return {
        "kind": KIND,
        "val/loss": val_loss,
        "val/ppl": math.exp(val_loss) if math.isfinite(val_loss) else math.nan,
        "epochs": trainer.current_epoch,
        "steps": trainer.global_step,
        "fit_seconds": throughput.total_fit_seconds(fit_seconds),
        "train_tokens": int(totals["train_tokens"]),
        "train_tokens_per_sec": throughput.tokens_per_sec,
        "peak_rss_mb": peak_rss_mb(),
        "texts": datamodule.splits,
        # the language models' start
        "embeddings": {**embeddings, "frozen": s.model.freeze_embeddings},
        "best_checkpoint": ckpt_cb.best_model_path if ckpt_cb else "",
        "vocab": str(out / "vocab.json"),
    }
