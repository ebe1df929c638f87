"""Using a trained model: `TrainedClassifier.from_checkpoint(path).predict(texts)`, and evaluation on a split."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

from attnclf.data.dataset import TextDataset, collate, truncate
from attnclf.data.sampling import BucketBatchSampler, chunks
from attnclf.data.text import UNK, Vocab, tokenize
from attnclf.errors import AttnclfError
from attnclf.inference.pretrained import VOCAB, is_exported, read_folder
from attnclf.inference.quantized import quantized
from attnclf.models.language_model import KIND as LANGUAGE_MODEL
from attnclf.settings.run import check_device, check_quantize
from attnclf.training.checkpoint import best_checkpoint, checkpoint_kind, load_checkpoint, run_dir_of
from attnclf.training.module import ClassifierModule
from attnclf.utils.checks import first_few


@dataclass
class Prediction:
    label: int
    label_name: str
    # of the predicted label
    prob: float
    probs: list[float]
    # the words the model read (after truncation), in order
    tokens: list[str]
    # attention weight of each of those words
    weights: list[float]
    # the review as given
    text: str = ""
    # each read word's place among tokenize(text)'s tokens
    positions: list[int] = field(default_factory=list)
    # the text had more tokens than the run reads (max_length): only some were read
    truncated: bool = False

    def top_words(self, k: int = 5) -> list[tuple[str, float]]:
        order = np.argsort(-np.asarray(self.weights), kind="stable")[:k]
        return [(self.tokens[i], self.weights[i]) for i in order]


@dataclass
class Reading:
    """A text as a model reads it: its words after truncation, their places among tokenize(text)'s tokens,
    their ids in the model's vocabulary, and whether words were cut."""

    text: str
    tokens: list[str]
    positions: list[int]
    ids: np.ndarray  # (T,) int64
    truncated: bool


def check_not_empty(texts: list, what: str, first: int = 0) -> None:
    """Every text has something to classify: one line naming the empty ones (`first`: the first's number)."""
    empty = [i + first for i, t in enumerate(texts) if not isinstance(t, str) or not t.strip()]
    if empty:
        shown = first_few(empty)
        raise AttnclfError(f"{what} {shown}: empty, nothing to classify; drop or fill them")


def built(hparams: dict, state: dict, source: Path, vocab: Vocab, vocab_path: Path) -> ClassifierModule:
    """The classifier module of `hparams` with the weights `state` (from `source`), checked against `vocab`."""
    try:
        module = ClassifierModule(**hparams)
        module.load_state_dict(state)
    except (TypeError, KeyError, RuntimeError) as e:
        raise AttnclfError(f"{source} does not match this model: {str(e).splitlines()[0]}") from e
    if module.hparams.vocab_size != len(vocab):
        raise AttnclfError(f"{vocab_path} has {len(vocab)} words, the checkpoint {module.hparams.vocab_size}")
    return module


