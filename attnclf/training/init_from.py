"""Starting a classifier from `attnclf pretrain`'s language models (`model.init_from`): finding the run,
checking it before any data work, and copying its GRUs and embedding in; `model.init_from=pretrain` makes
that run first where the cache does not hold one of the same texts and settings (`cached_pretraining`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict
from pathlib import Path

import torch
from filelock import FileLock
from omegaconf import OmegaConf
from pytorch_lightning.utilities.seed import isolate_rng

from attnclf.data.datamodule import TextDataModule
from attnclf.data.text import Vocab
from attnclf.errors import AttnclfError
from attnclf.models.classifier import ClassifierNet
from attnclf.models.language_model import KIND
from attnclf.settings.lm import PretrainConfig
from attnclf.settings.model import CLASSIFIER
from attnclf.training.checkpoint import best_checkpoint, checkpoint_kind, load_checkpoint, run_dir_of
from attnclf.training.pretrain import fit_language_models

log = logging.getLogger(__name__)


# below this, init_from's vocabulary is another data's
MIN_SHARED_VOCAB = 0.5


def latest_pretraining(root: Path) -> Path:
    """The newest finished attnclf pretrain run (one with metrics.json) under `root`."""
    runs = sorted((p.parent for p in root.glob("*/metrics.json")), key=lambda p: p.stat().st_mtime)
    runs = [r for r in runs if json.loads((r / "metrics.json").read_text()).get("kind") == KIND]
    if not runs:
        raise AttnclfError(f"model.init_from=latest: no finished pretraining under {root}; run attnclf pretrain first")
    return runs[-1]


def check_init_from(
    path: str, embed_dim: int, hidden_dim: int, pretrain_dir: str = "outputs/pretrain"
) -> tuple[Path, dict]:
    """(the checkpoint file, its contents) of a checkpoint or run folder of attnclf pretrain (`latest`: the newest
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
            f"model.init_from={path}: {what} checkpoint, not a language model; give what attnclf pretrain wrote"
        )
    theirs = (hp.get("embed_dim"), hp.get("hidden_dim"))
    if theirs != (embed_dim, hidden_dim):
        raise AttnclfError(
            f"model.init_from={path} has embed_dim={theirs[0]}, hidden_dim={theirs[1]}; this model "
            f"{embed_dim}, {hidden_dim}: set model.embed_dim={theirs[0]} model.hidden_dim={theirs[1]}"
        )
    return ckpt_path, ckpt


def load_pretrained(
    model: ClassifierNet,
    path: str,
    vocab: Vocab,
    pretrain_dir: str = "outputs/pretrain",
    loaded: tuple[Path, dict] | None = None,
) -> dict:
    """Start `model` from a checkpoint of attnclf pretrain (or its run folder: its best one): the forward LM's GRU
    into the encoder's forward direction, the backward LM's into the backward one, and the embedding
    row by row for the words both vocabularies have (the others keep their initialisation).
    `loaded`: what check_init_from already returned for `path`."""
    enc = model.encoder
    dims = (model.embed.embedding_dim, enc.hidden_dim)
    ckpt_path, ckpt = loaded or check_init_from(path, *dims, pretrain_dir)
    vocab_file = run_dir_of(ckpt_path) / "vocab.json"
    if not vocab_file.is_file():
        raise AttnclfError(f"model.init_from={path}: its vocabulary {vocab_file} is missing")
    lm_vocab = Vocab.load(vocab_file)
    pairs = [(i, lm_vocab.stoi[w]) for i, w in enumerate(vocab.itos) if w in lm_vocab.stoi]
    # past padding and <unk>
    shared = sum(i >= 2 for i, _ in pairs) / max(1, len(vocab) - 2)
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
    record = {"checkpoint": str(ckpt_path), "vocab_shared": shared}
    # what the pretraining cost, where it says
    made = run_dir_of(ckpt_path) / "metrics.json"
    if made.is_file():
        record["pretraining_seconds"] = json.loads(made.read_text()).get("fit_seconds")
    return record


def cache_key(s: PretrainConfig, texts) -> str:
    """The pretraining cache's key: a hash of the texts (their fingerprints and rows) and of what the
    language models learn from, not of where they are written or how they are shown (paths, loggers,
    callbacks, threads, resuming). The data's path is left out: the texts are known by their fingerprints,
    so a moved folder is the same; the Trainer's group is taken as composed (its keys beyond TrainerConfig's)."""
    settings = {
        "seed": s.run.seed,
        "data": {k: v for k, v in asdict(s.data).items() if k != "path"},
        "model": asdict(s.model),
        "lm": asdict(s.lm),
        "word2vec": asdict(s.word2vec),
        "trainer": OmegaConf.to_container(s.composed.trainer, resolve=True),
    }
    return hashlib.sha1(json.dumps({"texts": texts, "settings": settings}, sort_keys=True).encode()).hexdigest()[:16]


def cached_pretraining(s: PretrainConfig, datamodule: TextDataModule, seed: int, overrides: list[str]) -> Path:
    """The folder of the pretraining of settings `s` (attnclf/settings/lm.py: pretraining_config) of the texts
    `datamodule` reads: found in paths.cache_dir/pretrain/<key> (cache_key), or trained there now, once
    (runs started together wait for the first; an interrupted one resumes from its last checkpoint). Where
    the run's test rows are carved from the training split, the pretraining's seed is the run's, so that it
    carves the same and never reads them. The random numbers of the run are as they were before it: a run
    that trains the pretraining and one that finds it cached go on the same. `overrides`: the run's
    `pretraining`, for the log."""
    carved = datamodule.carved
    if carved.get("test_size") is not None or carved.get("folds") is not None:
        s.run.seed = seed
        log.info(
            "model.init_from=pretrain: the test rows are carved from the training split by the run's seed: "
            "the pretraining takes seed=%d, and leaves them out",
            seed,
        )
    _, texts = datamodule.word_vector_texts(s.lm.unlabeled_split)
    key = cache_key(s, texts)
    folder = Path(s.paths.cache_dir) / "pretrain" / key
    if (folder / "metrics.json").is_file():
        log.info("model.init_from=pretrain: the pretraining of these texts and settings is cached: %s", folder)
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    # a second run waits for the first's pretraining
    with FileLock(str(folder.parent / f".{key}.lock")):
        if (folder / "metrics.json").is_file():
            log.info("model.init_from=pretrain: pretrained meanwhile by another run: %s", folder)
            return folder
        resume = (folder / "checkpoints" / "last.ckpt").is_file()
        s.paths.output_dir, s.run.ckpt_path = str(folder), str(folder) if resume else None
        log.info(
            "model.init_from=pretrain: %s the pretraining of these texts and settings in %s (attnclf pretrain's "
            "defaults and pretraining=%s)",
            "resuming" if resume else "none cached: running",
            folder,
            list(overrides),
        )
        pretrain_isolated(s)
    return folder


def pretrain_isolated(s: PretrainConfig) -> None:
    """The pretraining, its random numbers and seeding variables apart from the run's."""
    seed_env = {k: os.environ.get(k) for k in ("PL_GLOBAL_SEED", "PL_SEED_WORKERS")}
    with isolate_rng(include_cuda=torch.cuda.is_available()):
        fit_language_models(s)
    # seed_everything's for the run's dataloader workers
    for k, v in seed_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
