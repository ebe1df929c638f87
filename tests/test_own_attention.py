"""Every attention the tool compares, in every command that compares them: the package's five and a class of
the user's own in a module outside the package (attention=custom attention._target_=my_attention.Cosine),
trained on the tiny data, then evaluated, asked, served, measured and reported side by side."""

import json
import sys

import pytest
import torch
from helpers.commands import attnclf_in_process
from helpers.config import compose_cfg, tiny_overrides

from attnclf.errors import AttnclfError

OWN = '''
import torch
from torch.nn import functional as F

from attnclf.models.attention import Attention


class Cosine(Attention):
    """The cosine of a projected query and each key, over a temperature."""

    def __init__(self, shape, temperature: float = 0.1):
        super().__init__(shape)
        self.temperature = temperature
        self.q = torch.nn.Linear(shape.query_dim, shape.key_dim)

    def scores(self, query, keys):
        q, k = F.normalize(self.q(query), dim=-1), F.normalize(keys, dim=-1)
        return q @ k.transpose(1, 2) / self.temperature  # (B, Tq, Tk)
'''
PACKAGE = ["dot", "additive", "general", "multihead", "structured"]
CHOICE = {name: [f"attention={name}"] for name in PACKAGE}
CHOICE["cosine"] = ["attention=custom", "attention._target_=my_attention.Cosine", "+attention.temperature=0.2"]