@dataclass
class TrainedClassifier:
    module: ClassifierModule
    vocab: Vocab
    # tokens read per review (None: whole), as the run's validation and test read
    max_length: int | None = 1000
    truncation: str = "head_tail"
    labels: list[str] = field(default_factory=lambda: ["neg", "pos"])
    # the run folder it came from (its data record: data.json)
    run: Path | None = None

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str = "cpu", quantize: str = "none") -> TrainedClassifier:
        """Load a checkpoint, or a run folder's best checkpoint (no code is unpickled), and the vocabulary its
        run saved beside it, onto `device`; a folder of `attnclf export`: from_pretrained. `quantize=int8`:
        its layers in int8 (attnclf.inference.quantized)."""
        check_device(device)
        check_quantize(quantize, device)
        if is_exported(path):
            return cls.from_pretrained(path, device, quantize)
        path = best_checkpoint(path)
        ckpt = load_checkpoint(path, map_location=device)
        if checkpoint_kind(ckpt.get("hyper_parameters") or {}) == LANGUAGE_MODEL:
            raise AttnclfError(
                f"{path} is a language model of attnclf pretrain, not a classifier; train one from it: "
                f"attnclf train model.init_from={path}"
            )
        vocab_path = run_dir_of(path) / "vocab.json"
        if not vocab_path.is_file():
            raise AttnclfError(
                f"vocabulary file missing: {vocab_path} (a run keeps vocab.json in its folder, "
                "beside checkpoints/; copy it back to use this checkpoint)"
            )
        vocab = Vocab.load(vocab_path)
        module = built(ckpt["hyper_parameters"], ckpt["state_dict"], path, vocab, vocab_path)
        meta = vocab.meta
        n = module.hparams.num_classes
        labels = meta.get("labels") or [str(i) for i in range(n)]
        # as the run's validation and test read (runs before data.eval_max_length read as in training)
        max_length = meta["eval_max_length"] if "eval_max_length" in meta else meta.get("max_length", 400)
        clf = cls(
            module.to(device).eval(), vocab, max_length, meta.get("truncation", "head_tail"), labels, run_dir_of(path)
        )
        return clf.int8() if quantize == "int8" else clf

    @classmethod
    def from_pretrained(cls, folder: str | Path, device: str = "cpu", quantize: str = "none") -> TrainedClassifier:
        """A folder written by `attnclf export` (the Hub's layout: config.json, model.safetensors, vocab.json):
        read from JSON and safetensors alone, the same predictions as the checkpoint it came from."""
        check_device(device)
        check_quantize(quantize, device)
        folder = Path(folder)
        if not is_exported(folder):
            raise AttnclfError(f"{folder}: no config.json and model.safetensors (attnclf export writes them)")
        config, state = read_folder(folder, device)
        vocab = Vocab.load(folder / VOCAB)
        module = built(config["hyper_parameters"], state, folder, vocab, folder / VOCAB)
        clf = cls(module.to(device).eval(), vocab, config["max_length"], config["truncation"], config["labels"], folder)
        return clf.int8() if quantize == "int8" else clf

    def int8(self) -> TrainedClassifier:
        """A copy with its recurrent and linear layers in int8 (this one stays float)."""
        module = copy.deepcopy(self.module)
        module.model = quantized(module.model)
        return dataclasses.replace(self, module=module)

    @property
    def device(self) -> torch.device:
        return self.module.device

    def batches(self, dataset: TextDataset, batch_size: int) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
        """(row positions, logits (B, C), weights (B, T)) over a dataset, in batches of similar length."""
        sampler = BucketBatchSampler(dataset.lengths, batch_size, shuffle=False)
        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)
        with torch.no_grad():
            for positions, (ids, lengths, _) in zip(sampler, loader, strict=True):
                logits, weights = self.module(ids.to(self.device), lengths.to(self.device), lengths)
                yield positions, logits.float().cpu(), weights.float().cpu()

    def read(self, text: str) -> Reading:
        """A text as the model reads it: tokenised and truncated as in training (a text with no token reads
        as one <unk>)."""
        every = tokenize(text)
        kept = truncate(np.arange(len(every)), self.max_length, self.truncation).tolist() if every else []
        words = [every[i] for i in kept] or [UNK]
        ids = np.asarray(self.vocab.encode_tokens(words), dtype=np.int64)
        return Reading(text, words, kept, ids, len(kept) < len(every))

    def predict(self, texts: Sequence[str], batch_size: int = 64, allow_empty: bool = False) -> list[Prediction]:
        """One Prediction per text. A text that is empty or only spaces is refused (there is nothing to
        classify), here as in attnclf predict; `allow_empty=True` reads it as one <unk> instead, as training and
        attnclf eval read a dataset's empty rows. A single string is refused too (it would read as one text per
        character)."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("predict takes a list of texts; for one text: predict([text])[0]")
        texts = ["" if t is None else t for t in texts] if allow_empty else list(texts)
        if not allow_empty:
            check_not_empty(texts, "texts")
        readings = [self.read(t) for t in texts]
        ids = np.concatenate([r.ids for r in readings])
        offsets = np.concatenate([[0], np.cumsum([len(r.ids) for r in readings])])
        rows = np.arange(len(texts))
        dataset = TextDataset(
            ids, offsets, np.zeros(len(texts), dtype=np.int64), rows, self.max_length, self.truncation
        )
        out: list[Prediction | None] = [None] * len(texts)
        for positions, logits, weights in self.batches(dataset, batch_size):
            for row, p, w in zip(positions, torch.softmax(logits, -1), weights, strict=True):
                out[row] = self.prediction(readings[row], p, w)
        return out

    def predict_readings(self, readings: Sequence[Reading], batch_tokens: int = 16384) -> list[Prediction]:
        """One Prediction per text already read (`read`), in batches of similar length of at most
        `batch_tokens` padded tokens (the server's dynamic batches)."""
        lengths = np.fromiter((len(r.ids) for r in readings), dtype=np.int64, count=len(readings))
        out: list[Prediction | None] = [None] * len(readings)
        with torch.no_grad():
            for group in chunks(lengths, batch_tokens):
                ids, lens, _ = collate([(readings[i].ids, 0) for i in group])
                logits, weights = self.module(ids.to(self.device), lens.to(self.device), lens)
                probs = torch.softmax(logits.float(), -1).cpu()
                for i, p, w in zip(group, probs, weights.float().cpu(), strict=True):
                    out[i] = self.prediction(readings[i], p, w)
        return out

    def prediction(self, reading: Reading, probs: torch.Tensor, weights: torch.Tensor) -> Prediction:
        """A text's Prediction from its class probabilities (C,) and its padded row of weights (T,)."""
        label = int(probs.argmax())
        n = len(reading.tokens)
        return Prediction(
            label,
            self.labels[label],
            float(probs[label]),
            probs.tolist(),
            reading.tokens,
            weights[:n].tolist(),
            reading.text,
            reading.positions,
            reading.truncated,
        )
