"""Faithfulness measures (attnclf.analysis.measures, attnclf faithfulness) against models whose truth is known.

Two known-truth models share one design: the encoder is the identity (each position holds its own
token's embedding), so what the output depends on is set by hand.
- `forced`: the attention puts all its weight on one signal token, and the output reads only the
  attention-pooled vector: erasing that token flips every decision, gradients and leave-one-out
  agree with the attention, shuffled or uniform weights change the output.
- `ignoring`: the output is the mean of the tokens, whatever the attention says, and the attention
  looks at a feature that has nothing to do with sentiment: shuffled weights change nothing, and
  erasing by attention does no better than erasing at random.
Each measure gets opposite verdicts from the two, so a measure that always says the same fails.
"""

import json

import numpy as np
import pytest
import torch
from helpers.classifier import classifier_settings, net
from helpers.commands import attnclf_in_process
from helpers.config import compose_cfg
from helpers.files import strict_json
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn

from attnclf.analysis import measures as F
from attnclf.analysis.faithfulness import sample
from attnclf.commands.faithfulness import erasure_sizes, faithfulness
from attnclf.errors import AttnclfError
from attnclf.models.attention import Attention, AttentionShape
from attnclf.models.classifier import ClassifierNet
from attnclf.settings.attention import AttentionConfig
from attnclf.utils.jsonfile import dumps

SIGNAL = 3
V, E = 50, 4


class LooksAt(Attention):
    """Attention whose scores are `scale` times one feature of each token (dimension `dim`): a mechanism of
    one's own, written as the interface asks (scores only)."""

    def __init__(self, dim: int, scale: float):
        super().__init__(AttentionShape(E, E))
        self.dim, self.scale = dim, scale

    def scores(self, query, keys):
        return self.scale * keys[..., self.dim].unsqueeze(1)  # (B, 1, T)


