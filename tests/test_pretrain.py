"""attnclf pretrain: forward and backward GRU language models that train.py starts from (model.init_from)."""

import csv
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as L
import torch
from helpers.classifier import net
from helpers.config import ROOT, compose_cfg, tiny_overrides
from helpers.data import make_reviews
from helpers.files import strict_json

from attnclf.commands.pretrain import pretrain
from attnclf.commands.train import train
from attnclf.data.splits import split_rows
from attnclf.data.text import Vocab
from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier
from attnclf.models.language_model import BiGRULanguageModel, SampledSoftmax, adaptive_cutoffs
from attnclf.settings.lm import LMConfig
from attnclf.training.checkpoint import load_checkpoint
from attnclf.training.init_from import check_init_from, load_pretrained

LM = [
    "model.embed_dim=16",
    "model.hidden_dim=16",
    "data.vocab_size=200",
    "data.max_length=64",
    "data.batch_size=16",
    "lm.val_texts=20",
    "lm.samples=40",  # (the default sampled softmax, on a vocabulary of 200)
    "trainer.accelerator=cpu",
    "trainer.enable_model_summary=false",
    "trainer.log_every_n_steps=1",
    "callbacks.rich_progress_bar=null",
]


def compose_lm(overrides):
    return compose_cfg(config_name="pretrain", overrides=overrides)


@pytest.fixture(scope="module")
def lm_run(tiny_imdb, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm_run")
    pretrain(compose_lm([f"data.path={tiny_imdb}", f"paths.output_dir={out}", f"paths.cache_dir={out}", *LM]))
    return out


def test_pretraining_writes_what_training_starts_from(lm_run, tiny_imdb, tmp_path):
    metrics = strict_json(lm_run / "metrics.json")
    assert metrics["kind"] == "bigru_lm" and 1 < metrics["val/ppl"] < 200 and metrics["train_tokens_per_sec"] > 0
    assert metrics["texts"] == {"train": "220 texts", "val": "20 texts held out"}  # 240 training texts, no test
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(lm_run / "tensorboard"))
    events.Reload()
    assert {"train/loss", "train/ppl", "val/loss", "val/ppl", "train/tokens_per_sec"} <= set(events.Tags()["scalars"])
    (loss,), (ppl,) = events.Scalars("val/loss"), events.Scalars("val/ppl")  # (one epoch: one validation)
    assert ppl.value == pytest.approx(np.exp(loss.value), rel=1e-4) == pytest.approx(metrics["val/ppl"], rel=1e-4)

    out = tmp_path / "clf"
    cfg = compose_cfg(
        [
            "experiment=smoke",
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            f"model.init_from={lm_run}",
            "optimizer.lr=1e-9",
            *tiny_overrides(tiny_imdb, out),
        ]
    )
    train(cfg)
    run = json.loads((out / "metrics.json").read_text())
    assert run["init_from"]["checkpoint"] == metrics["best_checkpoint"] and run["init_from"]["vocab_shared"] == 1.0
    # the embedding is the language models' too: no word2vec is trained for it (the default's model.embeddings)
    assert run["embeddings"] == {"source": "init_from"} and not (out / "cache" / "word2vec").exists()
    lm = load_checkpoint(metrics["best_checkpoint"])["state_dict"]
    clf = TrainedClassifier.from_checkpoint(run["best_checkpoint"]).module.model  # (lr 1e-9: still the LM's weights)
    torch.testing.assert_close(clf.encoder.fwd[0].weight_hh_l0, lm["model.fwd.weight_hh_l0"], atol=1e-6, rtol=0)
    torch.testing.assert_close(clf.encoder.bwd[0].weight_hh_l0, lm["model.bwd.weight_hh_l0"], atol=1e-6, rtol=0)


