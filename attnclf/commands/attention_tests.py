"""`attention_tests(cfg)`: Wiegreffe & Pinter's tests ("Attention is not not Explanation", EMNLP 2019) of a
trained classifier's attention, on the data, vocabulary and splits of its own run.

- `test=diagnostic`: a context-free model (each token alone, pooled by weights) trained three times, pooling
  with uniform weights, with an attention of its own, and with the trained classifier's weights held fixed;
  its test accuracy each time. Weights that carry what matters lift it above uniform.
- `test=adversarial`: a model of the classifier's own kind trained from a fresh start (its embedding the
  classifier's) to give the classifier's predictions while its attention diverges from the classifier's, once
  for each lambda: its test accuracy, and how far its output (TVD) and weights (JSD) are from the classifier's.
  Attention that is easy to replace costs little accuracy at a large JSD. Then the diagnostic's context-free
  model pooling with that adversary's weights held fixed: W&P found adversaries' weights guide it worse than
  the classifier's (set beside `test=diagnostic`'s frozen row).

Writes <run folder>/attention_tests/<test>.json and .md (or `output`), and a figure for the adversarial one.
"""

from __future__ import annotations

import logging
import tempfile
import time
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.settings.defaults import defaults_of, store_defaults
from attnclf.settings.run import DEFAULT_SEED, checkpoints_given
from attnclf.settings.typed import typed
from attnclf.utils.checks import number, one_of, positive_int, positive_number, shown
from attnclf.utils.jsonfile import write_json
from attnclf.utils.quiet import logs_at_least
from attnclf.utils.threads import torch_threads

# the models, data and Trainer are imported where they run, after the settings' checks: a bad value's
# refusal comes before torch (seconds) is imported
if TYPE_CHECKING:
    from attnclf.data.datamodule import TextDataModule
    from attnclf.data.dataset import TextDataset
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.training.guided import GuidedModule

log = logging.getLogger(__name__)
DIAGNOSTIC_WEIGHTS = ("uniform", "learned", "frozen")
# the classifier's forward passes a review costs each test's model, with the classifier beside it (measured:
# conf/attention_tests.yaml's defaults on IMDb runs, the estimate against the time taken)
PASSES = {"diagnostic": 1.0, "adversarial": 6.0}


def data_as_trained(clf: TrainedClassifier, s: AttentionTestsConfig) -> TextDataModule:
    """The run's own data, splits and vocabulary (its data.json and seed), batched `s.batch_size` a step."""
    from attnclf.data.datamodule import TextDataModule
    from attnclf.data.splits import run_data

    given = {"batch_size": s.batch_size, **({"cache_dir": s.cache_dir} if s.cache_dir else {})}
    data, carved, line = run_data(clf.run, clf.vocab.meta, given)
    log.info(line)
    dm = TextDataModule(data, int(carved["seed"]) if carved else DEFAULT_SEED)
    dm.setup("fit")
    if dm.vocab.itos != clf.vocab.itos:
        raise AttnclfError(
            f"ckpt={s.ckpt!r}: its run's data gives another vocabulary than the checkpoint's; "
            "give the data it was trained on"
        )
    dm.train_set = sampled(dm.train_set, s.train_reviews, s.seed, "train_reviews", "training")
    dm.val_set = sampled(dm.val_set, s.reviews, s.seed, "reviews", "validation")
    dm.test_set = sampled(dm.test_set, s.reviews, s.seed, "reviews", "test")
    return dm


def sampled(rows: TextDataset, n: int | None, seed: int, key: str, split: str) -> TextDataset:
    """A seeded sample of `n` rows of a split (all where n is None or at least as many), said in the log."""
    if n is None or n >= len(rows):
        log.info("%s: all %d %s rows (%s=%s)", split, len(rows), split, key, n)
        return rows
    log.info("%s: %d of the run's %d %s rows, a seeded sample (%s=null: all)", split, n, len(rows), split, key)
    return rows.sample(n, seed)


