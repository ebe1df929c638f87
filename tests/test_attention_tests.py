"""Wiegreffe & Pinter's tests (attnclf attention-tests): the context-free model, the guided training's losses, and the
command end to end on a tiny run."""

import json

import pytest
import torch
from helpers.classifier import net
from helpers.config import compose_cfg

from attnclf.commands.attention_tests import attention_tests
from attnclf.commands.eval import evaluate
from attnclf.errors import AttnclfError
from attnclf.models.context_free import ContextFreeClassifier
from attnclf.training.guided import GuidedModule

V = 40


def test_the_context_free_model_pools_each_token_alone_by_the_weights_given():
    """logits = fc(sum_t w_t tanh(W e_t + b)), computed apart; no weights: uniform over the real tokens, or its own
    attention (which puts no weight on padding); a token's state does not depend on its neighbours."""
    torch.manual_seed(0)
    ids, lengths = torch.randint(1, V, (2, 6)), torch.tensor([6, 3])
    ids[1, 3:] = 0
    model = ContextFreeClassifier(V, 2, embed_dim=5, hidden_dim=4)
    w = torch.softmax(torch.randn(2, 6), -1) * (torch.arange(6) < lengths[:, None])
    logits, used = model(ids, lengths, w)
    h = torch.tanh(model.token(model.embed(ids)))
    torch.testing.assert_close(logits, model.fc((w[..., None] * h).sum(1)))
    _, even = model(ids, lengths)
    torch.testing.assert_close(even[1], torch.tensor([1 / 3] * 3 + [0.0] * 3))
    own = ContextFreeClassifier(V, 2, embed_dim=5, hidden_dim=4, learned=True)
    _, mine = own(ids, lengths)
    assert torch.allclose(mine.sum(-1), torch.ones(2)) and (mine[1, 3:] == 0).all()
    swapped = ids.clone()
    swapped[0, 1] = (ids[0, 1] % (V - 1)) + 1  # another word next to token 0 leaves token 0's state as it was
    h2 = torch.tanh(model.token(model.embed(swapped)))
    torch.testing.assert_close(h2[0, 0], h[0, 0])


# (the steps log, which needs a Trainer; a test of their losses does without one)
@pytest.mark.filterwarnings("ignore:You are trying to `self.log\\(\\)`")
def test_the_guided_losses_are_the_tests_definitions():
    """Adversarial: mean over the batch of TVD(student, base) - lambda KL(student's weights || base's); diagnostic
    with frozen weights pools with the base's own weights (JSD 0 from them)."""
    torch.manual_seed(1)
    base = net(V, 2, embed_dim=6, hidden_dim=4).eval()
    student = net(V, 2, embed_dim=6, hidden_dim=4)
    ids, lengths, y = torch.randint(1, V, (3, 7)), torch.tensor([7, 5, 2]), torch.tensor([0, 1, 1])
    for i, n in enumerate(lengths):
        ids[i, n:] = 0
    module = GuidedModule(base, student, "adversarial", lam=0.3)
    student.eval()  # (no dropout: the same numbers twice)
    loss = module.training_step((ids, lengths, y), 0).detach()
    logits, w = student(ids, lengths)
    with torch.no_grad():
        base_logits, base_w = base(ids, lengths)
    tvd = 0.5 * (logits.softmax(-1) - base_logits.softmax(-1)).abs().sum(-1)
    kl = [(w[i, :n] * (w[i, :n].log() - base_w[i, :n].log())).sum() for i, n in enumerate(lengths)]
    assert float(loss) == pytest.approx(float((tvd - 0.3 * torch.stack(kl)).mean().detach()), abs=1e-5)
    free = ContextFreeClassifier(V, 2, embed_dim=6, hidden_dim=4)
    diag = GuidedModule(base, free, "diagnostic", "frozen")
    diag.test_step((ids, lengths, y), 0)
    assert float(diag.outputs["jsd"][0].abs().max()) < 1e-6
    # guided by another model's weights (an adversary's): it pools with those, their JSD from the base's apart
    by_student = GuidedModule(base, free, "diagnostic", "frozen", source=student)
    by_student.test_step((ids, lengths, y), 0)
    with torch.no_grad():
        _, student_w = student(ids, lengths)
        pooled, _ = free(ids, lengths, student_w)
    assert torch.equal(by_student.outputs["correct"][0], pooled.argmax(-1) == y)
    for i, n in enumerate(lengths):
        p, q = student_w[i, :n].double(), base_w[i, :n].double()
        m = (p + q) / 2
        want = 0.5 * (p * (p / m).log()).sum() + 0.5 * (q * (q / m).log()).sum()
        assert float(by_student.outputs["jsd"][0][i]) == pytest.approx(float(want), abs=1e-5)
    logits, _ = free(ids, lengths, base_w)
    assert float(diag.training_step((ids, lengths, y), 0).detach()) == pytest.approx(
        float(torch.nn.functional.cross_entropy(logits, y).detach()), abs=1e-6
    )


def compose_tests(overrides):
    return compose_cfg(overrides, "attention_tests")


