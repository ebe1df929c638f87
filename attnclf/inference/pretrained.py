"""A trained classifier in the Hugging Face Hub's layout, read without unpickling anything:

- config.json: every setting the network is built from (the module's constructor arguments), the class
  names, how a text is read (its length and truncation) and where the run came from;
- model.safetensors: the weights;
- vocab.json: the vocabulary (as the run saved it), data.json: the data record (where present);
- README.md: the model card (huggingface_hub's ModelCard: a YAML header, then the body; attnclf.inference.card).

`export_folder` writes it from a checkpoint; `read_folder` reads it back (TrainedClassifier.from_checkpoint and
from_pretrained take such a folder as they take a run folder).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from attnclf.errors import AttnclfError

CONFIG, WEIGHTS, VOCAB, DATA = "config.json", "model.safetensors", "vocab.json", "data.json"
# what config.json's layout is (a reader refuses another)
FORMAT = 1


def is_exported(path: str | Path) -> bool:
    """A folder written by export_folder (config.json and model.safetensors in it)."""
    path = Path(path)
    return path.is_dir() and (path / CONFIG).is_file() and (path / WEIGHTS).is_file()


def export_folder(clf, checkpoint: Path, out: Path) -> dict:
    """Write `clf` (a float TrainedClassifier read from `checkpoint`) into `out`: config.json,
    model.safetensors, vocab.json and data.json (the card is written beside by the caller). Its config."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    hparams = dict(clf.module.hparams)
    config = {
        "library_name": "attnclf",
        "format": FORMAT,
        "hyper_parameters": hparams,
        "labels": clf.labels,
        "max_length": clf.max_length,
        "truncation": clf.truncation,
        "checkpoint": checkpoint.name,
    }
    (out / CONFIG).write_text(json.dumps(config, indent=2) + "\n")
    state = {k: v.detach().cpu().contiguous() for k, v in clf.module.state_dict().items()}
    save_file(state, str(out / WEIGHTS), metadata={"format": "pt"})
    shutil.copyfile(clf.run / VOCAB, out / VOCAB)
    if (clf.run / DATA).is_file():
        shutil.copyfile(clf.run / DATA, out / DATA)
    return config


def read_folder(path: Path, device: str = "cpu") -> tuple[dict, dict]:
    """(config, state_dict) of an exported folder: JSON and safetensors only."""
    from safetensors.torch import load_file

    try:
        config = json.loads((path / CONFIG).read_text())
    except (OSError, ValueError) as e:
        raise AttnclfError(f"{path / CONFIG}: not a readable config ({e})") from None
    if config.get("library_name") != "attnclf" or config.get("format") != FORMAT:
        raise AttnclfError(
            f"{path / CONFIG} is not an attnclf export of format {FORMAT} (library_name "
            f"{config.get('library_name')!r}, format {config.get('format')!r})"
        )
    return config, load_file(str(path / WEIGHTS), device=device)