def test_each_language_model_becomes_its_own_direction_of_the_encoder(lm_run):
    """The encoder's forward outputs are the forward LM's states; its backward outputs are the backward LM's
    states on the reversed review, put back in reading order; the embedding is the LM's, word for word, in
    a vocabulary of another order."""
    ckpt = load_checkpoint(strict_json(lm_run / "metrics.json")["best_checkpoint"])
    hp = ckpt["hyper_parameters"]
    lm = BiGRULanguageModel(
        hp["vocab_size"], hp["embed_dim"], hp["hidden_dim"], LMConfig(softmax=hp["softmax"], samples=hp["samples"])
    ).eval()
    lm.load_state_dict({k.removeprefix("model."): v for k, v in ckpt["state_dict"].items()})
    lm_vocab = Vocab.load(lm_run / "vocab.json")
    shuffled = Vocab(lm_vocab.itos[:2] + lm_vocab.itos[2:][::-1])  # same words, other ids
    clf = net(len(shuffled), embed_dim=16, hidden_dim=16, embed_dropout=0.0).eval()
    summary = load_pretrained(clf, str(lm_run), shuffled)
    assert summary["vocab_shared"] == 1.0
    words = ["great", "film", "boring", "the"]
    ids_lm = torch.tensor([lm_vocab.encode_tokens(words)])
    ids_clf = torch.tensor([shuffled.encode_tokens(words)])
    torch.testing.assert_close(clf.embed(ids_clf), lm.embed(ids_lm))
    with torch.no_grad():
        out, _ = clf.encoder(clf.embed(ids_clf), torch.tensor([4]))
        h_f, h_b, _ = lm.states(ids_lm, torch.tensor([4]))
    torch.testing.assert_close(out[..., :16], h_f)
    torch.testing.assert_close(out[..., 16:], h_b.flip(1))  # (one review, no padding: reversed = flipped)


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_a_killed_pretraining_resumes_where_it_stopped(tiny_imdb, tmp_path, monkeypatch, capfd, in_process):
    from helpers.signals import resume_in_process, signaller_env

    common = [
        f"data.path={tiny_imdb}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.runs_dir={tmp_path / 'none'}",
        "trainer.max_epochs=2",
        "callbacks.step_checkpoint.every_n_train_steps=5",
        "trainer.deterministic=true",
        *LM,
    ]
    run = tmp_path / "run"

    killer = ["+callbacks.killer._target_=signaller.SignalAt", "+callbacks.killer.step=17"]
    killed = subprocess.run(
        [sys.executable, "-m", "attnclf", "pretrain", *common, f"hydra.run.dir={run}", *killer],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=signaller_env(tmp_path),
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert load_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] == 15
    # resumed by its folder's name, relative, from another folder: it goes on in its own, and says so in full
    monkeypatch.chdir(ROOT)
    again = ["pretrain", *common, f"hydra.run.dir={tmp_path / 'again'}", f"ckpt_path={os.path.relpath(run, ROOT)}"]
    status, err = resume_in_process(again, tmp_path, monkeypatch, capfd)
    assert status == 0, err[-2000:]
    pretrain(compose_lm([*common, f"paths.output_dir={tmp_path / 'straight'}"]))
    a, b = (json.loads((d / "metrics.json").read_text()) for d in (run, tmp_path / "straight"))
    assert a["vocab"] == str((run / "vocab.json").resolve())
    assert Path(a["best_checkpoint"]).parent.parent == run.resolve()
    assert a["steps"] == b["steps"] == 28 and a["val/loss"] == b["val/loss"]
    final = [load_checkpoint(d / "checkpoints" / "last.ckpt")["state_dict"] for d in (run, tmp_path / "straight")]
    for name, tensor in final[0].items():
        torch.testing.assert_close(tensor, final[1][name], rtol=0, atol=0, msg=name)


