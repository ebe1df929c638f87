"""A classifier's whole training run, its settings checked (attnclf/settings/train.py): fit, test the best
checkpoint, write the run folder's records and metrics.json. `attnclf train` (attnclf/commands/train.py) calls
it once the command line's values have passed."""

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
from attnclf.settings.model import INIT_FROM_PRETRAIN
from attnclf.settings.train import TrainConfig
from attnclf.training.checkpoint import run_dir_of
from attnclf.training.init_from import cached_pretraining, check_init_from, load_pretrained
from attnclf.training.module import ClassifierModule
from attnclf.training.pruning import trial_pruning
from attnclf.training.resume import (
    START,
    check_resumed_vocab,
    data_keys_given,
    keep_config,
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
    log_often_enough,
    make_trainer,
    peak_gpu_mb,
    peak_rss_mb,
    prepare_process,
    quiet,
    timed_fit,
    write_hparams,
)
from attnclf.utils.jsonfile import write_json
from attnclf.utils.predictions import PREDICTIONS, Predictions, write_predictions

log = logging.getLogger(__name__)


def fit(s: TrainConfig, cfg: DictConfig, overrides: list[str] | None) -> float:
    """The run `s` says (`cfg`: the composed config it was built from, kept in the run folder; `overrides`: the
    command line's, for a resumed run's data keys); the metric `s.run.optimized_metric`."""
    # a language models' run given by name: read once, before any data work
    init_from = checked_init_from(s)
    prepare_process(s.run)
    resume = resumed_run(s, overrides)
    # the seed is in the run's config and metrics
    L.seed_everything(s.run.seed, workers=True, verbose=False)
    out = Path(s.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if resume is None:
        keep_config(cfg, out)
    # (it draws no random numbers)
    trainer, throughput = make_trainer(cfg, s.paths, resumed_step_of(resume), trial_pruning(s.search, out))
    datamodule, model = data_and_model(s, out)
    start = start_weights(s, datamodule, model, resume, init_from, quiet(trainer))
    # the language models' checkpoint, optimizer state and all: not kept through training
    init_from = None
    check_resumed_vocab(resume, len(datamodule.vocab))
    start = keep_records(s, out, datamodule, resume, start)
    at_least_epochs(trainer, s.run.min_epochs, datamodule)
    at_least_steps(trainer, s.run.min_steps, datamodule)
    log_often_enough(trainer, datamodule)

    fit_seconds = timed_fit(trainer, model, datamodule, resume, "training", out / "checkpoints")

    tested = test_best(trainer, model, datamodule, s.run.test)
    timing = throughput_of(trainer, throughput, fit_seconds)
    metrics = metrics_of(s, trainer, model, datamodule, tested, start, timing, out)
    if trainer.is_global_zero:
        write_results(trainer, metrics, out)
        if tested:
            write_test_predictions(model, datamodule, s.data, out)
    return metrics[s.run.optimized_metric]


def write_test_predictions(model: ClassifierModule, datamodule: TextDataModule, data, out: Path) -> None:
    """The run folder's predictions_test.parquet: each tested example's row, gold label and class probabilities
    (the best checkpoint's, as test/acc)."""
    probs, tested = model.test_probs
    test_set = datamodule.test_set
    rows = test_set.rows[tested]
    found = Predictions(
        rows=rows,
        labels=test_set.labels[rows],
        probs=probs[tested],
        names=list(datamodule.vocab.meta["labels"]),
        split="test",
        data=str(data.path or data.train_file or ""),
    )
    write_predictions(out / PREDICTIONS, found)


def checked_init_from(s: TrainConfig) -> dict | None:
    """The language models' checkpoint `model.init_from=<run>` names, checked against this model's sizes
    (None: no such start, or `pretrain`, whose run is made later from this run's data)."""
    m = s.classifier.model
    if not m.init_from or m.init_from == INIT_FROM_PRETRAIN:
        return None
    return check_init_from(str(m.init_from), m.embed_dim, m.hidden_dim, s.paths.pretrain_dir)


def resumed_run(s: TrainConfig, overrides: list[str] | None) -> Path | None:
    """The checkpoint `ckpt_path` resumes (None: a fresh run); a resumed run continues in its own folder
    (s.paths) and on its own data (s.data: the data.* keys given must agree with its record)."""
    config = s.classifier
    resume = resume_point(
        s.run.ckpt_path,
        s.paths,
        lambda hp: same_settings(hp, config),
        lambda hp, folder: settings_mismatch(hp, folder, config),
    )
    if resume is None:
        return None
    if s.run.ckpt_path == "last":
        log.info(
            "ckpt_path=last: the newest unfinished run with attention=%s and these model settings",
            config.attention.name,
        )
    given = None if overrides is None else data_keys_given(overrides, s.data)
    s.data = resumed_data(s.data, run_dir_of(resume), given)
    return resume


def data_and_model(s: TrainConfig, out: Path) -> tuple[TextDataModule, ClassifierModule]:
    """The data read and split (its vocabulary saved in the run folder), and the model for it; the class
    weights and the unlabeled reviews where the settings ask for them, each said in the log."""
    datamodule = TextDataModule(s.data, s.run.seed, vocab_path=str(out / "vocab.json"))
    datamodule.setup("fit")
    model = ClassifierModule(len(datamodule.vocab), datamodule.num_classes, config=s.classifier)
    train_set = datamodule.train_set
    weight = model.weigh_classes(train_set.labels[train_set.rows])
    if weight is not None:
        names = datamodule.vocab.meta["labels"]
        said = ", ".join(f"{name} {w:.3g}" for name, w in zip(names, weight.tolist(), strict=True))
        log.info("optimizer.class_weights=balanced: %s (n / (classes x the class's training rows))", said)
    reg = s.classifier.regularizer
    if reg.name == "virtual_adversarial":
        n = datamodule.setup_unlabeled(reg.unlabeled_split, reg.unlabeled_batch_size)
        log.info("virtual adversarial training on %d unlabeled reviews (%s)", n, reg.unlabeled_split)
    return datamodule, model


def start_weights(s: TrainConfig, datamodule, model, resume, init_from: dict | None, quiet: bool) -> dict:
    """The weights a fresh run starts from: the embedding (word2vec, a vectors file) and the encoder (the
    language models of model.init_from, pretrained now for `pretrain`); what they were, for the records:
    {"embeddings": ..., "init_from": ...}. A resumed run has its weights in the checkpoint."""
    m = s.classifier.model
    embeddings = {"source": "init_from" if m.init_from else "random"}
    # from the language models: the embedding with them
    source = "random" if m.init_from else m.embeddings
    if resume is None and source != "random":
        matrix, embeddings = initial_embeddings(source, datamodule, m.embed_dim, s.word2vec, s.paths.cache_dir, quiet)
        model.model.embed.weight.data.copy_(torch.from_numpy(matrix))
    lm_run, pretrained = str(m.init_from), None
    # its settings checked before any data work
    if resume is None and m.init_from == INIT_FROM_PRETRAIN:
        lm_run = str(cached_pretraining(s.pretraining, datamodule, s.run.seed, s.run.pretraining))
        init_from = check_init_from(lm_run, m.embed_dim, m.hidden_dim)
    if resume is None and init_from is not None:
        pretrained = load_pretrained(model.model, lm_run, datamodule.vocab, loaded=init_from)
    return {"embeddings": embeddings, "init_from": pretrained}


def keep_records(s: TrainConfig, out: Path, datamodule, resume, start: dict) -> dict:
    """The run folder's records: its data (data.json: eval and faithfulness read the same test rows) and
    where its weights started (start.json). A resumed run reports the start of the run it continues (a run
    from before data.json gets one: its data settings gave its vocabulary); the start, as recorded."""
    if resume is None or not (out / RECORD).exists():
        write_json(out / RECORD, record_of(s.data, s.run.seed, datamodule.carved))
    if resume is None:
        write_json(out / START, start)
        return start
    m = s.classifier.model
    embeddings, pretrained = start_of(out, {"source": "init_from" if m.init_from else str(m.embeddings)})
    return {"embeddings": embeddings, "init_from": pretrained}


def test_best(trainer: L.Trainer, model, datamodule, test: bool) -> dict:
    """The test metrics of the best checkpoint by val/acc (the first ModelCheckpoint's); {} where
    `test` is off."""
    if not test:
        return {}
    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    return trainer.test(
        model, datamodule=datamodule, ckpt_path="best" if best else None, verbose=False, weights_only=True
    )[0]


def metrics_of(
    s: TrainConfig, trainer: L.Trainer, model, datamodule, tested: dict, start: dict, timing: dict, out: Path
) -> dict:
    """metrics.json: the results, `timing` (throughput_of) and the run's records."""
    nan = float("nan")
    # (read from the state, restored from a checkpoint too: a resumed run may validate no more)
    val_best = float(model.val_acc_best.max_value)
    labels = datamodule.vocab.meta["labels"]
    return {
        "attention": s.classifier.attention.name,
        "attention_class": s.classifier.attention.target,
        "seed": s.run.seed,
        "val/acc": val_best if math.isfinite(val_best) else nan,
        "test/acc": tested.get("test/acc", nan),
        "test/loss": tested.get("test/loss", nan),
        "test/macro_f1": tested.get("test/macro_f1", nan),
        "test/f1": {name: tested.get(f"test/f1/{name}", nan) for name in labels},
        "test/confusion_matrix": model.confusion["test"].tolist() if "test" in model.confusion else None,
        # the reviews the test figures were measured on (fewer than the split's under trainer.limit_test_batches)
        "test/reviews": int(model.confusion["test"].sum()) if "test" in model.confusion else 0,
        "test/split_reviews": len(datamodule.test_set) if tested else 0,
        "test/attn_entropy": tested.get("test/attn_entropy", nan),
        "test/attn_top5": tested.get("test/attn_top5", nan),
        "epochs": trainer.current_epoch,
        "steps": trainer.global_step,
        **timing,
        "peak_rss_mb": peak_rss_mb(),
        "peak_gpu_mb": peak_gpu_mb(trainer),
        "num_classes": datamodule.num_classes,
        "labels": labels,
        # where train, val and test came from (carved or the dataset's own)
        "splits": datamodule.splits,
        # where the initial embedding came from (random, word2vec, a file)
        "embeddings": start["embeddings"],
        # the attnclf pretrain checkpoint the encoder started from
        "init_from": start["init_from"],
        # tokens per training text: percentiles, share kept whole
        "text_lengths": datamodule.length_stats,
        "best_checkpoint": trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else "",
        "vocab": str(out / "vocab.json"),
        "hparams": hparams_of(s, datamodule.train_batch_size()),
    }


def throughput_of(trainer: L.Trainer, throughput, fit_seconds: float) -> dict:
    """metrics.json's time and throughput: the fit's seconds (a resumed run's: all its fits), tokens and
    reviews a second."""
    totals = throughput.final or throughput.totals()
    epochs = trainer.current_epoch
    return {
        "fit_seconds": throughput.total_fit_seconds(fit_seconds),
        "train_seconds": totals["train_seconds"],
        "epoch_seconds": totals["train_seconds"] / epochs if epochs else float("nan"),
        # useful (non-padding) tokens, all ranks
        "train_tokens": int(totals["train_tokens"]),
        # validation reviews read, all ranks
        "eval_reviews": int(totals["eval_samples"]),
        "train_tokens_per_sec": throughput.tokens_per_sec,
        "eval_reviews_per_sec": throughput.eval_reviews_per_sec,
    }


def write_results(trainer: L.Trainer, metrics: dict, out: Path) -> None:
    """metrics.json, the HParams dashboard's row, and the run's last log line."""
    shown = {
        "val/acc_best": metrics["val/acc"],
        "test/acc": metrics["test/acc"],
        "train/tokens_per_sec": metrics["train_tokens_per_sec"],
    }
    write_hparams(trainer, metrics["hparams"], shown)
    write_json(out / "metrics.json", metrics)
    log.info(
        "val/acc %.4f  test/acc %.4f  %.0f s  %.0f tokens/s  -> %s",
        metrics["val/acc"],
        metrics["test/acc"],
        metrics["fit_seconds"],
        metrics["train_tokens_per_sec"],
        out / "metrics.json",
    )
