"""`train(cfg)`: the whole run, callable from tests (`train.py` at the root is its Hydra entry point)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytorch_lightning as L
import torch
from omegaconf import DictConfig

from attnclf.data.datamodule import TextDataModule
from attnclf.data.splits import RECORD, record_of
from attnclf.data.vectors import initial_embeddings
from attnclf.settings.commands import train_settings
from attnclf.settings.model import INIT_FROM_PRETRAIN
from attnclf.training.checkpoint import run_dir_of
from attnclf.training.init_from import cached_pretraining, check_init_from, load_pretrained
from attnclf.training.module import AttnClassifierModule
from attnclf.training.pruning import trial_pruning
from attnclf.training.resume import (
    START,
    check_resumed_vocab,
    data_keys_given,
    resume_point,
    resumed_data,
    resumed_step_of,
    same_settings,
    settings_mismatch,
    start_of,
)
from attnclf.training.trainer import (
    at_least_epochs,
    at_least_steps,
    hparams_of,
    make_trainer,
    peak_gpu_mb,
    peak_rss_mb,
    prepare_process,
    quiet,
    timed_fit,
    write_hparams,
)
from attnclf.utils.jsonfile import write_json

log = logging.getLogger(__name__)


def train(cfg: DictConfig, overrides: list[str] | None = None) -> float:
    """Fit, test the best checkpoint, write metrics.json; return the metric `cfg.optimized_metric`.
    `overrides`: the command line's (a resumed run reads the data keys they leave out from its own record;
    None: every data key of `cfg` counts as given)."""
    s = train_settings(cfg)  # every value typed and checked, before any data work (attnclf/settings/)
    config, m, run = s.classifier, s.classifier.model, s.run
    init_from, lm_run = None, str(m.init_from)
    if m.init_from and m.init_from != INIT_FROM_PRETRAIN:  # (checked before any data work; read once)
        init_from = check_init_from(lm_run, m.embed_dim, m.hidden_dim, m.num_layers, s.paths.pretrain_dir)
    prepare_process(run)
    resume = resume_point(run.ckpt_path, s.paths, lambda hp: same_settings(hp, config),
                          lambda hp, folder: settings_mismatch(hp, folder, config))  # fmt: skip
    if resume is not None and run.ckpt_path == "last":
        log.info("ckpt_path=last: the newest unfinished run with attention=%s and these model settings",
                 config.attention)  # fmt: skip
    if resume is not None:  # (it continues on its own data: the data.* keys given must agree with it)
        given = None if overrides is None else data_keys_given(overrides, s.data)
        s.data = resumed_data(s.data, run_dir_of(resume), given)
    cfg.paths.output_dir = s.paths.output_dir  # (a resumed run's own: the loggers and checkpoints built from cfg)
    L.seed_everything(run.seed, workers=True, verbose=False)  # (the seed is in the run's config and metrics)
    out = Path(s.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    # (it draws no random numbers)
    trainer, throughput = make_trainer(cfg, resumed_step_of(resume), trial_pruning(s.search, out))

    datamodule = TextDataModule(s.data, run.seed, vocab_path=str(out / "vocab.json"))
    datamodule.setup("fit")
    model = AttnClassifierModule(len(datamodule.vocab), datamodule.num_classes, config=config)
    train_set = datamodule.train_set
    weight = model.weigh_classes(train_set.labels[train_set.rows])
    if weight is not None:
        names = datamodule.vocab.meta["labels"]
        said = ", ".join(f"{name} {w:.3g}" for name, w in zip(names, weight.tolist(), strict=True))
        log.info("optimizer.class_weights=balanced: %s (n / (classes x the class's training rows))", said)
    reg = config.regularizer
    if reg.name == "virtual_adversarial":
        n = datamodule.setup_unlabeled(reg.unlabeled_split, reg.unlabeled_batch_size)
        log.info("virtual adversarial training on %d unlabeled reviews (%s)", n, reg.unlabeled_split)
    embeddings = {"source": "random"}
    source = m.embeddings
    if m.init_from:  # the embedding comes from the language models, with the encoder
        embeddings, source = {"source": "init_from"}, "random"
    if resume is None and source != "random":  # (a resumed run has its embedding in the checkpoint)
        matrix, embeddings = initial_embeddings(source, datamodule, m.embed_dim, s.word2vec, s.paths.cache_dir,
                                                quiet(trainer))  # fmt: skip
        model.model.embed.weight.data.copy_(torch.from_numpy(matrix))
    pretrained = None
    if resume is None and m.init_from == INIT_FROM_PRETRAIN:  # (its settings checked before any data work)
        lm_run = str(cached_pretraining(s.pretraining, datamodule, run.seed, run.pretraining))
        init_from = check_init_from(lm_run, m.embed_dim, m.hidden_dim, m.num_layers)
    if resume is None and init_from is not None:
        pretrained = load_pretrained(model.model, lm_run, datamodule.vocab, loaded=init_from)
    init_from = None  # (the language models' checkpoint, optimizer state and all: not kept through training)
    check_resumed_vocab(resume, len(datamodule.vocab))
    # where the weights started, kept in the run folder: a resumed run (its weights from the checkpoint)
    # reports the start of the run it continues
    if resume is None or not (out / RECORD).exists():
        # which data, read how, and the rows it carved: eval.py and faithfulness.py read the same test rows
        # (a run from before the record gets it when resumed: its data settings gave its vocabulary)
        write_json(out / RECORD, record_of(s.data, run.seed, datamodule.carved))
    if resume is None:
        write_json(out / START, {"embeddings": embeddings, "init_from": pretrained})
    else:
        embeddings, pretrained = start_of(out, {"source": "init_from" if m.init_from else str(m.embeddings)})
    at_least_epochs(trainer, run.min_epochs, datamodule)
    at_least_steps(trainer, run.min_steps, datamodule)

    fit_seconds = timed_fit(trainer, model, datamodule, resume, "training", out / "checkpoints")

    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    tested = {}
    if run.test:  # the best checkpoint by val/acc (the first ModelCheckpoint's)
        tested = trainer.test(
            model, datamodule=datamodule, ckpt_path="best" if best else None, verbose=False, weights_only=True
        )[0]
    nan = float("nan")
    totals = throughput.final or throughput.totals()
    # (read from the state, restored from a checkpoint too: a resumed run may validate no more)
    val_best = float(model.val_acc_best.max_value)

    metrics = {
        "attention": config.attention,
        "seed": run.seed,
        "val/acc": val_best if math.isfinite(val_best) else nan,
        "test/acc": tested.get("test/acc", nan),
        "test/loss": tested.get("test/loss", nan),
        "test/macro_f1": tested.get("test/macro_f1", nan),
        "test/f1": {name: tested.get(f"test/f1/{name}", nan) for name in datamodule.vocab.meta["labels"]},
        "test/confusion_matrix": model.confusion["test"].tolist() if "test" in model.confusion else None,
        "test/attn_entropy": tested.get("test/attn_entropy", nan),
        "test/attn_top5": tested.get("test/attn_top5", nan),
        "epochs": trainer.current_epoch,
        "steps": trainer.global_step,
        "fit_seconds": throughput.total_fit_seconds(fit_seconds),
        "train_seconds": totals["train_seconds"],
        "epoch_seconds": totals["train_seconds"] / trainer.current_epoch if trainer.current_epoch else nan,
        "train_tokens": int(totals["train_tokens"]),  # useful (non-padding) tokens, all ranks
        "eval_reviews": int(totals["eval_samples"]),  # validation reviews read, all ranks
        "train_tokens_per_sec": throughput.tokens_per_sec,
        "eval_reviews_per_sec": throughput.eval_reviews_per_sec,
        "peak_rss_mb": peak_rss_mb(),
        "peak_gpu_mb": peak_gpu_mb(trainer),
        "num_classes": datamodule.num_classes,
        "labels": datamodule.vocab.meta["labels"],
        "splits": datamodule.splits,  # where train, val and test came from (carved or the dataset's own)
        "embeddings": embeddings,  # where the initial embedding came from (random, word2vec, a vectors file)
        "init_from": pretrained,  # the pretrain.py checkpoint the encoder started from
        "text_lengths": datamodule.length_stats,  # tokens per training text: percentiles, share kept whole
        "best_checkpoint": best,
        "vocab": str(out / "vocab.json"),
        "hparams": hparams_of(s, datamodule.train_batch_size()),
    }
    if trainer.is_global_zero:
        write_hparams(
            trainer,
            metrics["hparams"],
            {
                "val/acc_best": metrics["val/acc"],
                "test/acc": metrics["test/acc"],
                "train/tokens_per_sec": metrics["train_tokens_per_sec"],
            },
        )
        write_json(out / "metrics.json", metrics)
        log.info(
            "val/acc %.4f  test/acc %.4f  %.0f s  %.0f tokens/s  -> %s",
            metrics["val/acc"],
            metrics["test/acc"],
            metrics["fit_seconds"],
            metrics["train_tokens_per_sec"],
            out / "metrics.json",
        )
    return metrics[run.optimized_metric]
