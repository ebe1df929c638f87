"""regularizer=adversarial | virtual_adversarial: the perturbation goes where the loss (or the prediction)
moves most, at the stated size, on real tokens only; unlabeled batches come from the unlabeled split, never
test, fixed by the batch's number; bad values get one-line errors."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.classifier import classifier_settings, net
from helpers.config import compose_cfg, tiny_overrides
from helpers.data import UNLABELED_ONLY, make_datamodule

from attnclf.commands.train import train
from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier
from attnclf.models.classifier import ClassifierNet
from attnclf.training.module import ClassifierModule
from attnclf.training.regularizers import adversarial_losses, embedding_norm, kl, real_tokens, virtual_adversarial_loss


def batch(seed=0, b=12, t=20, vocab=50):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, t + 1, (b,), generator=g)
    lengths[0] = t
    ids = torch.randint(2, vocab, (b, t), generator=g)
    ids[torch.arange(t) >= lengths.unsqueeze(1)] = 0  # padding
    return ids, lengths, torch.randint(0, 2, (b,), generator=g)


def small_model(attention="dot"):
    torch.manual_seed(0)
    return net(50, 2, embed_dim=16, hidden_dim=16, attention=attention, rnn_kernel="padded").eval()  # (no dropout)


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_adversarial_step_raises_the_loss_more_than_a_random_one(attention):
    model = small_model(attention)
    ids, lengths, y = batch()
    eps = 0.05
    _, clean, adv, _ = adversarial_losses(model, ids, lengths, None, y, eps)
    x = model.embed(ids).detach()
    # random steps of the same size, per review, on real tokens
    mask = real_tokens(x, lengths)
    size = eps * embedding_norm(x, mask)
    rand = []
    for s in range(20):
        d = torch.randn(x.shape, generator=torch.Generator().manual_seed(s)) * mask
        d = size * d / d.flatten(1).norm(dim=1).view(-1, 1, 1)
        rand.append(F.cross_entropy(model.from_embeddings(x + d, lengths)[0], y).item())
    assert adv.item() > clean.item()
    assert adv.item() - clean.item() > 5 * max(abs(r - clean.item()) for r in rand)


def test_adversarial_step_has_the_stated_size_on_real_tokens_only(monkeypatch):
    model = small_model()
    ids, lengths, y = batch()
    x = model.embed(ids).detach()
    seen = []

    def spy(x_moved, lengths, host=None):
        seen.append((x_moved - x).detach())
        return ClassifierNet.from_embeddings(model, x_moved, lengths, host)

    monkeypatch.setattr(model, "from_embeddings", spy)
    adversarial_losses(model, ids, lengths, None, y, 0.1)
    unmoved, r = seen
    assert not unmoved.any()
    mask = real_tokens(x, lengths)
    assert not (r * ~mask).any()
    expected = 0.1 * (x * mask).flatten(1).norm(dim=1)
    assert torch.allclose(r.flatten(1).norm(dim=1), expected, rtol=1e-4)


def test_adversarial_losses_under_a_float16_loss_scale():
    """precision=16-mixed: the inner backward scales the loss as the trainer's GradScaler would and divides
    the parameters' gradients back, so small float16 gradients survive and the step is the unscaled one."""
    model = small_model()
    ids, lengths, _ = batch()
    with torch.no_grad():  # a confident model (small losses, small gradients), right on every review
        y = model(ids, lengths)[0].argmax(-1)
        model.fc.weight.mul_(40)
        model.fc.bias.mul_(40)

    def embedding_grad(scale, amp):
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16, enabled=amp):
            _, _, adv, stand_in = adversarial_losses(model, ids, lengths, None, y, 0.05, scale)
        stand_in.backward()
        return model.embed.weight.grad.clone(), adv.detach()

    scale = torch.tensor(2.0**16)
    fp32, adv = embedding_grad(None, False)
    fp32_scaled, adv_scaled = embedding_grad(scale, False)
    assert torch.allclose(fp32_scaled, fp32, rtol=1e-5, atol=0) and torch.allclose(adv_scaled, adv)
    nonzero = fp32 != 0
    lost_unscaled = ((embedding_grad(None, True)[0] == 0) & nonzero).sum()
    lost_scaled = ((embedding_grad(scale, True)[0] == 0) & nonzero).sum()
    assert lost_unscaled > 0.02 * nonzero.sum() and lost_scaled == 0


