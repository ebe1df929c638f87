"""`pretrain(cfg)`: the forward and backward language models (attnclf/training/lm_module.py), and `load_pretrained`,
which starts a classifier from them (`python train.py model.init_from=<checkpoint or run folder>`)."""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path

import pytorch_lightning as L
import torch
from omegaconf import DictConfig, OmegaConf

from attnclf.data.text import Vocab
from attnclf.errors import AttnclfError
from attnclf.models.classifier import AttentionClassifier
from attnclf.training.checkpoint import best_checkpoint, load_checkpoint, run_dir_of
from attnclf.training.lm_module import KIND, LanguageModelModule, LMDataModule
from attnclf.training.train import (
    check_fraction,
    check_positive_int,
    check_positive_number,
    check_process,
    check_resumed_vocab,
    check_trainer,
    make_trainer,
    peak_rss_mb,
    prepare_process,
    resume_point,
    resumed_step_of,
)
from attnclf.utils.jsonfile import write_json

log = logging.getLogger(__name__)

MIN_SHARED_VOCAB = 0.5  # below this, init_from's vocabulary is another data's


def validate(cfg: DictConfig) -> None:
    check_process(cfg)
    check_trainer(cfg)
    for key in ("model.embed_dim", "model.hidden_dim"):
        check_positive_int(cfg, key)
    if cfg.model.num_layers != 1:
        raise AttnclfError(f"model.num_layers={cfg.model.num_layers!r}; pretraining has one layer per direction: 1")
    check_positive_number(cfg, "lm.lr")
    cutoffs = cfg.lm.cutoffs
    if not OmegaConf.is_list(cutoffs) or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0
                                                 for c in cutoffs):  # fmt: skip
        raise AttnclfError(f"lm.cutoffs={cutoffs!r}; allowed: a list of positive integers, e.g. [2000,10000]")
    vocab_size = OmegaConf.select(cfg, "data.vocab_size")
    if isinstance(vocab_size, int) and any(c >= vocab_size - 1 for c in cutoffs):
        raise AttnclfError(
            f"lm.cutoffs={list(cutoffs)}: each must be below data.vocab_size={vocab_size} less 1 (the words before "
            f"the first cutoff are the adaptive softmax's head, the rest its tail clusters)"
        )
    check_fraction(cfg, "lm.dropout")


def matches(hp: dict, cfg: DictConfig) -> bool:
    """Whether a checkpoint is a language model of this command's sizes (for ckpt_path=last)."""
    return (
        hp.get("kind") == KIND
        and hp.get("embed_dim") == cfg.model.embed_dim
        and hp.get("hidden_dim") == cfg.model.hidden_dim
    )


def mismatch(hp: dict, run: Path, cfg: DictConfig) -> str | None:
    """Why a checkpoint given by name cannot continue as this command's pretraining (None: it can)."""
    if hp.get("kind") != KIND:
        return f"{run} is not a pretrain.py run (its checkpoint is a classifier's); give a pretraining run"
    if not matches(hp, cfg):
        return (
            f"that run has model.embed_dim={hp.get('embed_dim')}, model.hidden_dim={hp.get('hidden_dim')}, this "
            f"command {cfg.model.embed_dim}, {cfg.model.hidden_dim}; resume with the run's own settings"
        )
    return None


def pretrain(cfg: DictConfig) -> float:
    """Fit both language models, write metrics.json; return the best val/loss (mean NLL per token)."""
    validate(cfg)
    prepare_process(cfg)
    resume = resume_point(cfg, lambda hp: matches(hp, cfg), lambda hp, run: mismatch(hp, run, cfg))
    L.seed_everything(cfg.seed, workers=True)
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer, throughput = make_trainer(cfg, resumed_step_of(resume))  # (before any data work)

    lm = cfg.lm
    datamodule = LMDataModule(
        **cfg.data, seed=cfg.seed, vocab_path=str(out / "vocab.json"),
        unlabeled_split=lm.unlabeled_split, val_texts=lm.val_texts,
    )  # fmt: skip
    datamodule.setup("fit")
    module = LanguageModelModule(
        vocab_size=len(datamodule.vocab),
        embed_dim=cfg.model.embed_dim,
        hidden_dim=cfg.model.hidden_dim,
        dropout=lm.dropout,
        cutoffs=list(lm.cutoffs),
        div_value=lm.div_value,
        lr=lm.lr,
        weight_decay=lm.weight_decay,
        warmup_ratio=lm.warmup_ratio,
    )
    check_resumed_vocab(resume, len(datamodule.vocab))
    start = time.perf_counter()
    trainer.fit(module, datamodule=datamodule, ckpt_path=str(resume) if resume else None, weights_only=True)
    fit_seconds = time.perf_counter() - start
    if trainer.interrupted:
        raise AttnclfError("pretraining was interrupted; checkpoints so far are in " + str(out / "checkpoints"))
    ckpt_cb = trainer.checkpoint_callback
    best = ckpt_cb.best_model_path if ckpt_cb else ""
    score = ckpt_cb.best_model_score if ckpt_cb is not None else None
    val_loss = float(score) if score is not None else float(trainer.callback_metrics.get("val/loss", math.nan))
    totals = throughput.final or throughput.totals()
    metrics = {
        "kind": KIND,
        "val/loss": val_loss,  # mean negative log-likelihood per predicted token, both directions
        "val/ppl": math.exp(val_loss) if math.isfinite(val_loss) else math.nan,
        "epochs": trainer.current_epoch,
        "steps": trainer.global_step,
        "fit_seconds": throughput.total_fit_seconds(fit_seconds),
        "train_tokens": int(totals["train_tokens"]),
        "train_tokens_per_sec": throughput.tokens_per_sec,
        "peak_rss_mb": peak_rss_mb(),
        "texts": datamodule.splits,
        "best_checkpoint": best,
        "vocab": str(out / "vocab.json"),
    }
    if trainer.is_global_zero:
        write_json(out / "metrics.json", metrics)
        log.info("val/loss %.4f  val/ppl %.1f  %.0f s  %.0f tokens/s  -> %s  (python train.py model.init_from=%s)",
                 val_loss, metrics["val/ppl"], metrics["fit_seconds"], metrics["train_tokens_per_sec"],
                 out / "metrics.json", out)  # fmt: skip
    return val_loss