def test_bad_init_from_and_pretraining_values(lm_run, tiny_run, tiny_imdb, tmp_path):
    base = ["logger=none", *tiny_overrides(tiny_imdb, tmp_path / "o")]
    cases = [
        (f"model.init_from={tmp_path / 'none.ckpt'}", "checkpoint not found"),
        (f"model.init_from={tiny_run}", "a classifier's checkpoint, not a language model"),
        (f"model.init_from={lm_run}", "has embed_dim=16, hidden_dim=16; this model 16, 32: set model.embed_dim=16"),
    ]
    for override, message in cases:
        extra = ["model.hidden_dim=32"] if "this model" in message else []
        with pytest.raises(AttnclfError, match=message.replace("(", r"\(")):
            train(compose_cfg([*base, override, *extra]))
    assert not (tmp_path / "o" / "checkpoints").exists()
    with pytest.raises(AttnclfError, match="model.init_from=latest: no finished pretraining under"):
        train(compose_cfg([*base, "model.init_from=latest", f"paths.pretrain_dir={tmp_path / 'empty'}"]))
    found, _ = check_init_from("latest", 16, 16, str(lm_run.parent))  # (tiny_run's metrics.json is skipped)
    assert found.parent.parent == lm_run
    # another vocabulary: words mostly not the LM's
    clf = net(300, embed_dim=16, hidden_dim=16)
    other = Vocab(["<pad>", "<unk>", *[f"zz{i}" for i in range(298)]])
    with pytest.raises(AttnclfError, match=r"its vocabulary has 0% of this run's words"):
        load_pretrained(clf, str(lm_run), other)
    for override, message in (
        ("model.num_layers=2", "model.num_layers=2; pretraining has one layer per direction: 1"),
        ("lm.softmax=adaptive lm.cutoffs=[0]", r"lm.cutoffs=\[0\]; allowed: a list of positive integers"),
        ("lm.softmax=adaptive lm.cutoffs=[50,199]", r"lm.cutoffs=\[50, 199\]: each must be below data.vocab_size=200"),
        ("lm.val_texts=5000", "lm.val_texts=5000 leaves nothing to train on: the data has 240 texts"),
        ("lm.softmax=full", "lm.softmax='full'; allowed: adaptive, sampled"),
        ("lm.samples=0", "lm.samples=0 must be a positive integer"),
    ):
        with pytest.raises(AttnclfError, match=message):
            pretrain(
                compose_lm(
                    [
                        f"data.path={tiny_imdb}",
                        f"paths.output_dir={tmp_path / 'p'}",
                        f"paths.cache_dir={tmp_path}",
                        *LM,
                        *override.split(),
                    ]
                )
            )


def test_a_run_given_by_name_to_resume_must_be_of_its_kind_and_sizes(lm_run, tiny_run, tiny_imdb, tmp_path):
    def unfinished(run, name):  # a copy of a run's last.ckpt, as if killed before it finished
        (tmp_path / name / "checkpoints").mkdir(parents=True)
        shutil.copy(run / "checkpoints" / "last.ckpt", tmp_path / name / "checkpoints" / "last.ckpt")
        return tmp_path / name

    lm, clf = unfinished(lm_run, "lm"), unfinished(tiny_run, "clf")
    base = [f"data.path={tiny_imdb}", f"paths.output_dir={tmp_path / 'p'}", f"paths.cache_dir={tmp_path}", *LM]
    mismatch = r"run has model.embed_dim=16, model.hidden_dim=16, lm.softmax=sampled, model.freeze_embeddings=false, "
    with pytest.raises(AttnclfError, match=mismatch + r"this command 16, 32, sampled, false;"):
        pretrain(compose_lm([*base, "model.hidden_dim=32", f"ckpt_path={lm}"]))
    with pytest.raises(AttnclfError, match=r"false, this command 16, 16, adaptive, false; resume with the run's"):
        pretrain(compose_lm([*base, "lm.softmax=adaptive", "lm.cutoffs=[100]", f"ckpt_path={lm}"]))
    with pytest.raises(AttnclfError, match=r"false, this command 16, 16, sampled, true; resume with the run's"):
        pretrain(compose_lm([*base, "model.embeddings=word2vec", "model.freeze_embeddings=true", f"ckpt_path={lm}"]))
    with pytest.raises(
        AttnclfError, match=r"clf is not a run of attnclf pretrain \(its checkpoint is a classifier's\)"
    ):
        pretrain(compose_lm([*base, f"ckpt_path={clf}"]))
    with pytest.raises(AttnclfError, match=r"lm is not a classifier's run .* with model.init_from=<run>$"):
        train(compose_cfg(["logger=none", *tiny_overrides(tiny_imdb, tmp_path / "o"), f"ckpt_path={lm}"]))
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["last.ckpt", "last.ckpt"]  # nothing new


