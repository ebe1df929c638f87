"""An exported model's card (README.md): huggingface_hub's ModelCardData as the YAML header (library, tags,
dataset, metrics as a model-index from the run's metrics.json, the license where given), and a body written
from the run itself: what the model is, its data, its training, its test figures, its faithfulness figures
where the run folder holds them, and its limits."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from omegaconf import OmegaConf

# where the project's measured comparisons are (attnclf's source)
RESULTS = "docs/results.md in attnclf's source"


def read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def dataset_of(data: dict) -> str:
    """The data's name as the card gives it: a Hub id, else the folder's or file's name."""
    where = data.get("path") or data.get("train_file") or "unknown"
    return where if "/" in where and not Path(where).exists() else Path(where).name


@dataclass
class TestFigures:
    """The test figures a card states, where they were measured, and on how many of the split's reviews."""

    values: dict  # accuracy, f1 (macro), loss
    reviews: int
    of: int | None  # the test split's reviews; None: not known
    by: str

    @property
    def whole(self) -> bool:
        return self.of is not None and self.reviews == self.of


def test_figures(run: Path, metrics: dict, data: dict, checkpoint: Path) -> TestFigures | None:
    """The whole test split's figures of `checkpoint` where `attnclf eval` measured them (eval_test.json),
    else the training run's own test (metrics.json), on however many reviews it tested; None: no test."""
    evaluated = read(run / "eval_test.json")
    where = str(data.get("path") or data.get("train_file"))
    if (
        evaluated.get("quantize", "none") == "none"
        and Path(str(evaluated.get("checkpoint"))).resolve() == checkpoint.resolve()
        and evaluated.get("data") == where
    ):
        values = {"accuracy": evaluated["accuracy"], "f1": evaluated["macro_f1"], "loss": evaluated["loss"]}
        return TestFigures(values, evaluated["reviews"], evaluated["reviews"], "`attnclf eval`")
    if not isinstance(metrics.get("test/acc"), int | float) or math.isnan(metrics["test/acc"]):
        return None
    values = {"accuracy": metrics["test/acc"], "f1": metrics.get("test/macro_f1"), "loss": metrics.get("test/loss")}
    reviews = metrics.get("test/reviews") or sum(map(sum, metrics.get("test/confusion_matrix") or []))
    return TestFigures(values, reviews, metrics.get("test/split_reviews") or older_split(run, reviews), "training")


def older_split(run: Path, reviews: int) -> int | None:
    """A run from before metrics.json counted its test split: `reviews` where it tested the whole split
    (trainer.limit_test_batches 1 or unset in its config), else None."""
    try:
        limit = OmegaConf.select(OmegaConf.load(run / ".hydra" / "config.yaml"), "trainer.limit_test_batches")
    except OSError:
        return None
    return reviews if limit in (None, 1, 1.0) else None


def header(config: dict, figures: TestFigures | None, data: dict, license: str | None) -> ModelCardData:
    """The YAML header; a model-index of test results only where they are the whole split's."""
    hp = config["hyper_parameters"]
    name = dataset_of(data)
    results = [
        EvalResult(task_type="text-classification", dataset_type=name, dataset_name=name, dataset_split="test",
                   metric_type=metric, metric_name=metric, metric_value=round(float(value), 4))
        for metric, value in (figures.values.items() if figures and figures.whole else ())
        if metric != "loss" and isinstance(value, int | float)
    ]  # fmt: skip
    return ModelCardData(
        library_name="attnclf",
        license=license,
        tags=["text-classification", "attention", hp["attention"], hp["model"]["rnn"], "attnclf"],
        datasets=[name],
        metrics=["accuracy", "f1"],
        pipeline_tag="text-classification",
        model_name=f"attnclf {hp['attention']} attention over a Bi{hp['model']['rnn'].upper()}",
        eval_results=results or None,
    )


def class_named(hp: dict) -> str:
    """The attention's class as the card names it: `module.Class`, with its keys where it has any."""
    keys = ", ".join(f"{k}={json.dumps(v)}" for k, v in (hp.get("attention_keys") or {}).items())
    return f"the class `{hp['attention_class']}`" + (f" with {keys}" if keys else "")


