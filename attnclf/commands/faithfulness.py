"""`attnclf faithfulness ckpt=<run>`: can a checkpoint's attention maps be read as "the words the model used"?

`faithfulness(cfg)` runs the measures (attnclf/analysis/faithfulness.py) on a fixed seeded sample of a
split and writes, into `<run folder>/faithfulness_<split>/` (or `output`): faithfulness.json, summary.md,
summary.png and TensorBoard events (scalars, histograms, the summary figure, and four reviews shaded by each
measure). Then its settings (`FaithfulnessConfig`) and its Hydra entry.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from omegaconf import DictConfig

from attnclf.errors import AttnclfError
from attnclf.settings.data import RationalesConfig
from attnclf.settings.defaults import store_run_reader_defaults
from attnclf.settings.run import check_device, checkpoints_given, on_a_run
from attnclf.settings.typed import typed
from attnclf.utils.checks import number, one_of, positive_int, repeated
from attnclf.utils.jsonfile import write_json
from attnclf.utils.threads import torch_threads

# the measures, the model and the figures are imported where they run, after the settings' checks: a bad
# value's refusal comes before torch (seconds) is imported
if TYPE_CHECKING:
    from attnclf.data.rationales import Aligned
    from attnclf.inference.trained import TrainedClassifier

log = logging.getLogger(__name__)


def faithfulness(cfg: DictConfig) -> dict:
    """The measures on `reviews` reviews of the run's own split (data.split of the data it was trained on,
    data.json; data.* keys given go over it)."""
    # every value typed and checked, before any checkpoint or data is read
    cfg = faithfulness_settings(cfg)
    with torch_threads(cfg.num_threads):
        return faithfulness_as_set(cfg)


def faithfulness_as_set(cfg: FaithfulnessConfig) -> dict:
    """faithfulness() with its settings read and checked."""
    from attnclf.analysis import measures
    from attnclf.analysis.faithfulness import measure
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.training.checkpoint import best_checkpoint, run_dir_of

    ckpt = best_checkpoint(cfg.ckpt)
    clf = TrainedClassifier.from_checkpoint(ckpt, cfg.device)
    marked = None
    if cfg.rationales.path:
        marked, about = with_rationales(clf, cfg)
        seqs, labels = marked.seqs, marked.labels
        folder = f"faithfulness_rationales_{about['split']}"
    else:
        seqs, labels, about = sampled_reviews(clf, cfg)
        folder = f"faithfulness_{cfg.split}"
    t0 = time.perf_counter()
    result, arrays = measure(clf.module.model, seqs, labels, cfg.ks, cfg, marked)
    result = {
        "checkpoint": str(ckpt),
        "attention": clf.module.hparams.attention,
        **about,
        "reviews": len(seqs),
        "mean_tokens": float(np.mean([len(s) for s in seqs])),
        "seed": cfg.seed,
        "ks": [measures.k_name(k) for k in cfg.ks],
        **result,
        "total_seconds": round(time.perf_counter() - t0, 1),
    }
    out = Path(cfg.output) if cfg.output else run_dir_of(ckpt) / folder
    write_outputs(out, result, arrays, clf, seqs)
    print(f"written to {out}")
    return result


def sampled_reviews(clf: TrainedClassifier, cfg: FaithfulnessConfig) -> tuple[list[np.ndarray], np.ndarray, dict]:
    """(the sampled reviews as token ids, their labels, what the result says of them): a seeded sample of
    the split's reviews of min_tokens..max_tokens tokens."""
    from attnclf.analysis.faithfulness import eligible_reviews, sample
    from attnclf.inference.as_trained import split_as_trained

    data, dataset = split_as_trained(clf, cfg.split, cfg.data)
    picked = sample(dataset.lengths, cfg.reviews, cfg.max_tokens, cfg.seed, cfg.split, cfg.min_tokens)
    seqs = [dataset.tokens(i).astype(np.int64) for i in picked]
    eligible = eligible_reviews(dataset.lengths, cfg.max_tokens, cfg.min_tokens)
    about = {
        "data": str(data.path or data.train_file),
        "split": cfg.split,
        "max_tokens": cfg.max_tokens,
        "min_tokens": cfg.min_tokens,
        "eligible_share": float(np.mean(eligible)),
    }
    log.info(
        "%d reviews of %s (at most %d tokens), %s attention",
        len(seqs),
        cfg.split,
        cfg.max_tokens,
        clf.module.hparams.attention,
    )
    return seqs, dataset.labels[dataset.rows[picked]], about