def test_adaptive_softmax_cutoffs_fit_the_vocabulary():
    assert adaptive_cutoffs([2000, 10000], 30000) == [2000, 10000]
    assert adaptive_cutoffs([2000, 10000], 5000) == [2000]
    assert adaptive_cutoffs([2000, 10000], 200) == [100]
    lm = BiGRULanguageModel(50, 8, 8, LMConfig(cutoffs=[20], softmax="adaptive"))
    ids = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    loss_f, loss_b = lm(ids, torch.tensor([3, 2]))
    assert loss_f.item() > 0 and loss_b.item() > 0
    # padding predicts nothing: the same review alone gives the same loss
    alone_f, _ = lm.eval()(ids[:1, :3], torch.tensor([3]))
    both_f, _ = lm(torch.tensor([[5, 6, 7, 0, 0, 0]]), torch.tensor([3]))
    assert np.isclose(alone_f.item(), both_f.item())


def test_discriminative_rates_put_the_embedding_and_encoder_in_groups_of_their_own():
    from attnclf.training.module import adamw

    model = net(50, embed_dim=8, hidden_dim=8)
    names = {id(p): n for n, p in model.named_parameters()}
    same = adamw(model, 1e-3, 0.01)  # the default (scale 1): the two groups of before, weight decay or none
    assert [(g["lr"], g["weight_decay"]) for g in same.param_groups] == [(1e-3, 0.01), (1e-3, 0.0)]
    opt = adamw(model, 1e-3, 0.01, encoder_lr_scale=0.25)
    seen = [names[id(p)] for g in opt.param_groups for p in g["params"]]
    assert sorted(seen) == sorted(names.values())  # every parameter once
    for g in opt.param_groups:
        encoder = {names[id(p)].startswith(("embed", "encoder")) for p in g["params"]}
        assert len(encoder) == 1 and g["lr"] == (2.5e-4 if encoder == {True} else 1e-3)
        assert all(not names[id(p)].startswith("embed") for p in g["params"]) or g["weight_decay"] == 0.0


class EpochWeights(L.Callback):
    """The encoder's, output layer's and embedding's weights and the encoder's requires_grad at each epoch's
    start and end (in EpochWeights.seen; a callback's epoch start comes before the module's)."""

    seen: list = []

    def __init__(self):
        EpochWeights.seen = []

    def on_train_epoch_start(self, trainer, module):
        self._keep(module, "start")

    def on_train_epoch_end(self, trainer, module):
        self._keep(module, "end")

    def _keep(self, module, when):
        m = module.model
        encoder = torch.cat([p.detach().flatten() for p in m.encoder.parameters()]).clone()
        grad = m.encoder.fwd[0].weight_hh_l0.requires_grad
        kept = (module.current_epoch, when, encoder, m.fc.weight.detach().clone(), m.embed.weight.detach().clone())
        EpochWeights.seen.append((*kept, grad))


def test_a_frozen_encoder_learns_from_its_epoch_on_at_its_own_rate(lm_run, tiny_imdb, tmp_path):
    cfg = compose_cfg(
        [
            "logger=none",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            "+callbacks.weights._target_=test_pretrain.EpochWeights",
            f"model.init_from={lm_run}",
            "trainer.max_epochs=2",
            "optimizer.freeze_encoder_epochs=1",
            "optimizer.encoder_lr_scale=0.5",
            "test=false",
            *tiny_overrides(tiny_imdb, tmp_path / "run"),
        ]
    )
    train(cfg)
    start0, end0, start1, end1 = EpochWeights.seen  # (epoch, when, encoder, output layer, embedding, grad)
    assert (start0[:2], start1[:2]) == ((0, "start"), (1, "start")) and not end0[5] and end1[5]
    assert torch.equal(start0[2], end0[2]) and torch.equal(start0[4], end0[4])  # epoch 0: the encoder frozen,
    assert not torch.equal(start0[3], end0[3])  # the output layer learning
    assert not torch.equal(start1[2], end1[2]) and not torch.equal(start1[4], end1[4])  # epoch 1: all of it
    saved = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.ckpt")
    rates = sorted({g["initial_lr"] for g in saved["optimizer_states"][0]["param_groups"]})  # (the schedule's base)
    assert rates == [pytest.approx(cfg.optimizer.lr / 2), pytest.approx(cfg.optimizer.lr)]