def body(config: dict, metrics: dict, data: dict, faithfulness: dict, test: TestFigures | None) -> str:
    hp, m = config["hyper_parameters"], config["hyper_parameters"]["model"]
    rnn = f"Bi{m['rnn'].upper()}"
    lines = [
        f"# {hp['attention']} attention over a {rnn}",
        "",
        f"A text classifier trained with attnclf: word embeddings ({m['embed_dim']} "
        f"dimensions) -> a {m['num_layers']}-layer {rnn} ({m['hidden_dim']} a direction) -> `{hp['attention']}` "
        f"attention pooling ({class_named(hp)}; normaliser "
        f"{m['attention_normalizer']}) -> a linear layer over {len(config['labels'])} classes: "
        f"{', '.join(config['labels'])}.",
        "",
        "## Use",
        "",
        "```bash",
        "pip install attnclf",
        'attnclf predict ckpt=<this folder> text="a wonderful film"',
        "attnclf serve ckpt=<this folder>",
        "```",
        "",
        "```python",
        "from attnclf.inference.trained import TrainedClassifier",
        "clf = TrainedClassifier.from_pretrained('<this folder>')",
        "clf.predict(['a wonderful film'])[0].label_name",
        "```",
        "",
        "## Data",
        "",
        f"`{dataset_of(data)}`: the text column `{data.get('text_column', 'text')}`, labels "
        f"`{data.get('label_column', 'label')}`; validation carved from training ({data.get('val_size')} of it). "
        f"Reviews read up to {data.get('max_length')} tokens in training and {config['max_length']} at test "
        f"({config['truncation']} truncation).",
        "",
        "## Training",
        "",
        f"Optimizer: {json.dumps(hp['optimizer'])}; regularizer: {hp['regularizer']['name']}; seed "
        f"{metrics.get('seed')}; {metrics.get('epochs')} epochs, {metrics.get('steps')} steps.",
    ]
    return "\n".join([*lines, *figures(metrics, test, faithfulness), *limits(config)]) + "\n"


def figures(metrics: dict, test: TestFigures | None, faithfulness: dict) -> list[str]:
    out = ["", "## Evaluation", "", *measured_on(test), "", "| figure | value |", "|---|---|"]
    named = {"accuracy": "test/acc", "f1": "test/macro_f1", "loss": "test/loss"}
    for key, value in test.values.items() if test else ():
        if isinstance(value, int | float):
            out.append(f"| {named[key]} | {value:.4f} |")
    for key in ("val/acc", "test/attn_entropy"):
        if isinstance(metrics.get(key), int | float):
            out.append(f"| {key} | {metrics[key]:.4f} |")
    taus = (faithfulness.get("agreement") or {}).get("magnitude") or {}
    if taus:
        said = {"gradient": "|gradient x input|", "loo": "|leave-one-out|"}
        out += ["", f"Faithfulness (`attnclf faithfulness`, {faithfulness.get('reviews')} test reviews): Kendall tau "
                "of the attention weights against each importance measure, mean ± sd over reviews:", ""]  # fmt: skip
        out += [f"- {said[k]}: {v['mean']:.3f} ± {v['sd']:.3f}" for k, v in taus.items() if k in said]
    return out


def measured_on(test: TestFigures | None) -> list[str]:
    """The line that says on what the test figures were measured."""
    if test is None:
        return ["The run was not tested (run.test=false): no test figures."]
    by = "by `attnclf eval`" if test.by != "training" else "by the training run's test"
    if test.whole:
        return [f"Test figures measured {by} on the whole test split: {test.reviews:,} reviews."]
    of = f"of the test split's {test.of:,}" if test.of else "of the test split (its size unrecorded)"
    return [
        f"Test figures measured {by} on {test.reviews:,} reviews {of} (trainer.limit_test_batches): a part, not "
        "the split's figures, and so not in the card's model-index. `attnclf eval ckpt=<run>` measures the whole "
        "split; an export after it states those."
    ]


def limits(config: dict) -> list[str]:
    return [
        "",
        "## Limits",
        "",
        f"- It reads words as tokenised in training, in the language of its data; a text longer than "
        f"{config['max_length']} tokens is cut ({config['truncation']}).",
        "- Its attention weights say where the pooling looked, not why the decision was made: how far they agree "
        "with gradient and leave-one-out importance is measured per run (see the faithfulness figures), and in "
        f"the project's results: {RESULTS}.",
        "- Trained for one dataset's labels: other domains need evaluation before use.",
    ]


def model_card(config: dict, run: Path, checkpoint: Path, license: str | None = None) -> ModelCard:
    """The card of a model exported from `checkpoint` of the run folder `run`."""
    metrics = read(run / "metrics.json")
    data = read(run / "data.json").get("data", {})
    faithfulness = read(run / "faithfulness_test" / "faithfulness.json")
    test = test_figures(run, metrics, data, checkpoint)
    meta = header(config, test, data, license)
    return ModelCard(f"---\n{meta.to_yaml()}\n---\n\n{body(config, metrics, data, faithfulness, test)}")