@pytest.fixture(scope="module")
def runs(tiny_imdb, tmp_path_factory):
    """{name: run folder} of a tiny run of each mechanism, under one folder (`root`), the user's module importable
    from its own folder as a user's run makes it (PYTHONPATH, or the folder it is run from)."""
    from attnclf.commands.train import train

    own = tmp_path_factory.mktemp("own")
    (own / "my_attention.py").write_text(OWN)
    root = tmp_path_factory.mktemp("runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(own))
        folders = {}
        for name, choice in CHOICE.items():
            folders[name] = root / f"{name}_s1"
            train(
                compose_cfg(
                    [
                        *choice,
                        "experiment=smoke",
                        "trainer.max_epochs=2",
                        "optimizer.lr=1e-2",
                        "logger=none",
                        "callbacks.rich_progress_bar=null",
                        "callbacks.attention_maps=null",
                        "seed=1",
                        *tiny_overrides(tiny_imdb, folders[name]),
                    ]
                )
            )
    sys.modules.pop("my_attention", None)
    return {"root": root, "own": own, **folders}


@pytest.fixture
def importable(runs, monkeypatch):
    monkeypatch.syspath_prepend(str(runs["own"]))


@pytest.mark.slow  # (six short trainings, shared by this file's tests)
def test_a_class_of_ones_own_trains_and_its_checkpoint_names_it(runs, importable):
    m = json.loads((runs["cosine"] / "metrics.json").read_text())
    assert m["attention"] == "cosine" and m["attention_class"] == "my_attention.Cosine" and 0 <= m["test/acc"] <= 1
    hp = torch.load(runs["cosine"] / "checkpoints" / "last.ckpt", weights_only=True)["hyper_parameters"]
    assert (hp["attention"], hp["attention_class"], hp["attention_keys"]) == (
        "cosine",
        "my_attention.Cosine",
        {"temperature": 0.2},
    )
    assert all(json.loads((runs[n] / "metrics.json").read_text())["attention"] == n for n in CHOICE)


@pytest.mark.slow  # (six short trainings, shared by this file's tests)
def test_where_its_module_cannot_be_imported_loading_says_which_to_make_importable(runs, monkeypatch):
    from attnclf.inference import TrainedClassifier

    monkeypatch.delitem(sys.modules, "my_attention", raising=False)
    with pytest.raises(AttnclfError) as e:
        TrainedClassifier.from_checkpoint(runs["cosine"])
    said = str(e.value)
    assert "\n" not in said and "this checkpoint's attention, cosine, is my_attention.Cosine" in said
    assert "module 'my_attention' cannot be imported here" in said and "PYTHONPATH" in said


@pytest.mark.slow  # (six short trainings, shared by this file's tests)
def test_it_is_evaluated_asked_and_measured_as_the_packages_are(runs, importable, tmp_path, monkeypatch, capsys):
    run = runs["cosine"]
    common = [f"paths.cache_dir={tmp_path}"]
    assert attnclf_in_process(["eval", f"ckpt={run}", *common, f"hydra.run.dir={tmp_path / 'e'}"], monkeypatch) == 0
    assert attnclf_in_process(["predict", f"ckpt={run}", "text=a wonderful film"], monkeypatch) == 0
    assert "'a wonderful film'\ttop: " in capsys.readouterr().out
    faith = ["faithfulness", f"ckpt={run}", *common, "reviews=10", "permutations=3", f"output={tmp_path / 'f'}"]
    assert attnclf_in_process(faith, monkeypatch) == 0
    assert json.loads((tmp_path / "f" / "faithfulness.json").read_text())["attention"] == "cosine"
    tests = ["attention-tests", f"ckpt={run}", *common, "epochs=1", f"output={tmp_path / 't'}"]
    assert attnclf_in_process(tests, monkeypatch) == 0
    assert json.loads((tmp_path / "t" / "diagnostic.json").read_text())["attention"] == "cosine"


@pytest.mark.slow  # (six short trainings, shared by this file's tests)
def test_six_attentions_served_reported_and_compared_side_by_side(runs, importable, tmp_path, monkeypatch, capsys):
    from fastapi.testclient import TestClient

    from attnclf.commands.serve import load_models
    from attnclf.serving.app import create_app
    from attnclf.settings.serve import ServeConfig

    s = ServeConfig(ckpt=[str(runs[n]) for n in CHOICE])
    s.normalize()
    s.check()
    with TestClient(create_app(load_models(s), s)) as client:
        assert client.get("/health").json()["models"] == list(CHOICE)
        text = "a wonderful film , really moving"
        said = {n: client.post("/explain", json={"text": text, "model": n}).json() for n in CHOICE}
        rows = {n: said[n]["rows"] for n in CHOICE}
        assert [len(r) for r in (rows["multihead"], rows["structured"])] == [4, 30]
        assert all(rows[n] is None for n in ("dot", "additive", "general", "cosine"))
        # each head's row over the words read, and the weights shown their mean
        n_words = len(said["multihead"]["tokens"])
        assert all(len(r) == n_words and sum(r) == pytest.approx(1, abs=1e-5) for r in rows["multihead"])
        mean = torch.tensor(rows["multihead"]).mean(0)
        torch.testing.assert_close(mean, torch.tensor(said["multihead"]["weights"]), atol=1e-6, rtol=1e-5)
        page = client.get("/", params={"text": text}).text
        assert all(f"data-model='{n}'" in page for n in CHOICE) and "mean of its 30 rows" in page
    # every pair of the six in report's table, and the six maps side by side
    assert attnclf_in_process(["report", str(runs["root"])], monkeypatch) == 0
    report = (runs["root"] / "report.md").read_text()
    assert "Holm-corrected over the 15 pairs compared" in report and "| dot | cosine | 1 |" in report
    out = tmp_path / "compare"
    argv = ["compare-attention", *(str(runs[n]) for n in CHOICE), "--data", str(runs["dot"]), "--n", "1"]
    capsys.readouterr()
    assert attnclf_in_process([*argv[:-4], "--texts", str(write_texts(tmp_path)), "--out", str(out)], monkeypatch) == 0
    html = (out / "compare.html").read_text()
    assert all(f"<b>{n}</b>" in html for n in CHOICE)


def without_pythonpath() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def write_texts(folder):
    path = folder / "texts.txt"
    path.write_text("a wonderful film , really moving\nthe plot was dull\n")
    return path


@pytest.mark.slow  # (a process of its own: the installed command, run from the user's folder)
def test_a_yaml_in_the_users_config_folder_picks_a_class_in_the_folder_it_is_run_from(tiny_imdb, tmp_path):
    """`attnclf train hydra.searchpath=[file://<their conf>] attention=cosine`, run from the folder holding
    my_attention.py (not on PYTHONPATH): the run is named by the mechanism and trained with the YAML's keys."""
    import subprocess

    (tmp_path / "my_attention.py").write_text(OWN)
    (tmp_path / "my_conf" / "attention").mkdir(parents=True)
    (tmp_path / "my_conf" / "attention" / "cosine.yaml").write_text("_target_: my_attention.Cosine\ntemperature: 0.3\n")
    overrides = [o for o in tiny_overrides(tiny_imdb, tmp_path / "run") if not o.startswith("paths.output_dir")]
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnclf",
            "train",
            f"hydra.searchpath=[file://{tmp_path / 'my_conf'}]",
            "attention=cosine",
            "experiment=smoke",
            "trainer.max_steps=2",
            "test=false",
            "logger=none",
            *overrides,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=without_pythonpath(),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    [run] = (tmp_path / "outputs" / "runs").iterdir()
    assert run.name.endswith("_cosine_s42")
    hp = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)["hyper_parameters"]
    assert hp["attention_class"] == "my_attention.Cosine" and hp["attention_keys"] == {"temperature": 0.3}