def write_outputs(out: Path, result: dict, arrays: dict, clf: TrainedClassifier, seqs: list[np.ndarray]) -> None:
    """faithfulness.json, the figures, summary.md (printed too) and the TensorBoard events in `out`."""
    from attnclf.presentation.figures import adversarial_figure, aopc_figure, faithfulness_figure
    from attnclf.presentation.markdown import faithfulness_markdown
    from attnclf.presentation.tensorboard import write_faithfulness

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "faithfulness.json", result)
    fig = faithfulness_figure(result, arrays)
    fig.savefig(out / "summary.png", dpi=110)
    aopc = aopc_figure(result)
    aopc.savefig(out / "aopc.png", dpi=110)
    adv_fig = adversarial_figure(result, arrays) if "adversarial" in result else None
    if adv_fig is not None:
        adv_fig.savefig(out / "adversarial.png", dpi=110)
    summary = faithfulness_markdown(result)
    (out / "summary.md").write_text(summary)
    attr, loo = arrays["attr"], arrays["loo"]
    shown = [
        (
            clf.vocab.decode(seqs[i]),
            f"{result['attention']} attention | predicted: {clf.labels[attr.pred[i]]} (p={attr.probs[i].max():.2f})",
            {"attention": attr.weights[i], "gradient x input": attr.gradient[i], "leave-one-out": loo[i]},
        )
        for i in range(min(4, len(seqs)))
    ]
    write_faithfulness(out, result, arrays, fig, shown, aopc, adv_fig)
    print(summary)


def with_rationales(clf: TrainedClassifier, cfg: FaithfulnessConfig) -> tuple[Aligned, dict]:
    """The rationale set's reviews as the classifier reads them, with their marked tokens (a seeded sample of
    `reviews` where there are more), and what the result says of them."""
    from attnclf.data.rationales import Aligned, LeftOut, align, read_rationales

    left = LeftOut()
    texts = read_rationales(cfg.rationales, left)
    marked = align(texts, clf.vocab, clf.max_length, clf.truncation, clf.labels, left, cfg.rationales.labels)
    dropped = left.report()
    if not marked.seqs:
        raise AttnclfError(
            f"rationales.path={cfg.rationales.path!r}: no review with a marked token to score "
            f"({len(texts)} read; left out: {dropped})"
        )
    if len(marked.seqs) > cfg.reviews:
        keep = np.sort(np.random.default_rng(cfg.seed).choice(len(marked.seqs), cfg.reviews, replace=False))
        marked = Aligned(
            [marked.seqs[i] for i in keep],
            marked.labels[keep],
            [marked.gold[i] for i in keep],
            [marked.spans[i] for i in keep],
            [marked.ids[i] for i in keep],
        )
    # recorded whole: faithfulness.json names it
    path = Path(cfg.rationales.path).expanduser().resolve()
    split = cfg.rationales.split if path.is_dir() else path.stem
    log.info(
        "%d reviews with rationales of %s (%s; %d read), read as the classifier reads (at most %s tokens), "
        "%s attention",
        len(marked.seqs),
        path,
        split,
        len(texts),
        clf.max_length,
        clf.module.hparams.attention,
    )
    about = {
        "data": str(path),
        "split": split,
        "rationales": {"read": len(texts), "left_out": dropped},
        "max_tokens": clf.max_length,
        "eligible_share": len(marked.seqs) / len(texts),
    }
    return marked, about


def load_all(
    runs: list[str], split: str, given: dict, reviews: int, max_tokens: int, seed: int, cache_dir: str | None = None
):
    """Each run's TrainedClassifier, and the same sampled reviews as each of them reads them (the split `split` of
    the data each was trained on, the data.* keys `given` over it: the runs must read the same rows)."""
    from attnclf.analysis.faithfulness import sample
    from attnclf.inference.as_trained import split_as_trained
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.training.checkpoint import best_checkpoint

    clfs = [TrainedClassifier.from_checkpoint(best_checkpoint(r)) for r in runs]
    reading = {(c.max_length, c.truncation) for c in clfs}
    if len(reading) > 1:
        raise AttnclfError(f"the checkpoints read reviews differently (max_length, truncation): {sorted(reading)}")
    given = {**given, "cache_dir": cache_dir} if cache_dir else given
    sets = [split_as_trained(c, split, given)[1] for c in clfs]
    if any(not np.array_equal(s.rows, sets[0].rows) for s in sets):
        raise AttnclfError(
            f"the runs read different {split} rows (trained on other data, or carved with another "
            "seed); compare runs of the same data and test rows"
        )
    picked = sample(sets[0].lengths, reviews, max_tokens, seed, split)
    return clfs, [[s.tokens(i).astype(np.int64) for i in picked] for s in sets]


