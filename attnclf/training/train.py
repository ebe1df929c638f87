"""`train(cfg)`: the whole run, callable from tests (`train.py` at the root is its Hydra entry point)."""

from __future__ import annotations

import inspect
import logging
import math
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import pytorch_lightning as L
import torch
from hydra.errors import CompactHydraException, InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from attnclf.data.datamodule import IMDBDataModule
from attnclf.data.vectors import check_embeddings, initial_embeddings
from attnclf.errors import AttnclfError
from attnclf.models.attention import ATTENTION_INITS, ATTENTIONS
from attnclf.training.callbacks import Throughput
from attnclf.training.checkpoint import (
    AtomicCheckpointIO,
    find_resume,
    load_checkpoint,
    run_dir_of,
    setting_differences,
)
from attnclf.training.module import AttnClassifierModule
from attnclf.training.regularizers import REGULARIZERS
from attnclf.utils.jsonfile import write_json
from attnclf.utils.memory import keep_freed_memory

log = logging.getLogger(__name__)

# the hyperparameters shown in TensorBoard's HParams dashboard
HPARAMS = (
    "attention",
    "seed",
    "optimizer.lr",
    "optimizer.weight_decay",
    "model.embed_dim",
    "model.hidden_dim",
    "model.num_layers",
    "model.dropout",
    "model.attention_scale",
    "model.attention_init",
    "model.embeddings",
    "model.freeze_embeddings",
    "model.init_from",
    "regularizer.name",
    "data.max_length",
    "data.batch_size",
    "data.vocab_size",
    "trainer.max_epochs",
)


# what train(cfg) can return for a sweep to optimise (keys of metrics.json)
OBJECTIVES = ("val/acc", "test/acc", "test/loss", "train_tokens_per_sec")