@pytest.mark.slow  # (seven short trainings)
def test_attention_tests_command_on_a_tiny_run(tiny_run, tmp_path, capsys, caplog):
    import logging

    base = [f"ckpt={tiny_run}", f"paths.cache_dir={tmp_path / 'cache'}", "epochs=2", "num_threads=1"]
    caplog.set_level(logging.INFO)
    diag = attention_tests(compose_tests([*base, "test=diagnostic", f"output={tmp_path / 'd'}"]))
    assert not any("Tip:" in r.getMessage() or "GPU available" in r.getMessage() for r in caplog.records)
    saved = json.loads((tmp_path / "d" / "diagnostic.json").read_text())
    assert set(saved["weights"]) == {"uniform", "learned", "frozen"} and saved == json.loads(json.dumps(diag))
    assert saved["weights"]["frozen"]["jsd_from_base"] < 1e-6 < saved["weights"]["uniform"]["jsd_from_base"]
    eval_overrides = [f"ckpt={tiny_run}", f"output={tmp_path / 'ev.json'}", f"paths.cache_dir={tmp_path / 'cache'}"]
    ev = evaluate(compose_cfg(eval_overrides, "eval"))
    for v in saved["weights"].values():  # the classifier's own test rows, and its own accuracy on them
        assert v["base_accuracy"] == pytest.approx(ev["accuracy"]) and v["test_rows"] == ev["reviews"]
    assert "| frozen |" in (tmp_path / "d" / "diagnostic.md").read_text() and "| uniform |" in capsys.readouterr().out
    # sized by the user: seeded samples of the test (and validation) and training rows, the time said first
    caplog.clear()
    small = attention_tests(compose_tests([*base, "reviews=5", "train_reviews=16", f"output={tmp_path / 's'}"]))
    assert {v["test_rows"] for v in small["weights"].values()} == {5}
    said = [r.getMessage() for r in caplog.records]
    estimate = next(i for i, m in enumerate(said) if "tested on 5 rows: about " in m)
    assert estimate < next(i for i, m in enumerate(said) if "the context-free model with uniform" in m)
    assert any(m.startswith("training: 16 of the run's ") for m in said), said
    # the time left, at the pace of the models done
    assert [m.split(" in ")[0] for m in said if " models done in " in m] == [
        "diagnostic: 1 of 3 models done",
        "diagnostic: 2 of 3 models done",
    ]
    adv = attention_tests(compose_tests([*base, "test=adversarial", "lambdas=[0,10]", f"output={tmp_path / 'a'}"]))
    low, high = adv["lambdas"]
    assert (low["lambda"], high["lambda"]) == (0.0, 10.0) and high["jsd_from_base"] > low["jsd_from_base"]
    # the diagnostic's model guided by each adversary: it pooled with that adversary's weights, which are as far
    # from the classifier's as the adversary measured them
    for run in (low, high):
        assert run["diagnostic"]["jsd_from_base"] == pytest.approx(run["jsd_from_base"], abs=1e-5)
        assert run["diagnostic"]["test_rows"] == run["test_rows"] and 0 <= run["diagnostic"]["accuracy"] <= 1
    assert "the diagnostic with its weights" in (tmp_path / "a" / "adversarial.md").read_text()
    assert (tmp_path / "a" / "adversarial_training.png").stat().st_size > 5_000


def test_attention_tests_bad_values_are_one_line_before_any_work(tiny_run, tmp_path):
    base = [f"ckpt={tiny_run}", f"output={tmp_path / 'o'}"]
    for given, message in (
        ("test=shap", r"test='shap'; allowed: diagnostic, adversarial"),
        ("lambdas=[0.1,-1]", r"lambdas: -1; allowed: numbers >= 0"),
        ("lambdas=[]", r"lambdas=\[\]: give at least one weight"),
        ("epochs=0", r"epochs=0"),
        ("reviews=0", r"reviews=0 must be a positive integer or null \(all\)"),
        ("train_reviews=many", r"train_reviews='many' must be a whole number or null"),
    ):
        with pytest.raises(AttnclfError, match=message):
            attention_tests(compose_tests([*base, given]))
    with pytest.raises(AttnclfError, match="give the checkpoint to test"):
        attention_tests(compose_tests([f"output={tmp_path / 'o'}"]))
    assert not (tmp_path / "o").exists()


def test_attention_tests_help_says_what_the_command_does_and_each_key(capsys, in_process):
    from dataclasses import fields

    from attnclf.commands import main
    from attnclf.commands.attention_tests import AttentionTestsConfig

    with pytest.raises(SystemExit) as e:
        main(["attention-tests", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith("Wiegreffe & Pinter's tests of a trained classifier's attention")
    said = {line.split()[0] for line in out.splitlines() if line.strip() and not line.startswith(" ")}
    assert {f.name for f in fields(AttentionTestsConfig)} - {"cache_dir"} <= said, said


@pytest.mark.parametrize("epochs,said", [(1, "1 epoch a model"), (2, "2 epochs a model")])
def test_the_report_counts_epochs_in_words(epochs, said):
    from attnclf.presentation.markdown import attention_tests_markdown

    one = {"accuracy": 0.8, "base_accuracy": 0.9, "tvd_from_base": 0.1, "jsd_from_base": 0.2, "test_rows": 5}
    r = {"test": "diagnostic", "attention": "dot", "checkpoint": "c", "epochs": epochs, "seed": 0}
    assert said in attention_tests_markdown({**r, "total_seconds": 3, "weights": {"uniform": one}})
