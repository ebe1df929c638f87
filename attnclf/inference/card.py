"""An exported model's card (README.md): huggingface_hub's ModelCardData as the YAML header (library, tags,
dataset, metrics as a model-index from the run's metrics.json, the license where given), and a body written
from the run itself: what the model is, its data, its training, its test figures, its faithfulness figures
where the run folder holds them, and its limits."""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

# where the project's measured comparisons are (attnclf's source)
RESULTS = "docs/results.md in attnclf's source"


def read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def dataset_of(data: dict) -> str:
    """The data's name as the card gives it: a Hub id, else the folder's or file's name."""
    where = data.get("path") or data.get("train_file") or "unknown"
    return where if "/" in where and not Path(where).exists() else Path(where).name


def header(config: dict, metrics: dict, data: dict, license: str | None) -> ModelCardData:
    hp = config["hyper_parameters"]
    name = dataset_of(data)
    results = [
        EvalResult(task_type="text-classification", dataset_type=name, dataset_name=name, dataset_split="test",
                   metric_type=metric, metric_name=metric, metric_value=round(float(metrics[f"test/{key}"]), 4))
        for metric, key in (("accuracy", "acc"), ("f1", "macro_f1"))
        if isinstance(metrics.get(f"test/{key}"), int | float)
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


def body(config: dict, metrics: dict, data: dict, faithfulness: dict) -> str:
    hp, m = config["hyper_parameters"], config["hyper_parameters"]["model"]
    rnn = f"Bi{m['rnn'].upper()}"
    lines = [
        f"# {hp['attention']} attention over a {rnn}",
        "",
        f"A text classifier trained with attnclf: word embeddings ({m['embed_dim']} "
        f"dimensions) -> a {m['num_layers']}-layer {rnn} ({m['hidden_dim']} a direction) -> `{hp['attention']}` "
        f"attention pooling (`{hp['attention_class']}`, {json.dumps(hp['attention_keys'])}; normaliser "
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
    return "\n".join([*lines, *figures(metrics, faithfulness), *limits(config)]) + "\n"


def figures(metrics: dict, faithfulness: dict) -> list[str]:
    out = ["", "## Evaluation", "", "| test figure | value |", "|---|---|"]
    for key in ("test/acc", "test/macro_f1", "test/loss", "val/acc", "test/attn_entropy"):
        if isinstance(metrics.get(key), int | float):
            out.append(f"| {key} | {metrics[key]:.4f} |")
    taus = (faithfulness.get("agreement") or {}).get("magnitude") or {}
    if taus:
        said = {"gradient": "|gradient x input|", "loo": "|leave-one-out|"}
        out += ["", f"Faithfulness (`attnclf faithfulness`, {faithfulness.get('reviews')} test reviews): Kendall tau "
                "of the attention weights against each importance measure, mean ± sd over reviews:", ""]  # fmt: skip
        out += [f"- {said[k]}: {v['mean']:.3f} ± {v['sd']:.3f}" for k, v in taus.items() if k in said]
    return out


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


def model_card(config: dict, run: Path, license: str | None = None) -> ModelCard:
    """The card of a model exported from the run folder `run`."""
    metrics = read(run / "metrics.json")
    data = read(run / "data.json").get("data", {})
    faithfulness = read(run / "faithfulness_test" / "faithfulness.json")
    meta = header(config, metrics, data, license)
    return ModelCard(f"---\n{meta.to_yaml()}\n---\n\n{body(config, metrics, data, faithfulness)}")
