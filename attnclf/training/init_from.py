"""Starting a classifier from `pretrain.py`'s language models (`model.init_from`): finding the run,
checking it before any data work, and copying its GRUs and embedding in."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from attnclf.data.text import Vocab
from attnclf.errors import AttnclfError
from attnclf.models.classifier import AttentionClassifier
from attnclf.models.language_model import KIND
from attnclf.settings.model import CLASSIFIER
from attnclf.training.checkpoint import best_checkpoint, checkpoint_kind, load_checkpoint, run_dir_of

log = logging.getLogger(__name__)


MIN_SHARED_VOCAB = 0.5  # below this, init_from's vocabulary is another data's


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
    if checkpoint_kind(hp) != KIND:
        what = "a classifier's" if checkpoint_kind(hp) == CLASSIFIER else "another kind of"
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