def test_loss_scale_is_the_trainers_scalers():
    module = ClassifierModule(50, 2, classifier_settings(embed_dim=8, hidden_dim=8, regularizer="adversarial"))
    ids = torch.zeros(2, 3, dtype=torch.long)
    module._trainer = SimpleNamespace(precision_plugin=SimpleNamespace())  # 32-true, bf16-mixed: no scaler
    assert module._loss_scale(ids) is None
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    module._trainer = SimpleNamespace(precision_plugin=SimpleNamespace(scaler=scaler))
    assert module._loss_scale(ids).item() == 1024.0


def test_virtual_adversarial_direction_moves_the_prediction_most():
    model = small_model("additive")
    ids, lengths, _ = batch(seed=1)
    torch.manual_seed(0)
    vat = virtual_adversarial_loss(model, ids, lengths, None, epsilon=0.05, xi=1e-3)
    x = model.embed(ids).detach()
    mask = real_tokens(x, lengths)
    size = 0.05 * embedding_norm(x, mask)
    p = F.log_softmax(model.from_embeddings(x, lengths)[0], -1)
    rand = []
    for s in range(20):
        d = torch.randn(x.shape, generator=torch.Generator().manual_seed(s)) * mask
        d = size * d / d.flatten(1).norm(dim=1).view(-1, 1, 1)
        rand.append(kl(p, F.log_softmax(model.from_embeddings(x + d, lengths)[0], -1)).item())
    assert vat.item() > 5 * max(rand) > 0
    # its gradient reaches the classifier and the embedding (the clean prediction is a constant target)
    vat.backward()
    assert model.embed.weight.grad is not None and model.fc.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_virtual_adversarial_gradient_flows_through_the_moved_prediction_only(attention):
    """The gradient of the VAT loss is that of KL(p || q(x + r)) with the clean prediction p and the step r
    both constants, computed here the plain way: none flows into the target, nor through the power
    iteration that found r (a target that learns is pulled towards the perturbed prediction)."""
    model = small_model(attention)
    ids, lengths, _ = batch(seed=4)
    params = [p for p in model.parameters() if p.requires_grad]
    torch.manual_seed(5)
    got = torch.autograd.grad(virtual_adversarial_loss(model, ids, lengths, None, 0.05, 1e-3), params)

    torch.manual_seed(5)  # (the same random start of the power iteration)
    x = model.embed(ids)
    mask = real_tokens(x, lengths)
    size = embedding_norm(x, mask)
    p = F.log_softmax(model.from_embeddings(x, lengths)[0].float(), -1).detach()  # the target: a constant
    d = torch.randn_like(x) * mask
    d = (1e-3 * size * d / d.flatten(1).norm(dim=1).view(-1, 1, 1)).requires_grad_()
    (g,) = torch.autograd.grad(kl(p, F.log_softmax(model.from_embeddings(x.detach() + d, lengths)[0], -1)), d)
    r = (0.05 * size * g * mask / (g * mask).flatten(1).norm(dim=1).view(-1, 1, 1)).detach()  # a constant
    want = torch.autograd.grad(kl(p, F.log_softmax(model.from_embeddings(x + r, lengths)[0], -1)), params)
    for (name, _), a, b in zip(model.named_parameters(), got, want, strict=True):
        assert torch.allclose(a, b, atol=1e-6), name