def test_the_sampled_softmax_draws_words_by_rank_and_estimates_the_full_softmax():
    """Words 1..V-1 drawn with probability log(1 + 1/k) / log(V), padding never; in training the loss is the
    target's score against the drawn words', each less its log-probability of being drawn, a drawn target
    left out; in evaluation, the full softmax's loss exactly (in chunks)."""
    torch.manual_seed(0)
    V = 50
    layer = SampledSoftmax(4, V, samples=200_000)
    counts = torch.bincount(layer.draw("cpu"), minlength=V).double() / 200_000
    k = torch.arange(1, V, dtype=torch.float64)
    expected = torch.log1p(1 / k) / np.log(V)
    assert counts[0] == 0 and expected.sum().item() == pytest.approx(1.0)
    assert (counts[1:] - expected).abs().max() < 0.003  # (the largest, word 1: 0.177)
    torch.testing.assert_close(layer.log_q[1:].double(), expected.log(), rtol=0, atol=1e-6)

    layer = SampledSoftmax(4, V, samples=4)
    with torch.no_grad():
        layer.out.weight.normal_()
        layer.out.bias.normal_()
    drawn = torch.tensor([3, 5, 7, 5])
    layer.draw = lambda device: drawn
    h, target = torch.randn(6, 4), torch.tensor([3, 1, 2, 5, 9, 7])
    W, b, log_q = layer.out.weight, layer.out.bias, layer.log_q
    by_hand = []
    for state, word in zip(h, target.tolist(), strict=True):
        score = [state @ W[w] + b[w] - log_q[w] for w in [word, *drawn.tolist()]]
        rivals = [s for s, d in zip(score[1:], drawn.tolist(), strict=True) if d != word]
        by_hand.append(torch.logsumexp(torch.stack([score[0], *rivals]), 0) - score[0])
    torch.testing.assert_close(layer.train()(h, target), torch.stack(by_hand).mean())
    layer.CHUNK = 4  # (6 states: two chunks)
    full = torch.nn.functional.cross_entropy(torch.nn.functional.linear(h, W, b), target)
    torch.testing.assert_close(layer.eval()(h, target), full)
    layer.samples = V - 1  # a sample as large as the vocabulary: the full softmax in training too
    torch.testing.assert_close(layer.train()(h, target), full)


def test_pretraining_with_the_adaptive_softmax_is_what_training_starts_from(tiny_imdb, tmp_path):
    out = tmp_path / "lm"
    pretrain(
        compose_lm(
            [
                f"data.path={tiny_imdb}",
                f"paths.output_dir={out}",
                f"paths.cache_dir={tmp_path}",
                *LM,
                "lm.softmax=adaptive",
                "lm.cutoffs=[100]",
            ]
        )
    )
    metrics = strict_json(out / "metrics.json")
    assert 1 < metrics["val/ppl"] < 200  # (over the 200 words)
    ckpt = load_checkpoint(metrics["best_checkpoint"])
    assert ckpt["hyper_parameters"]["softmax"] == "adaptive" and "model.head_fwd.head.weight" in ckpt["state_dict"]
    clf = net(200, embed_dim=16, hidden_dim=16)
    assert load_pretrained(clf, str(out), Vocab.load(out / "vocab.json"))["vocab_shared"] == 1.0
    torch.testing.assert_close(clf.encoder.fwd[0].weight_hh_l0, ckpt["state_dict"]["model.fwd.weight_hh_l0"])