def check_positive_int(cfg: DictConfig, key: str) -> None:
    value = OmegaConf.select(cfg, key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise AttnclfError(f"{key}={value!r} must be a positive integer")


def check_positive_number(cfg: DictConfig, key: str) -> None:
    value = OmegaConf.select(cfg, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise AttnclfError(f"{key}={value!r} must be a number > 0")


def check_positive_int_or_null(cfg: DictConfig, key: str, null_means: str) -> None:
    value = OmegaConf.select(cfg, key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise AttnclfError(f"{key}={value!r} must be a positive integer or null ({null_means})")


def check_fraction(cfg: DictConfig, key: str) -> None:
    value = OmegaConf.select(cfg, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise AttnclfError(f"{key}={value!r} must be in [0, 1)")


def check_process(cfg: DictConfig) -> None:
    """seed and num_threads: what every entry point that trains sets for the whole process."""
    seed = cfg.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise AttnclfError(f"seed={seed!r} must be a whole number in 0..{2**32 - 1}")
    check_positive_int_or_null(cfg, "num_threads", "PyTorch's default")


def check_int_at_least(cfg: DictConfig, key: str, low: int, means: str = "") -> None:
    value = OmegaConf.select(cfg, key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise AttnclfError(f"{key}={value!r} must be a whole number >= {low}{means}")


def check_share_or_count(cfg: DictConfig, key: str, allowed: str, zero: bool = False) -> None:
    """A float in [0, 1] (0 only where `zero`) or a whole number >= 1 (>= 0 where `zero`); null passes."""
    value = OmegaConf.select(cfg, key)
    if value is None:
        return
    share = isinstance(value, float) and (0 <= value if zero else 0 < value) and value <= 1
    count = isinstance(value, int) and not isinstance(value, bool) and value >= (0 if zero else 1)
    if not (share or count):
        raise AttnclfError(f"{key}={value!r} must be {allowed}")


def check_trainer(cfg: DictConfig) -> None:
    """The Trainer's values that Lightning accepts silently or refuses only once it is built (after the data
    was read): refused now, in one line. (The rest, such as precision, the Trainer refuses when it is built,
    before any data work too: make_trainer.)"""
    check_int_at_least(cfg, "trainer.max_epochs", -1, " (-1: no limit)")
    check_int_at_least(cfg, "trainer.min_epochs", 0)
    check_int_at_least(cfg, "trainer.max_steps", -1, " (-1: no limit)")
    check_int_at_least(cfg, "trainer.num_sanity_val_steps", -1, " (-1: the whole validation set)")
    for key in ("trainer.log_every_n_steps", "trainer.accumulate_grad_batches"):
        if OmegaConf.select(cfg, key) is not None:
            check_positive_int(cfg, key)
    for key in ("trainer.limit_train_batches", "trainer.limit_val_batches", "trainer.limit_test_batches"):
        check_share_or_count(cfg, key, "a fraction in [0.0, 1.0] or a batch count >= 0", zero=True)
    check_share_or_count(
        cfg, "trainer.val_check_interval", "a fraction of an epoch in (0.0, 1.0] or a batch count >= 1"
    )
    clip = OmegaConf.select(cfg, "trainer.gradient_clip_val")
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not 0 <= clip < math.inf):
        raise AttnclfError(f"trainer.gradient_clip_val={clip!r} must be a number >= 0 or null (no clipping)")


def validate(cfg: DictConfig) -> None:
    """One-line errors for values that would otherwise fail deep inside a library."""
    check_process(cfg)
    check_trainer(cfg)
    if not OmegaConf.select(cfg, "data.path") and not OmegaConf.select(cfg, "data.train_file"):
        raise AttnclfError("data.path is required here: give the data's file, folder or Hub id, e.g. data.path=my.csv")
    if cfg.attention not in ATTENTIONS:
        raise AttnclfError(f"attention={cfg.attention!r}; allowed: {', '.join(ATTENTIONS)}")
    # (data.* values are checked by the DataModule itself, before any data is read)
    for key in ("model.embed_dim", "model.hidden_dim", "model.num_layers"):
        check_positive_int(cfg, key)
    check_positive_number(cfg, "optimizer.lr")
    objective = cfg.get("optimized_metric") or "val/acc"
    if objective not in OBJECTIVES:  # checked now, not after a whole run
        raise AttnclfError(f"optimized_metric={objective!r}; allowed: {', '.join(OBJECTIVES)}")
    for key in ("model.dropout", "model.embed_dropout", "optimizer.warmup_ratio"):
        check_fraction(cfg, key)
    wd = OmegaConf.select(cfg, "optimizer.weight_decay")
    if isinstance(wd, bool) or not isinstance(wd, (int, float)) or not 0 <= wd < math.inf:
        raise AttnclfError(f"optimizer.weight_decay={wd!r} must be a number >= 0")
    check_positive_int_or_null(cfg, "model.attention_dim", "the default size")
    init = OmegaConf.select(cfg, "model.attention_init")
    if init not in ATTENTION_INITS:
        raise AttnclfError(f"model.attention_init={init!r}; allowed: {', '.join(ATTENTION_INITS)}")
    check_embeddings(str(OmegaConf.select(cfg, "model.embeddings") or "random"), cfg.model.embed_dim)
    if OmegaConf.select(cfg, "model.embeddings") == "word2vec":
        check_word2vec(cfg)
    check_regularizer(cfg)
    check_devices(cfg)


def check_word2vec(cfg: DictConfig) -> None:
    for key in ("window", "min_count", "negative", "epochs"):
        if OmegaConf.select(cfg, f"word2vec.{key}") is not None:
            check_positive_int(cfg, f"word2vec.{key}")
    check_positive_int_or_null(cfg, "word2vec.workers", "up to 4 threads")
    check_positive_int_or_null(cfg, "word2vec.max_texts", "all of them")


def check_regularizer(cfg: DictConfig) -> None:
    name = OmegaConf.select(cfg, "regularizer.name") or "none"
    if name not in REGULARIZERS:
        raise AttnclfError(f"regularizer={name!r}; allowed: {', '.join(REGULARIZERS)}")
    for key in ("epsilon", "xi", "weight"):
        if OmegaConf.select(cfg, f"regularizer.{key}") is not None:
            check_positive_number(cfg, f"regularizer.{key}")
    if name == "virtual_adversarial":
        check_positive_int(cfg, "regularizer.unlabeled_batch_size")


def regularizer_args(cfg: DictConfig) -> dict:
    """cfg.regularizer as the module's plain arguments: regularizer, regularizer_epsilon, ..."""
    reg = cfg.get("regularizer") or {}
    args = {"regularizer": reg.get("name", "none")}
    args.update({f"regularizer_{k}": reg[k] for k in ("epsilon", "weight", "xi") if reg.get(k) is not None})
    return args


def module_settings(cfg: DictConfig) -> dict:
    """The LightningModule's arguments that the config gives (the data gives vocab_size and num_classes)."""
    return {"attention": cfg.attention, **cfg.model, **cfg.optimizer, **regularizer_args(cfg)}


# what a checkpoint saved before a setting existed had for it
MODULE_DEFAULTS = {
    k: p.default
    for k, p in inspect.signature(AttnClassifierModule.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty
}


def config_key(arg: str, cfg: DictConfig) -> str:
    """A module argument by its config key: lr -> optimizer.lr, regularizer_epsilon -> regularizer.epsilon."""
    if arg in cfg.model:
        return f"model.{arg}"
    if arg in cfg.optimizer:
        return f"optimizer.{arg}"
    return arg.replace("regularizer_", "regularizer.")


def check_devices(cfg: DictConfig) -> None:
    """Before any data work: a GPU asked for where there is none, and local DDP inside a multirun."""
    accelerator = str(OmegaConf.select(cfg, "trainer.accelerator") or "auto")
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise AttnclfError(f"trainer.accelerator={accelerator}: no GPU found; use trainer=cpu")
    if in_multirun() and launches_local_ranks(cfg):
        raise AttnclfError(
            f"trainer.strategy={OmegaConf.select(cfg, 'trainer.strategy')} with "
            f"trainer.devices={OmegaConf.select(cfg, 'trainer.devices')} in a multirun (-m): Lightning would "
            "start each extra rank as this whole sweep again; run each setting as its own command, "
            "or sweep with hydra/launcher=slurm (one task per GPU)"
        )


def launches_local_ranks(cfg: DictConfig) -> bool:
    """Whether Lightning would start more ranks on this node by running the command line again."""
    from lightning_fabric.plugins.environments import SLURMEnvironment, TorchElasticEnvironment

    strategy = str(OmegaConf.select(cfg, "trainer.strategy") or "auto")
    if not strategy.startswith("ddp") or "spawn" in strategy or "fork" in strategy:
        return False  # (no DDP, or ranks forked or spawned from this process)
    devices = OmegaConf.select(cfg, "trainer.devices")
    if OmegaConf.is_list(devices) or isinstance(devices, (list, tuple)):
        many = len(devices) > 1
    else:
        many = str(devices) in ("-1", "auto") or (str(devices).isdigit() and int(devices) > 1)
    launched_outside = SLURMEnvironment.detect() or TorchElasticEnvironment.detect() or "LOCAL_RANK" in os.environ
    return many and not launched_outside


# Lightning's warnings that a user of this tool cannot act on (its own internals, or settings that
# train() makes on purpose); the ones that matter stay.
QUIET = (
    r".*isinstance\(treespec, LeafSpec\)",  # Lightning's pytree use under torch >= 2.9
    r".*torch.distributed.nn.functional.all_gather is deprecated",  # Lightning's all_gather
    r"Precision bf16-mixed is not supported by the model summary",  # (it counts parameters in fp32)
    r".*does not have many workers",  # the loaders bucket in-process on purpose (data.num_workers)
    r".*is called with Trainer configured with multiple `ModelCheckpoint`",  # the first one is the best's
    # a mid-epoch resume: the DataModule's own state_dict skips the batches done (tests/test_resume.py)
    r".*your dataloader is not resumable",
)


def quiet_known_warnings() -> None:
    for pattern in QUIET:
        warnings.filterwarnings("ignore", message=pattern)


def hparams_of(cfg: DictConfig) -> dict:
    return {key: OmegaConf.select(cfg, key) for key in HPARAMS}


def instantiate_group(group: DictConfig | None) -> list:
    """Instantiate every `_target_` entry of a config group (callbacks, logger); null entries are off."""
    return [instantiate(c) for c in (group or {}).values() if c is not None and "_target_" in c]


def instantiate_loggers(group: DictConfig | None, resumed_step: int | None) -> list:
    """The loggers; on resume (at `resumed_step`), TensorBoard drops what the interrupted run logged after
    its checkpoint."""
    loggers = []
    for c in (group or {}).values():
        if c is None or "_target_" not in c:
            continue
        extra = {}
        if resumed_step is not None and c._target_.endswith("TensorBoardLogger"):
            extra["purge_step"] = resumed_step
        loggers.append(instantiate(c, **extra))
    return loggers


def write_hparams(trainer: L.Trainer, hparams: dict, metrics: dict) -> None:
    """Fill the HParams dashboard: hyperparameters with their final metrics (tags logged as scalars)."""
    from torch.utils.tensorboard.summary import hparams as hparams_summary

    for lg in trainer.loggers:
        if isinstance(lg, L.loggers.TensorBoardLogger):
            clean = {k: (v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in hparams.items()}
            writer = lg.experiment._get_file_writer()
            for summary in hparams_summary(clean, metrics):
                writer.add_summary(summary)
            lg.experiment.flush()


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (MB); nan where the platform does not say."""
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20  # (macOS reports bytes)


def peak_gpu_mb(trainer: L.Trainer) -> float:
    """Peak GPU memory allocated by tensors on this rank's device (MB); nan off a GPU."""
    device = trainer.strategy.root_device
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else float("nan")


def prepare_process(cfg: DictConfig) -> None:
    """Process-wide settings of an entry point: warnings, threads, the allocator."""
    quiet_known_warnings()
    if cfg.get("num_threads"):
        torch.set_num_threads(cfg.num_threads)
    if cfg.get("keep_freed_memory"):
        keep_freed_memory()


def resume_point(cfg: DictConfig, matches, mismatch=None) -> Path | None:
    """The checkpoint `cfg.ckpt_path` names (None: a fresh run); a resumed run continues in its own folder.

    `last` picks a run whose checkpoint's hyperparameters pass `matches`; a run given by name is refused
    where `mismatch(hyperparameters, run folder)` gives a reason (one line).
    """
    if not cfg.get("ckpt_path"):
        return None
    here = Path(cfg.paths.output_dir)
    resume = find_resume(cfg.ckpt_path, Path(cfg.paths.runs_dir), here, matches)
    if cfg.ckpt_path != "last" and mismatch is not None:
        why = mismatch(load_checkpoint(resume).get("hyper_parameters", {}), run_dir_of(resume))
        if why:
            raise AttnclfError(f"ckpt_path={cfg.ckpt_path!r}: {why}")
    if run_dir_of(resume).resolve() != here.resolve():  # continue in the interrupted run's folder
        cfg.paths.output_dir = str(run_dir_of(resume))
        move_log_to(run_dir_of(resume), here)
    log.info("resuming %s", resume)
    # the run's own checkpoints are in its checkpoints/: Lightning's warning that the folder is not empty is no news
    warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")
    return resume


def same_settings(hparams: dict, cfg: DictConfig) -> bool:
    """Whether a checkpoint is a classifier's with this command's settings (what ckpt_path=last takes)."""
    return "attention" in hparams and not setting_differences(hparams, module_settings(cfg), MODULE_DEFAULTS)


def settings_mismatch(hparams: dict, run: Path, cfg: DictConfig) -> str | None:
    """Why a classifier checkpoint cannot continue under this command's settings (None: it can)."""
    if "attention" not in hparams:
        return (
            f"{run} is not a classifier's run (a language model's from pretrain.py?); a classifier starts from "
            "one with model.init_from=<run>"
        )
    settings = module_settings(cfg)
    differ = setting_differences(hparams, settings, MODULE_DEFAULTS)
    if not differ:
        return None
    was = ", ".join(f"{config_key(k, cfg)}={saved!r}" for k, saved in differ.items())
    now = ", ".join(f"{config_key(k, cfg)}={settings[k]!r}" for k in differ)
    see = f" (its overrides: {run / '.hydra' / 'overrides.yaml'})" if (run / ".hydra").is_dir() else ""
    return f"that run was trained with {was}, this command gives {now}; resume with the run's own settings{see}"


def resumed_step_of(resume: Path | None) -> int | None:
    """The step a checkpoint resumes at (None: a fresh run)."""
    return None if resume is None else load_checkpoint(resume)["global_step"]


def check_resumed_vocab(resume: Path | None, vocab_size: int) -> None:
    """A resumed run's data settings must give its checkpoint's vocabulary."""
    if resume is None:
        return
    saved_vocab = load_checkpoint(resume).get("hyper_parameters", {}).get("vocab_size")
    if saved_vocab != vocab_size:
        raise AttnclfError(
            f"ckpt_path: {resume} has a vocabulary of {saved_vocab} words, this command's data settings give "
            f"{vocab_size}; resume with the run's own data.* settings"
        )


def make_trainer(cfg: DictConfig, resumed_step: int | None) -> tuple[L.Trainer, Throughput]:
    """The Trainer with the configured callbacks (a Throughput among them, always) and loggers. Built
    before any data work, so that a value it refuses costs no loading."""
    callbacks = instantiate_group(cfg.get("callbacks"))
    throughput = next((c for c in callbacks if isinstance(c, Throughput)), None) or Throughput()
    if throughput not in callbacks:
        callbacks.append(throughput)
    loggers = instantiate_loggers(cfg.get("logger"), resumed_step)
    if not loggers:  # logger=none: the learning-rate monitor has nowhere to write (Lightning refuses it)
        callbacks = [c for c in callbacks if not isinstance(c, L.callbacks.LearningRateMonitor)]
    try:
        trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()])
    except InstantiationException as e:  # a value the Trainer refuses (precision, accelerator, devices, ...)
        why = str(e.__cause__ or e).strip().splitlines()[-1]
        raise AttnclfError(f"trainer: {why}") from e
    return trainer, throughput


def train(cfg: DictConfig) -> float:
    """Fit, test the best checkpoint, write metrics.json; return the metric `cfg.optimized_metric`."""
    validate(cfg)
    init_from = None
    if cfg.model.get("init_from"):  # (checked before any data work; read once)
        from attnclf.training.pretrain import check_init_from  # (it builds on this module)

        m = cfg.model
        init_from = check_init_from(str(m.init_from), m.embed_dim, m.hidden_dim, m.num_layers, cfg.paths.pretrain_dir)
    prepare_process(cfg)
    resume = resume_point(cfg, lambda hp: same_settings(hp, cfg), lambda hp, run: settings_mismatch(hp, run, cfg))
    if resume is not None and cfg.ckpt_path == "last":
        log.info("ckpt_path=last: the newest unfinished run with attention=%s and these model settings", cfg.attention)
    L.seed_everything(cfg.seed, workers=True)
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer, throughput = make_trainer(cfg, resumed_step_of(resume))  # (it draws no random numbers)

    datamodule = IMDBDataModule(**cfg.data, seed=cfg.seed, vocab_path=str(out / "vocab.json"))
    datamodule.setup("fit")
    model = AttnClassifierModule(
        vocab_size=len(datamodule.vocab),
        num_classes=datamodule.num_classes,
        **module_settings(cfg),
    )
    if model.hparams.regularizer == "virtual_adversarial":
        n = datamodule.setup_unlabeled(cfg.regularizer.unlabeled_split, cfg.regularizer.unlabeled_batch_size)
        log.info("virtual adversarial training on %d unlabeled reviews (%s)", n, cfg.regularizer.unlabeled_split)
    embeddings = {"source": "random"}
    source = cfg.model.get("embeddings", "random")
    if cfg.model.get("init_from"):  # the embedding comes from the language models, with the encoder
        embeddings, source = {"source": "init_from"}, "random"
    if resume is None and source != "random":  # (a resumed run has its embedding in the checkpoint)
        matrix, embeddings = initial_embeddings(
            source, datamodule, cfg.model.embed_dim, OmegaConf.to_container(cfg.get("word2vec") or {}),
            cfg.paths.cache_dir,
        )  # fmt: skip
        model.model.embed.weight.data.copy_(torch.from_numpy(matrix))
    pretrained = None
    if resume is None and init_from is not None:
        from attnclf.training.pretrain import load_pretrained

        pretrained = load_pretrained(model.model, str(cfg.model.init_from), datamodule.vocab, loaded=init_from)
    init_from = None  # (the language models' checkpoint, optimizer state and all: not kept through training)
    check_resumed_vocab(resume, len(datamodule.vocab))

    start = time.perf_counter()
    trainer.fit(model, datamodule=datamodule, ckpt_path=str(resume) if resume else None, weights_only=True)
    fit_seconds = time.perf_counter() - start
    if trainer.interrupted:
        raise AttnclfError("training was interrupted; checkpoints so far are in " + str(out / "checkpoints"))

    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    tested = {}
    if cfg.get("test", True):  # the best checkpoint by val/acc (the first ModelCheckpoint's)
        tested = trainer.test(
            model, datamodule=datamodule, ckpt_path="best" if best else None, verbose=False, weights_only=True
        )[0]
    nan = float("nan")
    totals = throughput.final or throughput.totals()
    # (read from the state, restored from a checkpoint too: a resumed run may validate no more)
    val_best = float(model.val_acc_best.max_value)

    metrics = {
        "attention": cfg.attention,
        "seed": cfg.seed,
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
        "hparams": hparams_of(cfg),
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
    return metrics[cfg.get("optimized_metric") or "val/acc"]


def move_log_to(run: Path, fresh: Path) -> None:
    """A resumed run logs into its own train.log; the folder Hydra made for this command goes, if that is
    all it holds (its config and log: the resumed run's own .hydra/ stays as it was)."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, logging.FileHandler) and Path(h.baseFilename).parent.resolve() == fresh.resolve():
            root.removeHandler(h)
            h.close()
            handler = logging.FileHandler(run / "train.log", mode="a")
            handler.setFormatter(h.formatter)
            handler.setLevel(h.level)
            root.addHandler(handler)
    remove_if_unused(fresh)


def remove_if_unused(folder: Path) -> None:
    """Remove a run folder that holds nothing but Hydra's config, an empty or only-started log and the
    vocabulary (a start that failed before training)."""
    if folder.is_dir() and {p.name for p in folder.iterdir()} <= {".hydra", "train.log", "vocab.json"}:
        shutil.rmtree(folder, ignore_errors=True)


def run(fn, cfg):
    """Call an entry point's logic; a user error becomes one line on stderr and exit status 2.

    In a sweep (Hydra multirun) the error is raised on instead, so that the sweeper
    records the job as failed and goes on with the others.
    """
    try:
        return fn(cfg)
    except AttnclfError as e:
        print(f"error: {e}", file=sys.stderr)
        if in_multirun():
            raise SweepJobError(str(e)) from e
        try:
            out = OmegaConf.select(cfg, "paths.output_dir")
        except Exception:  # (outside Hydra its resolver is not there)
            out = None
        if out:  # a failed start leaves no run folder behind (one with checkpoints or metrics stays)
            logging.shutdown()
            remove_if_unused(Path(out))
        sys.exit(2)


class SweepJobError(AttnclfError, CompactHydraException):
    """A sweep job's user error, raised on for the sweeper to record. Where the sweep stops on it, Hydra
    prints its one line (a CompactHydraException), not a traceback."""


def main_entry(main) -> None:
    """Call a `@hydra.main` entry point. A multirun stopped by a job's user error exits 2, as a single run
    does (Hydra itself exits 1 after printing the error)."""
    try:
        main()
    except SystemExit as e:
        if e.code == 1 and isinstance(e.__context__, AttnclfError):  # (raised while Hydra handled ours)
            raise SystemExit(2) from None
        raise


def in_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