def test_unlabeled_batches_come_from_the_unlabeled_split_fixed_by_their_number(with_unlabeled, tmp_path):
    def fresh():
        dm = make_datamodule(str(with_unlabeled), vocab_size=200, cache_dir=str(tmp_path), max_length=64, seed=3)
        dm.setup("fit")
        assert dm.setup_unlabeled("unsupervised", 16) == 80
        return dm

    dm = fresh()
    unk = dm.vocab.stoi.get(UNLABELED_ONLY)
    assert unk is None  # the vocabulary is the training rows' (the unlabeled-only word reads as UNK)
    per_pass = -(-80 // 16)
    seen = [dm.unlabeled_batch(i) for i in range(2 * per_pass)]
    rows = sum(len(b[1]) for b in seen[:per_pass])
    assert rows == 80  # one pass is every unlabeled review once
    assert not torch.equal(seen[0][0], seen[per_pass][0]) or not torch.equal(seen[1][0], seen[per_pass + 1][0])
    # a resumed run (a fresh DataModule) asked for batch 7 draws what the first run drew
    again = fresh().unlabeled_batch(7)
    assert all(torch.equal(a, b) for a, b in zip(again, seen[7], strict=True))
    for split in ("test", "train", "nonesuch"):
        with pytest.raises(AttnclfError, match=rf"regularizer.unlabeled_split='{split}'.*allowed: unsupervised"):
            fresh().setup_unlabeled(split, 16)


@pytest.mark.parametrize(
    ("name", "precision"),
    [("adversarial", "32-true"), ("virtual_adversarial", "32-true"), ("adversarial", "bf16-mixed")],
)
def test_training_with_a_regularizer(name, precision, with_unlabeled, tmp_path):
    """Also under bf16 autocast (what trainer=gpu sets): the run trains and its regulariser loss stays finite."""
    out = tmp_path / "run"
    cfg = compose_cfg(
        [
            "experiment=smoke",
            "callbacks.rich_progress_bar=null",
            "callbacks.attention_maps=null",
            f"trainer.precision={precision}",
            f"regularizer={name}",
            "regularizer.epsilon=0.05",
            *(["regularizer.unlabeled_batch_size=8"] if name == "virtual_adversarial" else []),
            *tiny_overrides(with_unlabeled, out),
        ]
    )
    train(cfg)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["hparams"]["regularizer.name"] == name and metrics["steps"] > 0
    clf = TrainedClassifier.from_checkpoint(metrics["best_checkpoint"])  # loads with nothing else
    saved = clf.module.hparams.regularizer  # (the checkpoint holds the settings nested: attnclf/settings/model.py)
    assert saved["name"] == name and saved["epsilon"] == 0.05
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = [p for p in out.rglob("events.out.tfevents.*") if "hparams" not in str(p)][:1]
    acc = EventAccumulator(str(events.parent))
    acc.Reload()
    values = [e.value for e in acc.Scalars(f"train/{name}_loss")]
    assert values and all(np.isfinite(values)) and max(values) > 0


@pytest.mark.parametrize("frozen", [False, True])
def test_the_optimiser_follows_cross_entropy_plus_weighted_adversarial_loss(frozen):
    """The gradient of what training_step returns is that of cross-entropy + weight x adversarial loss,
    computed here the plain way (with the frozen embedding too, which the step must still perturb)."""
    from attnclf.training.module import ClassifierModule

    ids, lengths, y = batch(b=6, vocab=50)
    args = dict(
        embed_dim=16, hidden_dim=16, dropout=0.0, embed_dropout=0.0, rnn_kernel="padded", freeze_embeddings=frozen
    )
    torch.manual_seed(0)
    module = ClassifierModule(50, 2, classifier_settings(regularizer="adversarial", epsilon=0.1, weight=3.0, **args))
    logged = {}
    module.log = lambda name, value, **k: logged.setdefault(name, value)
    module.training_step((ids, lengths, y), 0).backward()
    got = {n: p.grad.clone() for n, p in module.named_parameters() if p.requires_grad}
    assert ("model.embed.weight" in got) is not frozen

    module.zero_grad()
    m = module.model
    x = m.embed(ids)
    if frozen:
        x = x.detach().requires_grad_()
    loss = F.cross_entropy(m.from_embeddings(x, lengths)[0], y)
    (g,) = torch.autograd.grad(loss, x, retain_graph=True)  # (the padded kernel keeps its graph)
    mask = real_tokens(x, lengths)
    r = 0.1 * embedding_norm(x, mask) * g * mask / (g * mask).flatten(1).norm(dim=1).view(-1, 1, 1)
    adv = F.cross_entropy(m.from_embeddings(x + r, lengths)[0], y)
    (loss + 3.0 * adv).backward()
    assert torch.allclose(logged["train/loss"], loss) and torch.allclose(logged["train/adversarial_loss"], adv)
    for name, grad in got.items():
        assert torch.allclose(grad, dict(module.named_parameters())[name].grad, atol=1e-6), name


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("regularizer.name=dropout", "regularizer='dropout'; allowed: none, adversarial, virtual_adversarial"),
        ("regularizer.epsilon=0", "regularizer.epsilon=0 must be a number > 0"),
        ("regularizer.weight=-1", "regularizer.weight=-1 must be a number > 0"),
    ],
)
def test_bad_regularizer_values(override, message, tiny_imdb, tmp_path):
    cfg = compose_cfg(["experiment=smoke", "regularizer=adversarial", override, *tiny_overrides(tiny_imdb, tmp_path)])
    with pytest.raises(AttnclfError, match=message):
        train(cfg)
    assert not (tmp_path / "metrics.json").exists()


def test_virtual_adversarial_without_an_unlabeled_split(tiny_imdb, tmp_path):
    cfg = compose_cfg(["experiment=smoke", "regularizer=virtual_adversarial", *tiny_overrides(tiny_imdb, tmp_path)])
    with pytest.raises(AttnclfError, match="regularizer.unlabeled_split='unsupervised'.*no unlabeled split"):
        train(cfg)