def test_language_models_start_from_word2vec_vectors_kept_frozen(with_unlabeled, tmp_path):
    """model.embeddings=word2vec: the language models' embedding starts from the vectors of the texts they read
    (training and unlabeled: the same cached file as train.py's experiment=pretrained), and
    model.freeze_embeddings=true keeps it there while the GRUs learn; a classifier started from them starts
    from those vectors word for word."""
    from attnclf.data.vectors import embedding_matrix, read_vectors

    out = tmp_path / "lm"
    pretrain(
        compose_lm(
            [
                f"data.path={with_unlabeled}",
                f"paths.output_dir={out}",
                f"paths.cache_dir={tmp_path}",
                *LM,
                "model.embeddings=word2vec",
                "model.freeze_embeddings=true",
            ]
        )
    )
    metrics = strict_json(out / "metrics.json")
    start = metrics["embeddings"]
    assert start["source"] == "word2vec" and start["frozen"] and start["texts"] == 160 + 80  # training + unlabeled
    assert start["coverage"] > 0.9 and str(tmp_path) in start["vectors_file"]
    vocab = Vocab.load(out / "vocab.json")
    wv = read_vectors(start["vectors_file"], 16)
    matrix, _ = embedding_matrix(wv, vocab)
    sd = load_checkpoint(metrics["best_checkpoint"])["state_dict"]
    found = [i for i, w in enumerate(vocab.itos) if w in wv.key_to_index]
    torch.testing.assert_close(sd["model.embed.weight"][found], torch.from_numpy(matrix)[found], rtol=0, atol=0)
    first = BiGRULanguageModel(len(vocab), 16, 16, LMConfig(softmax="sampled", samples=40))
    assert sd["model.fwd.weight_hh_l0"].shape == first.fwd.weight_hh_l0.shape
    assert metrics["steps"] > 0 and metrics["val/ppl"] < len(vocab)  # (the GRUs learnt: better than uniform)

    # the same texts and settings as train.py's word2vec start of them: the cached file is the same one
    clf_out = tmp_path / "clf"
    train(
        compose_cfg(
            [
                "logger=none",
                "callbacks.rich_progress_bar=null",
                "callbacks.attention_maps=null",
                "test=false",
                "trainer.max_steps=1",
                "word2vec.unlabeled_split=unsupervised",
                *tiny_overrides(with_unlabeled, clf_out),
                f"paths.cache_dir={tmp_path}",
            ]
        )
    )
    assert strict_json(clf_out / "metrics.json")["embeddings"]["vectors_file"] == start["vectors_file"]

    # frozen: the embedding is where it started; trainable (the default): it moves
    out2 = tmp_path / "lm2"
    pretrain(
        compose_lm(
            [
                f"data.path={with_unlabeled}",
                f"paths.output_dir={out2}",
                f"paths.cache_dir={tmp_path}",
                *LM,
                "model.embeddings=word2vec",
            ]
        )
    )
    moved = load_checkpoint(strict_json(out2 / "metrics.json")["best_checkpoint"])["state_dict"]["model.embed.weight"]
    assert not torch.equal(moved[found], torch.from_numpy(matrix)[found])
    assert strict_json(out2 / "metrics.json")["embeddings"]["frozen"] is False


def test_pretraining_refuses_a_frozen_random_embedding(tiny_imdb, tmp_path):
    with pytest.raises(AttnclfError, match="model.freeze_embeddings=true with model.embeddings=random"):
        pretrain(
            compose_lm(
                [
                    f"data.path={tiny_imdb}",
                    f"paths.output_dir={tmp_path / 'p'}",
                    f"paths.cache_dir={tmp_path}",
                    *LM,
                    "model.freeze_embeddings=true",
                ]
            )
        )
    assert not (tmp_path / "p").exists()