def latest_pretraining(root: Path) -> Path:
    """The newest finished pretrain.py run (one with metrics.json) under `root`."""
    runs = sorted((p.parent for p in root.glob("*/metrics.json")), key=lambda p: p.stat().st_mtime)
    runs = [r for r in runs if json.loads((r / "metrics.json").read_text()).get("kind") == KIND]
    if not runs:
        raise AttnclfError(
            f"model.init_from=latest: no finished pretraining under {root}; run python pretrain.py first"
        )
    return runs[-1]


def check_init_from(
    path: str, embed_dim: int, hidden_dim: int, num_layers: int, pretrain_dir: str = "outputs/pretrain"
) -> tuple[Path, dict]:
    """(the checkpoint file, its contents) of a pretrain.py checkpoint or run folder (`latest`: the newest
    finished one under `pretrain_dir`) that fits a model of these sizes; one-line errors otherwise.
    train() calls it before any data work."""
    if path == "latest":
        path = str(latest_pretraining(Path(pretrain_dir)))
    ckpt_path = best_checkpoint(path) if Path(path).is_dir() else Path(path)
    ckpt = load_checkpoint(ckpt_path)
    hp = ckpt.get("hyper_parameters") or {}
    if hp.get("kind") != KIND:
        what = "a classifier's" if "attention" in hp else "another kind of"
        raise AttnclfError(
            f"model.init_from={path}: {what} checkpoint, not a language model; give what pretrain.py wrote"
        )
    if num_layers != 1:
        raise AttnclfError(
            f"model.init_from needs model.num_layers=1 (the language models have one layer), got {num_layers}"
        )
    theirs = (hp.get("embed_dim"), hp.get("hidden_dim"))
    if theirs != (embed_dim, hidden_dim):
        raise AttnclfError(
            f"model.init_from={path} has embed_dim={theirs[0]}, hidden_dim={theirs[1]}; this model "
            f"{embed_dim}, {hidden_dim}: set model.embed_dim={theirs[0]} model.hidden_dim={theirs[1]}"
        )
    return ckpt_path, ckpt


def load_pretrained(
    model: AttentionClassifier,
    path: str,
    vocab: Vocab,
    pretrain_dir: str = "outputs/pretrain",
    loaded: tuple[Path, dict] | None = None,
) -> dict:
    """Start `model` from a pretrain.py checkpoint (or run folder: its best checkpoint): the forward LM's GRU
    into the encoder's forward direction, the backward LM's into the backward one, and the embedding
    row by row for the words both vocabularies have (the others keep their initialisation).
    `loaded`: what check_init_from already returned for `path`."""
    enc = model.encoder
    dims = (model.embed.embedding_dim, enc.hidden_dim, len(enc.fwd))
    ckpt_path, ckpt = loaded or check_init_from(path, *dims, pretrain_dir)
    vocab_file = run_dir_of(ckpt_path) / "vocab.json"
    if not vocab_file.is_file():
        raise AttnclfError(f"model.init_from={path}: its vocabulary {vocab_file} is missing")
    lm_vocab = Vocab.load(vocab_file)
    pairs = [(i, lm_vocab.stoi[w]) for i, w in enumerate(vocab.itos) if w in lm_vocab.stoi]
    shared = sum(i >= 2 for i, _ in pairs) / max(1, len(vocab) - 2)  # (past padding and <unk>)
    if shared < MIN_SHARED_VOCAB:
        raise AttnclfError(
            f"model.init_from={path}: its vocabulary has {shared:.0%} of this run's words (another dataset?); "
            f"pretrain on this run's data"
        )
    sd = ckpt["state_dict"]
    with torch.no_grad():
        ours, theirs = torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs])
        model.embed.weight[ours] = sd["model.embed.weight"][theirs].to(model.embed.weight.dtype)
        for direction, gru in (("fwd", enc.fwd[0]), ("bwd", enc.bwd[0])):
            for name, param in gru.named_parameters():
                param.copy_(sd[f"model.{direction}.{name}"])
    log.info(
        "model.init_from=%s (%s): encoder and %.1f%% of the vocabulary's embeddings", path, ckpt_path, 100 * shared
    )
    return {"checkpoint": str(ckpt_path), "vocab_shared": shared}