class KnownTruth(ClassifierNet):
    """Identity encoder; logit(positive) - logit(negative) = the pooled vector's first feature."""

    def __init__(self, embeddings: torch.Tensor, attention: nn.Module, ignore_weights: bool = False):
        shape = classifier_settings(embed_dim=E, hidden_dim=E // 2, dropout=0.0, embed_dropout=0.0).model
        super().__init__(V, 2, AttentionConfig.named("dot"), shape)
        self.embed.weight.data.copy_(embeddings)
        self.attention = attention
        self.ignore_weights = ignore_weights
        self.fc.weight.data.zero_()
        self.fc.weight.data[1, 0] = 1.0
        self.fc.bias.data.zero_()
        self.eval()

    def encode(self, x, lengths, host_lengths=None):
        mask = torch.arange(x.size(1)) < lengths.unsqueeze(1)
        return x, x.mean(1), mask

    def pool(self, out, weights):
        if self.ignore_weights:  # the mean of the real tokens (feature 2 is 1 on each of them, 0 on padding)
            return out.sum(1) / out[..., 2].sum(1, keepdim=True)
        return super().pool(out, weights)


def forced_model() -> KnownTruth:
    emb = torch.zeros(V, E)
    emb[1:, 0], emb[1:, 2] = -1.0, 1.0  # every real token: negative, counted
    emb[SIGNAL] = torch.tensor([4.0, 1.0, 1.0, 0.0])  # the signal token, marked by feature 1
    return KnownTruth(emb, LooksAt(dim=1, scale=50.0))


def forced_reviews(n=60, seed=0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        r = rng.integers(4, V, size=rng.integers(10, 30))
        r[rng.integers(len(r))] = SIGNAL
        out.append(r.astype(np.int64))
    return out


POS, NEG = range(4, 10), range(10, 16)


def ignoring_model() -> KnownTruth:
    rng = np.random.default_rng(1)
    emb = torch.zeros(V, E)
    emb[1:, 2] = 1.0
    emb[list(POS), 0], emb[list(NEG), 0] = 1.5, -1.5
    emb[1:, 3] = torch.from_numpy(rng.random(V - 1)).float()  # what the attention looks at: unrelated to sentiment
    return KnownTruth(emb, LooksAt(dim=3, scale=8.0), ignore_weights=True)


def ignoring_reviews(n=200, seed=0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        r = list(rng.integers(16, V, size=rng.integers(10, 30)))
        for _ in range(rng.integers(1, 3)):
            r.insert(rng.integers(len(r) + 1), rng.choice(list(POS if i % 2 else NEG)))
        out.append(np.asarray(r, dtype=np.int64))
    return out


def all_measures(model, seqs):
    attr = F.attributions(model, seqs)
    loo = F.leave_one_out(model, seqs, attr.probs)
    rng = np.random.default_rng(0)
    orders = {
        "attention": [F.ranking(w) for w in attr.weights],
        "gradient": [F.ranking(g) for g in attr.gradient],
        "random": [rng.permutation(len(s)) for s in seqs],
    }
    erasure = F.erasure(model, seqs, attr.probs, orders, [1, 3, 0.1])
    flips = F.tokens_to_flip(model, seqs, attr.probs, orders["attention"])
    tv, entropy = F.permutation(model, seqs, permutations=30)
    uniform = F.uniform(model, seqs)
    return attr, loo, erasure, flips, tv, uniform


def test_attention_forced_onto_one_token():
    model, seqs = forced_model(), forced_reviews()
    attr, loo, erasure, flips, tv, uniform = all_measures(model, seqs)
    assert (attr.pred == 1).all()
    # gradients and leave-one-out single out the same token as the attention
    assert np.nanmean(F.kendall(attr.weights, attr.gradient)) > 0.9
    assert np.nanmean(F.kendall(attr.weights, loo)) > 0.9
    assert F.top1_agreement(attr.weights, attr.gradient) == 1.0 == F.top1_agreement(attr.weights, loo)
    # erasing the top-attention token flips every decision; one random token rarely does
    assert erasure["attention"]["k1"]["flipped"] == 1.0 and erasure["attention"]["k1"]["prob_drop"] > 0.5
    assert erasure["random"]["k1"]["flipped"] < 0.2
    assert (flips == 1).all()
    # moving its weight elsewhere or spreading it out changes the output
    assert np.median(tv) > 0.5
    assert (uniform.argmax(-1) != attr.pred).mean() > 0.9


def test_output_that_ignores_the_attention():
    model, seqs = ignoring_model(), ignoring_reviews()
    attr, loo, erasure, flips, tv, uniform = all_measures(model, seqs)
    labels = np.arange(len(seqs)) % 2
    assert (attr.pred == labels).mean() == 1.0
    assert np.abs(tv).max() < 1e-6 and (uniform.argmax(-1) == attr.pred).all()
    for k in ("k1", "k3", "k10pct"):  # by attention: no better than random; by gradient: far better
        assert abs(erasure["attention"][k]["flipped"] - erasure["random"][k]["flipped"]) < 0.12, k
    assert erasure["gradient"]["k3"]["flipped"] > erasure["attention"]["k3"]["flipped"] + 0.4
    assert abs(np.nanmean(F.kendall(attr.weights, attr.gradient))) < 0.2
    assert np.nanmean(F.kendall(attr.gradient, loo)) > 0.2  # the two non-attention measures agree
    assert np.nanmedian(flips) > 2


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_measures_on_a_real_model_match_one_review_at_a_time(attention):
    """The batched passes (padding, length groups) give each review what it gets alone, and the pooled
    path the measures use is the model's own forward."""
    torch.manual_seed(0)
    model = net(V, 3, embed_dim=8, hidden_dim=6, attention=attention).eval()
    rng = np.random.default_rng(2)
    seqs = [rng.integers(1, V, size=n).astype(np.int64) for n in (7, 3, 12, 1, 9)]
    attr = F.attributions(model, seqs, batch_tokens=20)  # several groups
    loo = F.leave_one_out(model, seqs, attr.probs, batch_tokens=20, group_tokens=30)
    even_probs = F.uniform(model, seqs, batch_tokens=20)
    plain_weights = F.attention_weights(model, seqs, batch_tokens=20)
    for i, s in enumerate(seqs):
        ids = torch.as_tensor(s).unsqueeze(0)
        with torch.no_grad():
            logits, w = model(ids, torch.tensor([len(s)]))
        p = torch.softmax(logits, -1)[0]
        c = int(p.argmax())
        torch.testing.assert_close(torch.from_numpy(attr.probs[i]).float(), p, atol=1e-5, rtol=1e-4)
        np.testing.assert_allclose(attr.weights[i], w[0].numpy(), atol=1e-6)
        x = model.embed(ids).detach().requires_grad_(True)
        torch.softmax(model.classify(model.pool(*_out_and_weights(model, x, len(s)))), -1)[0, c].backward()
        np.testing.assert_allclose(attr.gradient[i], (x.grad * x).sum(-1)[0].detach().numpy(), atol=1e-6)
        # uniform weights and the weights themselves: the real tokens only, whatever the batch's padding
        with torch.no_grad():
            out, _ = _out_and_weights(model, model.embed(ids), len(s))
            even = torch.softmax(model.classify(model.pool(out, torch.full((1, len(s)), 1 / len(s)))), -1)[0]
        np.testing.assert_allclose(even_probs[i], even.numpy(), atol=1e-6)
        np.testing.assert_allclose(plain_weights[i], w[0].numpy(), atol=1e-6)
        if len(s) == 1:
            assert np.isnan(loo[i]).all()
            continue
        for t in range(len(s)):
            rest = torch.as_tensor(np.delete(s, t)).unsqueeze(0)
            with torch.no_grad():
                q = torch.softmax(model(rest, torch.tensor([len(s) - 1]))[0], -1)[0, c]
            assert loo[i][t] == pytest.approx(float(p[c] - q), abs=1e-5)


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_comprehensiveness_and_sufficiency_equal_eraser_s_definitions_computed_apart(attention):
    """ERASER (DeYoung et al. 2020), computed here one review at a time by plain torch, with the tokens
    deleted from the sequence: comprehensiveness = p(c | x) - p(c | x without its top k%), sufficiency =
    p(c | x) - p(c | its top k% alone), c the predicted class, the mean over reviews of 2 tokens or more;
    AOPC the mean over the bins. A one-token review is left out; a two-token review's every bin is 1 token."""
    torch.manual_seed(1)
    model = net(V, 3, embed_dim=8, hidden_dim=6, attention=attention).eval()
    rng = np.random.default_rng(5)
    seqs = [rng.integers(1, V, size=n).astype(np.int64) for n in (7, 1, 2, 30, 11, 120)]
    scores = [rng.normal(size=len(x)) for x in seqs]
    orders = {"some": [np.argsort(-sc, kind="stable") for sc in scores]}
    probs = F.probabilities(model, seqs, batch_tokens=25)
    got = F.comprehensiveness_sufficiency(model, seqs, probs, orders, batch_tokens=25)["some"]

    def p_of(tokens, c):
        with torch.no_grad():
            return float(torch.softmax(model(torch.as_tensor(tokens)[None], torch.tensor([len(tokens)]))[0], -1)[0, c])

    comp, suff = {}, {}
    for share in (0.01, 0.05, 0.10, 0.20, 0.50):
        c_drop, s_drop = [], []
        for x, sc in zip(seqs, scores, strict=True):
            if len(x) < 2:
                continue
            k = min(max(1, round(share * len(x))), len(x) - 1)
            top = set(sorted(range(len(x)), key=lambda t: (-sc[t], t))[:k])
            c = int(np.argmax([p_of(x, j) for j in range(3)]))
            c_drop.append(p_of(x, c) - p_of([v for t, v in enumerate(x) if t not in top], c))
            s_drop.append(p_of(x, c) - p_of([v for t, v in enumerate(x) if t in top], c))
        comp[share], suff[share] = np.mean(c_drop), np.mean(s_drop)
    for share, name in zip(comp, ("1pct", "5pct", "10pct", "20pct", "50pct"), strict=True):
        assert got["comprehensiveness"][name] == pytest.approx(comp[share], abs=1e-5)
        assert got["sufficiency"][name] == pytest.approx(suff[share], abs=1e-5)
    assert got["aopc_comprehensiveness"] == pytest.approx(np.mean(list(comp.values())), abs=1e-5)
    assert got["aopc_sufficiency"] == pytest.approx(np.mean(list(suff.values())), abs=1e-5)
    assert [F.bin_count(b, 2) for b in F.ERASER_BINS] == [1] * 5 and F.bin_count(0.5, 120) == 60
    only_one = F.comprehensiveness_sufficiency(model, [seqs[1]], probs[1:2], {"some": [orders["some"][1]]})
    assert np.isnan(only_one["some"]["aopc_comprehensiveness"])  # (no review to score: none of 2 tokens)


def test_permuted_weights_stay_on_the_real_tokens():
    """The permutation measure shuffles each review's weights among its own tokens: padding keeps 0, and each
    shuffle holds the same weights (a review's TV distance must not depend on the batch's padding)."""
    lengths = torch.tensor([5, 2, 8, 1])
    mask = torch.arange(8) < lengths.unsqueeze(1)  # (B, T)
    w = torch.rand(4, 8).masked_fill(~mask, 0.0)
    w = w / w.sum(-1, keepdim=True)
    shuffled = F.shuffled_weights(w, mask, 50, torch.Generator().manual_seed(0))  # (P, B, T)
    assert shuffled.shape == (50, 4, 8)
    assert (shuffled.masked_select(~mask.expand_as(shuffled)) == 0).all()
    for b, n in enumerate(lengths.tolist()):
        real = torch.sort(w[b, :n]).values
        assert all(torch.equal(torch.sort(shuffled[p, b, :n]).values, real) for p in range(50))
        if n > 2:
            assert len({tuple(shuffled[p, b, :n].tolist()) for p in range(50)}) > 1  # (really shuffled)


def _out_and_weights(model, x, n):
    out, final, mask = model.encode(x, torch.tensor([n]))
    _, w = model.attention(final.unsqueeze(1), out, out, mask)
    return out, w.squeeze(1)


def test_erasure_sizes_and_helpers():
    assert [F.erase_count(k, 20) for k in (1, 3, 0.1, 0.5, 50)] == [1, 3, 2, 10, 19]
    assert F.erase_count(0.1, 4) == 1 and F.erase_count(5, 2) == 1  # at least one token erased, one kept
    assert F.k_name(3) == "k3" and F.k_name(0.1) == "k10pct"
    assert list(F.ranking(np.array([0.1, 0.5, 0.1, 0.3]))) == [1, 3, 0, 2]
    assert np.isnan(F.kendall([np.array([1.0])], [np.array([1.0])])[0])
    same = F.js_distance([np.array([0.2, 0.8])], [np.array([0.2, 0.8])])[0]
    apart = F.js_distance([np.array([1.0, 0.0])], [np.array([0.0, 1.0])])[0]
    assert same == pytest.approx(0.0, abs=1e-7) and apart == pytest.approx(1.0)
    assert erasure_sizes([1, 3, 0.1]) == [1.0, 3.0, 0.1]
    for bad in ([0], [1.5], [-1], [True], ["a"], []):
        with pytest.raises(AttnclfError, match="ks"):
            erasure_sizes(bad)
    lengths = np.array([5, 300, 10, 20])
    assert list(sample(lengths, 3, 256, 0, "test")) == [0, 2, 3]
    with pytest.raises(AttnclfError, match=r"reviews=4 is more than split 'test' has with at most 256 tokens \(3 of"):
        sample(lengths, 4, 256, 0, "test")
    assert list(sample(lengths, 2, 256, 0, "test", min_tokens=6)) == [2, 3]  # (Jain & Wallace's shortest: 6)
    with pytest.raises(AttnclfError, match=r"has with 6 to 256 tokens \(2 of 4\)"):
        sample(lengths, 3, 256, 0, "test", min_tokens=6)


def compose_faith(overrides):
    return compose_cfg(config_name="faithfulness", overrides=overrides)


@pytest.mark.slow  # (a process of its own, or more training than a tiny run)
def test_faithfulness_command_writes_json_summary_and_tensorboard(tiny_run, tiny_imdb, tmp_path, monkeypatch, capsys):
    out = tmp_path / "faith"
    cfg = compose_faith(
        [
            f"ckpt={tiny_run}",
            f"data.path={tiny_imdb}",
            f"paths.cache_dir={tmp_path}",
            "reviews=30",
            "max_tokens=64",
            "permutations=10",
            "adversarial=0.05",
            "sources=[integrated_gradients,feature_ablation]",
            f"output={out}",
        ]
    )
    result = faithfulness(cfg)
    saved = strict_json(out / "faithfulness.json")
    assert saved["reviews"] == 30 and saved["attention"] == "dot" and saved["max_tokens"] == 64
    captum = ("integrated_gradients", "feature_ablation")  # sources=[...]: Captum's, beside the others
    assert set(saved["erasure"]) == {"attention", "gradient", "loo", "random", *captum}
    assert set(saved["erasure"]["attention"]) == {"k1", "k3", "k5", "k10pct"}
    assert -1 <= saved["agreement"]["kendall_tau"]["gradient"]["mean"] <= 1
    magnitude = saved["agreement"]["magnitude"]  # Jain & Wallace's definition beside the signed one
    assert set(magnitude) == {"gradient", "loo", "gradient_vs_loo", "gradient_with_attention", *captum}
    assert all(-1 <= v["mean"] <= 1 and 0 <= v["significant"] <= 1 for v in magnitude.values())
    assert saved["seconds"]["gradient_fixed_weights"] >= 0 and saved["min_tokens"] == 1
    assert saved["permutation"]["permutations"] == 10 and len(saved["permutation"]["by_entropy_quartile"]) >= 1
    eraser = saved["eraser"]
    two_or_more = sum(n >= 2 for n in saved["per_review"]["tokens"])  # (the one-token reviews are left out)
    assert eraser["bins"] == ["1pct", "5pct", "10pct", "20pct", "50pct"] and eraser["reviews"] == two_or_more
    assert set(eraser["sources"]) == set(saved["erasure"])
    for v in eraser["sources"].values():
        assert set(v["comprehensiveness"]) == set(eraser["bins"]) and -1 <= v["aopc_sufficiency"] <= 1
        assert v["aopc_comprehensiveness"] == pytest.approx(np.mean(list(v["comprehensiveness"].values())))
    assert (out / "aopc.png").stat().st_size > 10_000
    assert saved == json.loads(dumps(result))  # (a value not measured, nan, is null in the file)
    md = (out / "summary.md").read_text()
    assert "Kendall tau" in md and "| attention |" in md and md in capsys.readouterr().out
    assert "| top 1 | top 3 | top 5 | top 10% |" in md and "k10pct" not in md  # (words a reader uses)
    assert (out / "summary.png").stat().st_size > 10_000
    events = EventAccumulator(str(out), size_guidance={"images": 0})
    events.Reload()
    tags = events.Tags()
    assert {"faithfulness/kendall_tau_gradient", "faithfulness/erasure_flipped/attention_k1"} <= set(tags["scalars"])
    assert {
        "faithfulness/kendall_tau_magnitude_gradient",
        "faithfulness/significant_magnitude_loo",
        "faithfulness/significant_gradient",
    } <= set(tags["scalars"])
    assert "by magnitude: tau mean ± sd" in md
    assert set(captum) <= set(saved["agreement"]["kendall_tau"])
    assert set(saved["seconds_per_review"]) == {"gradient", "gradient_fixed_weights", "loo", *captum}
    assert "| integrated gradients |" in md
    adversarial = saved["adversarial"]  # attnclf faithfulness adversarial=<epsilon>: Jain & Wallace's search
    assert adversarial["epsilon"] == 0.05 and 0 <= adversarial["median_jsd"] <= np.log(2)
    assert adversarial["seconds_per_review"] > 0 and len(saved["per_review"]["adversarial_jsd"]) == 30
    assert (out / "adversarial.png").stat().st_size > 10_000 and "## Adversarial attention" in md
    assert {"faithfulness/adversarial_median_jsd", "faithfulness/adversarial_permuted_median_jsd"} <= set(
        tags["scalars"]
    )
    assert {"faithfulness/summary", "faithfulness/review_0", "faithfulness/review_3"} <= set(tags["images"])
    assert {
        "faithfulness_test/aopc_comprehensiveness/attention",
        "faithfulness_test/aopc_sufficiency/loo",
        "faithfulness_test/comprehensiveness_10pct/random",
    } <= set(tags["scalars"])
    assert "faithfulness_test/aopc" in tags["images"] and "## ERASER: comprehensiveness and sufficiency" in md
    # the same sample every time (seeded)
    again = faithfulness(compose_faith([*cfg_overrides(cfg), f"output={tmp_path / 'again'}"]))
    for key in ("kendall_tau", "magnitude"):  # (the first run had Captum's sources too: the shared ones)
        assert all(again["agreement"][key][n] == result["agreement"][key][n] for n in ("gradient", "loo"))
    assert all(again["erasure"][n] == result["erasure"][n] for n in again["erasure"])
    assert len(saved["per_review"]["kendall_tau_loo"]) == 30 == len(saved["per_review"]["tokens"])

    from attnclf.commands.compare_faithfulness import command as main

    # a path without a result, a file cut short, another JSON file: one line, exit 2 like every user error
    (tmp_path / "torn.json").write_text('{"attention": "dot", "check')
    (tmp_path / "other.json").write_text("[1, 2]")
    for given, line in (
        ("nothing", "no faithfulness.json at"),
        ("torn.json", "torn.json is not JSON (Unterminated string"),
        ("other.json", "other.json is not what attnclf faithfulness writes"),
    ):
        assert attnclf_in_process(["compare-faithfulness", str(tmp_path / given)], monkeypatch) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and line in err[0], err

    # a run folder stands for the one result it holds (<run>/faithfulness_test/)
    import shutil

    shutil.copytree(out, tmp_path / "a_run" / "faithfulness_test")
    assert main([str(tmp_path / "a_run"), str(out), "--out", str(tmp_path / "d.png")]) == 0
    capsys.readouterr()
    assert main([str(out), str(tmp_path / "again" / "faithfulness.json"), "--out", str(tmp_path / "c.png")]) == 0
    table = capsys.readouterr().out
    assert "| flipped, top-1 by attention removed |" in table and (tmp_path / "c.png").stat().st_size > 10_000
    flipped = f"{result['erasure']['random']['k3']['flipped']:.1%}"
    assert f"| flipped, top-3 by random removed | {flipped} | {flipped} |" in table
    # five runs: every run's three erasure lines are drawn, each named by its run (not only its attention)
    from attnclf.commands.compare_faithfulness import figure, load

    runs = [{**load(str(out)), "_label": f"dot (run {i})"} for i in range(5)]
    erasure = figure(runs, str(tmp_path / "five.png")).axes[1]
    labels = [line.get_label() for line in erasure.lines]
    assert len(labels) == 15 == len(set(labels)) and "dot (run 4): by attention" in labels


def cfg_overrides(cfg):
    return [
        f"ckpt={cfg.ckpt}",
        f"data.path={cfg.data.path}",
        f"paths.cache_dir={cfg.paths.cache_dir}",
        "reviews=30",
        "max_tokens=64",
        "permutations=10",
    ]


def test_faithfulness_bad_input(tiny_run, tiny_imdb, tmp_path):
    base = [f"ckpt={tiny_run}", f"data.path={tiny_imdb}", f"paths.cache_dir={tmp_path}", f"output={tmp_path / 'o'}"]
    with pytest.raises(AttnclfError, match=r"reviews=500 is more than split 'test' has"):
        faithfulness(compose_faith([*base, "reviews=500"]))
    with pytest.raises(AttnclfError, match=r"ks: 0 is out of range"):
        faithfulness(compose_faith([*base, "ks=[1,0]"]))
    with pytest.raises(AttnclfError, match=r"permutations=0"):
        faithfulness(compose_faith([*base, "permutations=0"]))
    with pytest.raises(AttnclfError, match=r"min_tokens=300; allowed: a whole number from 1 to max_tokens \(256\)"):
        faithfulness(compose_faith([*base, "min_tokens=300"]))
    with pytest.raises(AttnclfError, match=r"sources='shap'.*allowed: integrated_gradients, feature_ablation"):
        faithfulness(compose_faith([*base, "sources=[shap]"]))
    with pytest.raises(AttnclfError, match=r"^sources: integrated_gradients is given twice; give each source once$"):
        faithfulness(compose_faith([*base, "sources=[integrated_gradients,integrated_gradients]"]))
    with pytest.raises(AttnclfError, match=r"num_threads=0 must be a positive integer"):
        faithfulness(compose_faith([*base, "num_threads=0"]))
    for bad in ("0", "-0.1", "1.5"):
        with pytest.raises(AttnclfError, match=r"adversarial=[-.0-9]+: the output's allowed change .* in \(0, 1\)"):
            faithfulness(compose_faith([*base, f"adversarial={bad}"]))
    other = tmp_path / "other.ckpt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(AttnclfError, match="not a Lightning checkpoint"):
        faithfulness(compose_faith([*base[1:], f"ckpt={other}"]))
    lm = tmp_path / "lm.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {"kind": "bigru_lm", "vocab_size": 10}}, lm)
    with pytest.raises(AttnclfError, match="is a language model of attnclf pretrain, not a classifier"):
        faithfulness(compose_faith([*base[1:], f"ckpt={lm}"]))
    assert not (tmp_path / "o").exists()


def test_attention_agreement_across_seeds_and_attentions(
    tiny_run, tiny_run_additive, tiny_imdb, tmp_path, monkeypatch, capsys
):
    """Two copies of one run agree exactly (distance 0); dot against additive does not; bad input is one line."""
    import shutil

    from attnclf.commands.agreement import command as main

    twin = tmp_path / "twin"
    shutil.copytree(tiny_run, twin)
    out = tmp_path / "agreement.json"
    args = [
        str(tiny_run),
        str(twin),
        str(tiny_run_additive),
        "--data",
        str(tiny_imdb),
        "--reviews",
        "20",
        "--max-tokens",
        "64",
        "--cache-dir",
        str(tmp_path),
        "--output",
        str(out),
    ]
    assert main(args) == 0
    r = json.loads(out.read_text())
    assert r["reviews"] == 20 and r["within"]["dot"]["pairs"] == 1
    assert r["within"]["dot"]["mean_js"] == pytest.approx(0.0, abs=1e-6)
    assert 0.01 < r["across"]["additive vs dot"]["mean_js"] <= 1 and r["across"]["additive vs dot"]["pairs"] == 2
    assert all(0 < v["mean_js_to_uniform"] < 1 for v in r["runs"].values())
    assert "additive vs dot" in capsys.readouterr().out
    # (through the command table, which prints a command's user error as its one line)
    one = ["agreement", str(tiny_run), "--data", str(tiny_imdb), "--cache-dir", str(tmp_path)]
    assert attnclf_in_process(one, monkeypatch) == 2
    assert capsys.readouterr().err.strip() == "error: give two or more runs to compare"


def test_faithfulness_command_line(tiny_run, tmp_path, monkeypatch, capsys, in_process):
    assert attnclf_in_process(["faithfulness", "--help"], monkeypatch) == 0
    help_ = capsys.readouterr().out
    assert "max_tokens" in help_ and "attnclf agreement" in help_
    bad = ["faithfulness", f"ckpt={tiny_run}", "ks=[1,2.5]", f"hydra.run.dir={tmp_path / 'h'}"]
    assert attnclf_in_process(bad, monkeypatch) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: ks: 2.5 is out of range; allowed: whole numbers >= 1 or fractions in (0, 1)"
    ]


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_magnitude_agreement_is_jain_and_wallace_s_definition_computed_apart(attention):
    """Jain & Wallace (2019; their code, successar/AttentionExplanation): the binary model's output p(class 1);
    gradient x input is d p / d embedding . embedding summed over its dims, with the attention weights held
    fixed (detached), taken in absolute value; leave-one-out is |p(review) - p(review without the token)|;
    Kendall tau (scipy's tau-b) of the attention weights against each, per review, and a review's tau is
    significant at p <= 0.05. Computed here one review at a time by plain torch."""
    from scipy.stats import kendalltau

    from attnclf.analysis.faithfulness import agreement

    torch.manual_seed(3)
    model = net(V, 2, embed_dim=8, hidden_dim=6, attention=attention).eval()
    rng = np.random.default_rng(4)
    seqs = [rng.integers(1, V, size=n).astype(np.int64) for n in (9, 1, 14, 30, 6, 22, 40)]
    attr = F.attributions(model, seqs, batch_tokens=40)
    fixed = F.attributions(model, seqs, batch_tokens=40, fixed_weights=True)
    loo = F.leave_one_out(model, seqs, attr.probs, batch_tokens=40)
    result, taus = agreement(attr, fixed, loo)

    def p1(tokens):
        with torch.no_grad():
            return float(torch.softmax(model(torch.as_tensor(tokens)[None], torch.tensor([len(tokens)]))[0], -1)[0, 1])

    want = {"gradient": [], "loo": [], "gradient_vs_loo": []}
    significant = {k: [] for k in want}
    for i, s in enumerate(seqs):
        ids = torch.as_tensor(s)[None]
        x = model.embed(ids).detach().requires_grad_(True)
        out, w = _out_and_weights(model, x, len(s))
        torch.softmax(model.classify(model.pool(out, w.detach())), -1)[0, 1].backward()
        grad = (x.grad * x).sum(-1)[0].abs().detach().numpy()
        np.testing.assert_allclose(np.abs(fixed.gradient[i]), grad, atol=1e-6)
        if len(s) < 2:
            assert np.isnan(taus["gradient_magnitude"][i])
            continue
        left = np.array([abs(p1(s) - p1(np.delete(s, t))) for t in range(len(s))])
        for name, (a, b) in {
            "gradient": (attr.weights[i], grad),
            "loo": (attr.weights[i], left),
            "gradient_vs_loo": (grad, left),
        }.items():
            tau, p = kendalltau(a, b)
            want[name].append(tau)
            significant[name].append(p <= 0.05)
    np.testing.assert_allclose(
        taus["gradient_magnitude"][np.isfinite(taus["gradient_magnitude"])], want["gradient"], atol=1e-6
    )
    np.testing.assert_allclose(taus["loo_magnitude"][np.isfinite(taus["loo_magnitude"])], want["loo"], atol=1e-6)
    for name in want:
        got = result["magnitude"][name]
        assert got["mean"] == pytest.approx(np.mean(want[name]), abs=1e-6)
        assert got["significant"] == pytest.approx(np.mean(significant[name]))
        assert got["n"] == len(seqs) - 1
    # the definitions differ: signed importance is not its size, nor the gradient through the weights the fixed one's
    assert not np.allclose(taus["gradient"], taus["gradient_magnitude"], equal_nan=True)
    assert not np.allclose(np.abs(attr.gradient[3]), np.abs(fixed.gradient[3]))
    assert 0 <= result["kendall_tau"]["gradient"]["significant"] <= 1


def test_a_learned_query_pools_as_jain_and_wallace():
    """model.query=learned: one query for every review (a parameter); additive v^T tanh(W h + b) with a tanh layer
    half the encoder's width; dot w . h / sqrt(2H), the weights computed apart here (a given attention_dim keeps
    the projected form); the default query stays the final states."""
    torch.manual_seed(0)
    ids, lengths = torch.randint(1, V, (3, 7)), torch.tensor([7, 5, 2])
    for attention in ("additive", "dot"):
        model = net(V, 2, embed_dim=8, hidden_dim=6, attention=attention, query="learned").eval()
        out, query, mask = model.encode(model.embed(ids), lengths)
        assert torch.equal(query, model.query.expand(3, -1)) and model.query.requires_grad
        _, w = model(ids, lengths)
        if attention == "additive":
            assert model.attention.k_proj.out_features == 6
            scores = model.attention.score_proj(
                torch.tanh(model.attention.k_proj(out) + model.attention.q_proj(query)[:, None])
            )
        else:
            scores = (out @ model.query[0] / 12**0.5)[..., None]
        want = torch.softmax(scores.squeeze(-1).masked_fill(~mask, -torch.inf), -1)
        torch.testing.assert_close(w, want)
        model(ids, lengths)[0].sum().backward()
        assert model.query.grad is not None and model.query.grad.abs().sum() > 0
    projected = net(V, 2, embed_dim=8, hidden_dim=6, query="learned", attention_dim=12)
    assert projected.attention.k_proj.out_features == 12
    final = net(V, 2, embed_dim=8, hidden_dim=6, attention="additive").eval()
    out, query, _ = final.encode(final.embed(ids), lengths)
    assert final.query is None and final.attention.k_proj.out_features == 12
    assert not torch.equal(query[0], query[1])  # each review's own summary


def test_the_adversarial_attention_stays_within_epsilon_and_beats_a_permutation():
    """Jain & Wallace's adversarial search on a real tiny model: each review's chosen weights, pooled by the model,
    move its output at most epsilon (total variation, computed here apart), their JSD from the model's weights
    (nats, scipy's) is the one reported, and it is far above a random permutation's. Opposite verdicts on the
    known-truth models: where the output ignores the weights any weights will do (JSD near ln 2); where it reads
    the one token the attention is forced onto, little can move."""
    from scipy.spatial.distance import jensenshannon

    from attnclf.analysis.adversarial import adversarial_attention

    torch.manual_seed(0)
    model = net(V, 2, embed_dim=8, hidden_dim=6, attention="additive", attention_keys={"init": "default"})
    model.eval()
    rng = np.random.default_rng(1)
    seqs = [rng.integers(1, V, size=n).astype(np.int64) for n in (12, 5, 30, 2, 17)]
    adv = adversarial_attention(model, seqs, epsilon=0.02, steps=150, batch_tokens=40)
    probs = F.probabilities(model, seqs)
    own = F.attention_weights(model, seqs)
    for i, s in enumerate(seqs):
        with torch.no_grad():
            out, _ = _out_and_weights(model, model.embed(torch.as_tensor(s)[None]), len(s))
            p = torch.softmax(model.classify(model.pool(out, torch.as_tensor(adv.weights[i])[None].float())), -1)
        assert 0.5 * np.abs(p[0].numpy() - probs[i]).sum() <= 0.02 + 1e-5
        assert adv.weights[i].sum() == pytest.approx(1.0) and adv.found[i]
        assert adv.jsd[i] == pytest.approx(jensenshannon(adv.weights[i], own[i]) ** 2, abs=1e-4)
    assert adv.jsd.mean() > 0.2 and adv.jsd.mean() > 5 * adv.permuted_jsd.mean()
    free = adversarial_attention(ignoring_model(), ignoring_reviews(12), epsilon=0.01, steps=150)
    held = adversarial_attention(forced_model(), forced_reviews(12), epsilon=0.01, steps=150)
    assert np.median(free.jsd) > 0.5 > 0.1 > np.median(held.jsd)
    # one candidate (nothing to keep apart from) against uniform weights the output ignores: the search itself
    # carries it most of the way to the largest JSD there is (all the weight on one token)
    uniform = ignoring_model()
    uniform.attention = LooksAt(dim=3, scale=0.0)
    seqs = ignoring_reviews(12)
    alone = adversarial_attention(uniform, seqs, epsilon=0.01, candidates=1, steps=150)
    most = [jensenshannon(np.eye(len(s))[0], np.full(len(s), 1 / len(s))) ** 2 for s in seqs]
    assert np.median(alone.jsd / np.array(most)) > 0.75


@pytest.mark.parametrize("attention", ["dot", "additive"])
def test_captum_sources_equal_their_definitions_computed_apart(attention):
    """Integrated gradients (on the embedding, from all-zero embeddings, 50 Gauss-Legendre points) and feature
    ablation (a token's embedding set to zeros), each for p(predicted), computed here one review at a time by
    plain torch; the path's scores add up to p(review) - p(zeros) within the rule's error."""
    from attnclf.analysis.attribution import IG_STEPS, importance

    torch.manual_seed(2)
    model = net(V, 3, embed_dim=8, hidden_dim=6, attention=attention).eval()
    rng = np.random.default_rng(6)
    seqs = [rng.integers(1, V, size=n).astype(np.int64) for n in (9, 1, 14, 3)]
    pred = F.probabilities(model, seqs).argmax(-1)
    ig = importance(model, seqs, "integrated_gradients", pred, batch_tokens=400)
    ablation = importance(model, seqs, "feature_ablation", pred, batch_tokens=20)
    nodes, rule = np.polynomial.legendre.leggauss(IG_STEPS)  # Gauss-Legendre on [-1, 1], then on [0, 1]
    alphas, rule = (nodes + 1) / 2, rule / 2
    for i, s in enumerate(seqs):
        length = torch.tensor([len(s)])
        x = model.embed(torch.as_tensor(s)[None]).detach()

        def p(e, i=i, length=length):
            return torch.softmax(model.from_embeddings(e, length)[0], -1)[0, pred[i]]

        path = 0
        for a, w in zip(alphas, rule, strict=True):
            point = (a * x).requires_grad_(True)
            p(point).backward()
            path = path + float(w) * point.grad
        np.testing.assert_allclose(ig[i], (path * x).sum(-1)[0].numpy(), atol=1e-6)
        with torch.no_grad():
            assert ig[i].sum() == pytest.approx(float(p(x) - p(torch.zeros_like(x))), abs=1e-4)
            zeroed = [float(p(x) - p(x * (torch.arange(len(s)) != t).view(1, -1, 1))) for t in range(len(s))]
        np.testing.assert_allclose(ablation[i], zeroed, atol=1e-6)