def test_init_from_pretrain_pretrains_the_run_s_texts_once_then_reuses_them(with_unlabeled, tmp_path, caplog):
    """model.init_from=pretrain: the first run trains the language models of its texts and settings into the
    cache and starts from them; a later run finds them there; it goes on as a run given that folder does; other
    settings are another pretraining."""
    cache = tmp_path / "cache"
    settings = [
        "lm.val_texts=20",
        "lm.samples=40",
        "trainer.log_every_n_steps=1",
        "trainer.max_epochs=1",
        "trainer.accelerator=cpu",
        "trainer.enable_model_summary=false",
        "callbacks.rich_progress_bar=null",
    ]

    def run(name, init_from="pretrain", extra=()):
        out = tmp_path / name
        pretraining = "pretraining=[" + ",".join(f'"{s}"' for s in [*settings, *extra]) + "]"
        cfg = compose_cfg(
            [
                *tiny_overrides(with_unlabeled, out),
                f"paths.cache_dir={cache}",
                "logger=none",
                "trainer.max_epochs=1",
                f"model.init_from={init_from}",
                pretraining,
            ]
        )
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="attnclf"):
            train(cfg)
        return json.loads((out / "metrics.json").read_text()), caplog.text

    first, said = run("first")
    (lm,) = [p.parent for p in (cache / "pretrain").glob("*/metrics.json")]
    assert "none cached: running" in said and json.loads((lm / "metrics.json").read_text())["val/ppl"] > 1
    # its length said before it starts (an hour and more at full size): steps, texts and tokens
    length = re.search(
        r"pretraining: (\d+) steps \(1 epochs of (\d+) batches\) of both language models on (\d+) "
        r"texts, ([\d.]+) million tokens an epoch",
        said,
    )
    texts = json.loads((lm / "metrics.json").read_text())["texts"]["train"]
    assert length and length[1] == length[2] == "14" and f"{length[3]} texts" == texts == "220 texts"
    assert Path(first["init_from"]["checkpoint"]).parent.parent == lm
    assert first["init_from"]["pretraining_seconds"] == json.loads((lm / "metrics.json").read_text())["fit_seconds"]
    second, said = run("second")
    assert "is cached" in said and "running" not in said
    assert second["init_from"] == first["init_from"] and second["test/acc"] == first["test/acc"]
    given, _ = run("given", init_from=str(lm))  # the same run as one given the folder: its random numbers kept
    assert given["test/loss"] == first["test/loss"]
    run("other", extra=["lm.dropout=0.1"])
    assert len(list((cache / "pretrain").glob("*/metrics.json"))) == 2


def test_init_from_pretrain_settings_are_checked_before_any_data_work(tiny_imdb, tmp_path):
    out = tmp_path / "o"
    for given, message in (
        ('pretraining=["data.path=x"]', "pretraining: 'data.path=x' is the run's own"),
        ("pretraining=[lm.softmax]", "pretraining: 'lm.softmax' is not key=value"),
        ('pretraining=["lm.softmax=bad"]', "pretraining: lm.softmax='bad'; allowed: adaptive, sampled"),
        ('pretraining=["lm.nope=1"]', r"pretraining=\['lm.nope=1'\]: Could not override 'lm.nope'"),
        ('pretraining=["bogus.key=1"]', r"Could not override 'bogus.key'.*; the settings it takes: .*lm\.\*.*seed"),
        ("model.num_layers=2", "model.init_from needs model.num_layers=1"),
    ):
        cfg = compose_cfg([*tiny_overrides(tiny_imdb, out), "logger=none", "model.init_from=pretrain", given])
        with pytest.raises(AttnclfError, match=message):
            train(cfg)
    assert not (out / "cache" / "pretrain").exists() and not (out / "vocab.json").exists()


def own_words_csv(path: Path, seed: int, tag: str = "row") -> dict:
    """200 reviews in a CSV, each with a word of its own (`<tag><i>`); the reviews as make_reviews gives them."""
    reviews = make_reviews(200, seed)
    texts = [f"{t} {tag}{i}" for i, t in enumerate(reviews["text"])]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *zip(texts, reviews["label"], strict=True)])
    return reviews