def said_time(clf: TrainedClassifier, dm: TextDataModule, s: AttentionTestsConfig) -> None:
    """The test's time, estimated before it starts from the classifier's own pace on a few training
    batches: every model reads the training and validation rows each epoch and the test rows once, with the
    classifier beside it (PASSES: the passes of the classifier's cost a review takes, by test)."""
    models = len(DIAGNOSTIC_WEIGHTS) if s.test == "diagnostic" else len(s.lambdas)
    reads = models * (s.epochs * (len(dm.train_set) + len(dm.val_set)) + len(dm.test_set))
    seconds = reads * PASSES[s.test] * classifier_pace(clf, dm)
    log.info(
        "%s: %d model(s), %d epoch(s) of %d training rows, tested on %d rows: about %s on this machine, from "
        "the classifier's pace (said again after each model; epochs, train_reviews and reviews set it)",
        s.test,
        models,
        s.epochs,
        len(dm.train_set),
        len(dm.test_set),
        duration(seconds),
    )


def duration(seconds: float) -> str:
    """A time estimate as a person reads it: 40 s, 3 min, 1.5 h."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def classifier_pace(clf: TrainedClassifier, dm: TextDataModule, batches: int = 8) -> float:
    """Seconds a training review takes the classifier's forward pass (a few training batches, timed after
    a first one that warms up)."""
    import torch

    model, done, t = clf.module.model.eval(), 0, time.perf_counter()
    with torch.no_grad():
        for i, (ids, lengths, _) in enumerate(dm.train_dataloader()):
            if i > batches:
                break
            model(ids, lengths)
            if i == 0:
                t = time.perf_counter()
            else:
                done += len(ids)
    return (time.perf_counter() - t) / max(done, 1)


def fit_and_test(module: GuidedModule, dm: TextDataModule, s: AttentionTestsConfig) -> dict:
    """Train `module` s.epochs epochs, then test its best epoch (val/acc): accuracy, and the output's TVD and
    the weights' JSD (nats) from the classifier's, means over the test rows."""
    import pytorch_lightning as L
    import torch
    from pytorch_lightning.callbacks import ModelCheckpoint

    from attnclf.training.trainer import quiet_known_warnings

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        quiet_known_warnings()
        # (the classifier beside each model is in eval mode on purpose: it only reads)
        warnings.filterwarnings("ignore", message=r".*module\(s\) in eval mode at the start of training")
        best = ModelCheckpoint(dirpath=tmp, monitor="val/acc", mode="max", save_top_k=1)
        # quietly: the Trainer's notes as it is built (the hardware found, an advertising tip) are not ours to say
        with logs_at_least(logging.WARNING, "pytorch_lightning", "lightning_fabric", "lightning"):
            trainer = L.Trainer(
                max_epochs=s.epochs,
                logger=False,
                callbacks=[best],
                enable_model_summary=False,
                num_sanity_val_steps=0,
                accelerator="cpu",
                devices=1,
            )
        t = time.perf_counter()
        # "`Trainer.fit` stopped: max_epochs ..."
        with logs_at_least(logging.WARNING, "pytorch_lightning"):
            trainer.fit(module, dm)
        seconds = time.perf_counter() - t
        # "Restoring states from the checkpoint"
        with logs_at_least(logging.WARNING, "pytorch_lightning"):
            trainer.test(module, dm, ckpt_path="best", verbose=False)
    out = {k: torch.cat(v).double() for k, v in module.outputs.items()}
    return {
        "accuracy": float(out["correct"].mean()),
        "base_accuracy": float(out["base_correct"].mean()),
        "tvd_from_base": float(out["tvd"].mean()),
        "jsd_from_base": float(out["jsd"].mean()),
        "test_rows": len(out["correct"]),
        "fit_seconds": round(seconds, 1),
    }


def diagnostic(clf: TrainedClassifier, dm: TextDataModule, s: AttentionTestsConfig) -> dict:
    """The context-free model with each kind of weights."""
    results, start = {}, time.perf_counter()
    for i, weights in enumerate(DIAGNOSTIC_WEIGHTS):
        log.info("diagnostic: the context-free model with %s weights", weights)
        results[weights] = context_free(clf, dm, s, weights)
        said_left("diagnostic", i + 1, len(DIAGNOSTIC_WEIGHTS), start)
    return {"weights": results}


def said_left(test: str, done: int, models: int, start: float) -> None:
    """After each model: the time so far, and the time left at the pace of the models done (the estimate
    said first is from the classifier's pace alone, before any model trained)."""
    spent = time.perf_counter() - start
    if done < models:
        left = duration(spent / done * (models - done))
        log.info("%s: %d of %d models done in %s; about %s left", test, done, models, duration(spent), left)


def context_free(
    clf: TrainedClassifier, dm: TextDataModule, s: AttentionTestsConfig, weights: str, source=None
) -> dict:
    """The diagnostic's context-free model, its embedding starting from the classifier's, pooling with
    `weights` (frozen: the classifier's, or `source`'s where given), fitted and tested."""
    import torch

    from attnclf.models.context_free import ContextFreeClassifier
    from attnclf.training.guided import GuidedModule

    base = clf.module.model
    torch.manual_seed(s.seed)
    student = ContextFreeClassifier(
        len(clf.vocab), len(clf.labels), base.embed.embedding_dim, s.hidden_dim, learned=weights == "learned"
    )
    student.embed.weight.data.copy_(base.embed.weight.data)
    return fit_and_test(GuidedModule(base, student, "diagnostic", weights, lr=s.lr, source=source), dm, s)


def adversarial(clf: TrainedClassifier, dm: TextDataModule, s: AttentionTestsConfig) -> dict:
    """A model of the classifier's kind for each lambda, trained to its predictions away from its weights."""
    import torch

    from attnclf.models.classifier import ClassifierNet
    from attnclf.training.guided import GuidedModule

    base, hp = clf.module.model, clf.module.hparams
    runs, start = [], time.perf_counter()
    for i, lam in enumerate(s.lambdas):
        torch.manual_seed(s.seed)
        student = ClassifierNet(hp.vocab_size, hp.num_classes, clf.module.config.attention, clf.module.config.model)
        student.embed.weight.data.copy_(base.embed.weight.data)
        log.info("adversarial: lambda %g", lam)
        run = fit_and_test(GuidedModule(base, student, "adversarial", lam=lam, lr=s.lr), dm, s)
        log.info("adversarial: lambda %g: the diagnostic with its weights", lam)
        # its best epoch's weights
        run["diagnostic"] = context_free(clf, dm, s, "frozen", source=student)
        runs.append({"lambda": lam, **run})
        said_left("adversarial", i + 1, len(s.lambdas), start)
    return {"lambdas": runs}


def attention_tests(cfg: DictConfig) -> dict:
    """The test `test` of the run `ckpt`: its result, written as JSON and Markdown (and a figure)."""
    # every value checked before any checkpoint or data is read
    s = attention_tests_settings(cfg)
    with torch_threads(s.num_threads):
        return run_tests(s)


def run_tests(s: AttentionTestsConfig) -> dict:
    """attention_tests() with its settings read and checked."""
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.presentation.figures import adversarial_training_figure
    from attnclf.presentation.markdown import attention_tests_markdown
    from attnclf.training.checkpoint import best_checkpoint

    ckpt = best_checkpoint(s.ckpt)
    clf = TrainedClassifier.from_checkpoint(ckpt)
    dm = data_as_trained(clf, s)
    said_time(clf, dm, s)
    t = time.perf_counter()
    found = diagnostic(clf, dm, s) if s.test == "diagnostic" else adversarial(clf, dm, s)
    seconds = round(time.perf_counter() - t, 1)
    result = {
        "checkpoint": str(ckpt),
        "attention": clf.module.hparams.attention,
        "test": s.test,
        "epochs": s.epochs,
        "seed": s.seed,
        **found,
        "total_seconds": seconds,
    }
    out = Path(s.output) if s.output else clf.run / "attention_tests"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"{s.test}.json", result)
    text = attention_tests_markdown(result)
    (out / f"{s.test}.md").write_text(text)
    if s.test == "adversarial":
        adversarial_training_figure(result).savefig(out / "adversarial_training.png", dpi=110)
    print(text)
    print(f"written to {out}")
    return result