@dataclass
class FaithfulnessConfig:
    """`attnclf faithfulness`'s settings (conf/faithfulness.yaml)."""

    # a classifier checkpoint or run folder
    ckpt: Any = None
    # a fixed sample of the split (seeded), among reviews of at most max_tokens tokens
    reviews: int = 1000
    # leave-one-out costs one forward pass per token: the cap keeps 1,000 reviews under 10 min
    max_tokens: int = 256
    # and of at least this many (Jain & Wallace: SST sentences and IMDb reviews of 6 or more)
    min_tokens: int = 1
    # the sample, the random erasure order and the permutations
    seed: int = 0
    # erasure sizes: tokens, or a fraction (< 1) of the review's length
    ks: Any = field(default_factory=lambda: [1, 3, 5, 0.1])
    # shuffles of the weights per review
    permutations: int = 100
    # epsilon: Jain & Wallace's adversarial attention search, outputs kept within it (theirs: 0.01); None: none
    adversarial: float | None = None
    # more importance sources, from Captum: integrated_gradients, feature_ablation (about 50x and 1x
    # leave-one-out's cost)
    sources: list[str] = field(default_factory=list)
    # padded tokens per forward pass (larger batches were slower on CPU)
    batch_tokens: int = 8192
    # cpu or cuda
    device: str = "cpu"
    # torch CPU threads, as train's; None: PyTorch's default
    num_threads: int | None = None
    # None: <run folder>/faithfulness_<split>
    output: str | None = None
    # data.split on the command line: any split of the data, or the test/validation rows the run carved
    split: str = "test"
    data: dict = field(default_factory=dict)
    # human rationales: each importance source scored against the words people marked (token F1, AUPRC,
    # IOU-F1); the reviews are then the rationale set's (all of them, up to `reviews`), read as the classifier
    # reads
    rationales: RationalesConfig = field(default_factory=RationalesConfig)

    def normalize(self) -> None:
        self.ckpt = checkpoints_given(self.ckpt, "examine")[0]
        self.ks = erasure_sizes(self.ks)
        self.rationales.normalize()

    def check(self) -> None:
        self.rationales.check()
        positive_int("reviews", self.reviews)
        if self.max_tokens < 2:
            raise AttnclfError(f"max_tokens={self.max_tokens!r}; allowed: a whole number >= 2")
        if not 1 <= self.min_tokens <= self.max_tokens:
            raise AttnclfError(
                f"min_tokens={self.min_tokens!r}; allowed: a whole number from 1 to max_tokens ({self.max_tokens})"
            )
        positive_int("permutations", self.permutations)
        for source in self.sources:
            one_of("sources", source, ATTRIBUTION_SOURCES)
        twice = repeated(self.sources)
        if twice:
            raise AttnclfError(f"sources: {twice[0]} is given twice; give each source once")
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        if self.adversarial is not None and not 0 < self.adversarial < 1:
            raise AttnclfError(
                f"adversarial={self.adversarial!r}: the output's allowed change (total variation) "
                "must be in (0, 1), e.g. adversarial=0.01; null: no search"
            )
        positive_int("batch_tokens", self.batch_tokens)
        check_device(self.device)


# attnclf faithfulness's importance sources from Captum (attnclf.analysis.attribution), beside the built-in ones
ATTRIBUTION_SOURCES = ("integrated_gradients", "feature_ablation")


def erasure_sizes(ks) -> list[float]:
    """Erasure sizes: whole numbers >= 1 (tokens) or fractions in (0, 1) of the review's length."""
    if not isinstance(ks, (list, tuple)) or not ks:
        raise AttnclfError(f"ks={ks!r}; give a list of token counts (>= 1) or fractions in (0, 1), e.g. [1,3,5,0.1]")
    for k in ks:
        if not number(k) or not (0 < k < 1 or (k >= 1 and k == int(k))):
            raise AttnclfError(f"ks: {k!r} is out of range; allowed: whole numbers >= 1 or fractions in (0, 1)")
    return [float(k) for k in ks]


# conf/faithfulness.yaml starts from these defaults
store_run_reader_defaults("faithfulness", FaithfulnessConfig)


def faithfulness_settings(cfg: DictConfig) -> FaithfulnessConfig:
    rationales = typed(RationalesConfig, cfg.get("rationales"), "rationales")
    return on_a_run(FaithfulnessConfig, cfg, "faithfulness", rationales=rationales)


# what the Hydra app `attnclf faithfulness` calls with its composed config (attnclf/commands/__init__.py)
command = faithfulness