TINY_PRETRAINING = '["lm.val_texts=20","lm.samples=40","trainer.max_epochs=1","callbacks.rich_progress_bar=null"]'


def pretrain_then_train(data: Path, out: Path, cache: Path, *extra: str) -> None:
    cfg = compose_cfg(
        [
            *tiny_overrides(data, out),
            "data=csv",
            f"data.path={data}",
            "data.min_freq=1",
            "data.vocab_size=1000",
            "logger=none",
            "trainer.max_epochs=1",
            f"paths.cache_dir={cache}",
            "model.init_from=pretrain",
            f"pretraining={TINY_PRETRAINING}",
            *extra,
        ]
    )
    train(cfg)


@pytest.mark.parametrize(
    "carving,test_count",
    [(["data.test_size=0.25"], 50), (["data.folds=3", "data.fold=1"], 67)],
    ids=["test_size", "folds"],
)
def test_init_from_pretrain_leaves_a_carved_test_split_out(tmp_path, caplog, carving, test_count):
    """Data without a test split of its own: the run carves its test rows (a share, or a fold) by its seed, and
    the pretraining of its texts takes that seed (7, not attnclf pretrain's 42), so it carves the same rows and never
    reads them."""
    data = tmp_path / "reviews.csv"
    reviews = own_words_csv(data, 3)
    out = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="attnclf"):
        pretrain_then_train(data, out, out / "cache", "seed=7", *carving)
    assert "the pretraining takes seed=7" in caplog.text
    (lm,) = [p.parent for p in (out / "cache" / "pretrain").glob("*/metrics.json")]
    carved = json.loads((out / "data.json").read_text())["carved"]
    _, _, _, test_rows = split_rows(carved, np.array(reviews["label"]))
    words = set(Vocab.load(lm / "vocab.json").itos)
    assert len(test_rows) == test_count and not {f"row{i}" for i in test_rows} & words
    assert sum(f"row{i}" in words for i in range(200)) > 80  # (the others' words are there)


def test_the_pretraining_cache_is_keyed_by_the_texts(tmp_path):
    """Two data files of other texts, everything else the same: two pretrainings, each of its own texts."""
    cache = tmp_path / "cache"
    for name, seed in (("a", 3), ("b", 4)):
        own_words_csv(tmp_path / f"{name}.csv", seed, tag=f"{name}row")
        pretrain_then_train(tmp_path / f"{name}.csv", tmp_path / name, cache, "data.test_size=0.25")
    lms = [p.parent for p in (cache / "pretrain").glob("*/metrics.json")]
    assert len(lms) == 2
    assert {next(w[0] for w in Vocab.load(lm / "vocab.json").itos if w.endswith("row1")) for lm in lms} == {"a", "b"}


def test_a_pretraining_resumed_by_name_takes_its_own_settings_and_refuses_others(lm_run, tmp_path):
    """`attnclf pretrain ckpt_path=<run>` alone continues on the run's own data and settings (not the
    defaults' IMDb from the Hub); a key given that differs from the run's is one line, the run untouched."""
    run = tmp_path / "run"
    shutil.copytree(lm_run, run, ignore=shutil.ignore_patterns("metrics.json"))  # (as if stopped before its end)
    here = [f"ckpt_path={run}", f"paths.cache_dir={tmp_path}", f"paths.output_dir={tmp_path / 'fresh'}"]
    with pytest.raises(AttnclfError) as e:
        pretrain(compose_lm([*here, "lm.lr=0.5"]), overrides=[*here, "lm.lr=0.5"])
    config = run / ".hydra" / "config.yaml"
    assert str(e.value) == (
        f"lm.lr=0.5: the run resumed was trained with lm.lr=0.002 ({config}); leave lm.lr out to "
        "resume with the run's own settings"
    )
    assert not (run / "metrics.json").exists()
    pretrain(compose_lm(here), overrides=here)
    resumed = json.loads((run / "metrics.json").read_text())
    before = json.loads((lm_run / "metrics.json").read_text())
    assert resumed["steps"] == before["steps"] and resumed["texts"] == before["texts"]  # (the run's own data)