ATTENTION_TESTS = ("diagnostic", "adversarial")


@dataclass
class AttentionTestsConfig:
    """`attnclf attention-tests`' settings (conf/attention_tests.yaml): Wiegreffe & Pinter's tests of a run."""

    # the base: a classifier checkpoint or run folder (its data, vocabulary and test rows)
    ckpt: Any = None
    # diagnostic: a context-free model pooling with the base's weights (held fixed), uniform weights, or an
    # attention of its own; adversarial: a model of the base's kind trained to give its predictions with
    # attention far from its weights, once per lambda
    test: str = "diagnostic"
    # each model's training (the best epoch by val/acc is tested)
    epochs: int = 8
    batch_size: int = 32
    # Adam (AMSGrad), weight decay 1e-5, as theirs
    lr: float = 1e-3
    # adversarial: the weight of KL(its weights || the base's) against TVD
    lambdas: Any = field(default_factory=lambda: [0.001, 0.01, 0.1, 1.0])
    # diagnostic: the context-free model's width
    hidden_dim: int = 128
    # test rows each model is tested on, and at most as many validation rows: seeded samples of the run's
    # (None: all of them)
    reviews: int | None = 1000
    # training rows each model learns from: a seeded sample of the run's (None: all of them)
    train_reviews: int | None = 2000
    # the models' start and the rows sampled
    seed: int = 0
    # torch CPU threads; None: PyTorch's default
    num_threads: int | None = None
    # None: <run folder>/attention_tests/
    output: str | None = None
    # the tokenised-data cache (conf/attention_tests.yaml: paths.cache_dir)
    cache_dir: str | None = None

    def normalize(self) -> None:
        self.ckpt = checkpoints_given(self.ckpt, "test")[0]
        lambdas = self.lambdas if isinstance(self.lambdas, (list, tuple)) else [self.lambdas]
        self.lambdas = [float(x) if number(x) else x for x in lambdas]

    def check(self) -> None:
        one_of("test", self.test, ATTENTION_TESTS)
        for key in ("epochs", "batch_size", "hidden_dim"):
            positive_int(key, getattr(self, key))
        for key in ("reviews", "train_reviews"):
            positive_int(key, getattr(self, key), "all")
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        positive_number("lr", self.lr)
        if not self.lambdas:
            raise AttnclfError("lambdas=[]: give at least one weight, e.g. lambdas=[0.001,0.01,0.1]")
        for lam in self.lambdas:
            if not number(lam) or not 0 <= lam < float("inf"):
                raise AttnclfError(
                    f"lambdas: {shown(lam)}; allowed: numbers >= 0 (the weight of the attention's "
                    "divergence from the base's), e.g. lambdas=[0.001,0.01,0.1]"
                )


# conf/attention_tests.yaml starts from these defaults
store_defaults("attention_tests", defaults_of(AttentionTestsConfig))


def attention_tests_settings(cfg: DictConfig) -> AttentionTestsConfig:
    values = {f.name: cfg.get(f.name) for f in fields(AttentionTestsConfig) if f.name in cfg}
    values = {k: OmegaConf.to_container(v) if OmegaConf.is_config(v) else v for k, v in values.items()}
    config = typed(AttentionTestsConfig, values, "")
    config.normalize()
    config.check()
    return config


# what the Hydra app `attnclf attention-tests` calls with its composed config (attnclf/commands/__init__.py)
command = attention_tests
