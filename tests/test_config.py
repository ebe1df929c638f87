"""The configs and the settings read from them: every config in conf/ composes and the keys users rely on
exist; the classifier's typed settings (attnclf/settings/model.py): types checked by OmegaConf, ranges in one
place, handed down whole, saved nested in the checkpoint; checkpoints from before (flat) still load and
resume."""

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from helpers.config import CONF, compose_cfg, tiny_overrides
from omegaconf import OmegaConf

from attnclf.commands.train import train
from attnclf.errors import AttnclfError
from attnclf.settings.data import DataConfig
from attnclf.settings.lm import LMConfig
from attnclf.settings.model import ClassifierConfig, ModelConfig, classifier_config, setting_differences
from attnclf.settings.run import TrainRunConfig
from attnclf.settings.typed import typed
from attnclf.training.checkpoint import classifier_hparams, load_checkpoint
from attnclf.training.module import ClassifierModule


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.hidden_dim=abc", "model.hidden_dim='abc' must be a whole number"),
        ("optimizer.lr=fast", "optimizer.lr='fast' must be a number"),
        ("attention.scale=maybe", "attention.scale='maybe' must be true or false"),
        ("model.attention_dim=big", "model.attention_dim='big' must be a whole number or null"),
        ("+model.colour=red", "model.colour is not a setting of model; allowed: embed_dim, hidden_dim,"),
        ("model.rnn_kernel=cudnn", "model.rnn_kernel='cudnn'; allowed: auto, concurrent, padded, packed"),
        ("optimizer.schedule=linear", "optimizer.schedule='linear'; allowed: cosine, constant"),
        ("model.dropout=1", "model.dropout=1 must be in [0, 1)"),
        ("model.embed_dropout=1", "model.embed_dropout=1 must be in [0, 1)"),
        ("model.embed_dropout=-0.5", "model.embed_dropout=-0.5 must be in [0, 1)"),
        ("optimizer.encoder_lr_scale=0", "optimizer.encoder_lr_scale=0 must be in (0, 1]"),
        ("optimizer.encoder_lr_scale=2", "optimizer.encoder_lr_scale=2 must be in (0, 1]"),
        ("optimizer.class_weights=inverse", "optimizer.class_weights='inverse'; allowed: none, balanced"),
        ("optimizer.freeze_encoder_epochs=-1", "optimizer.freeze_encoder_epochs=-1 must be a whole number >= 0"),
        ("optimizer.freeze_encoder_epochs=half", "optimizer.freeze_encoder_epochs='half' must be a whole number"),
        (
            "regularizer=virtual_adversarial regularizer.unlabeled_batch_size=0",
            "regularizer.unlabeled_batch_size=0 must be a positive integer",
        ),
    ],
)
def test_a_value_of_the_wrong_type_or_range_is_one_line_before_any_data_work(override, message, tmp_path):
    cfg = compose_cfg(["data.path=/no/such/data", f"paths.output_dir={tmp_path}", "logger=none", *override.split()])
    with pytest.raises(AttnclfError) as e:
        train(cfg)
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_every_flat_regularizer_key_of_an_old_checkpoint_is_read():
    """A checkpoint from before the nesting holds regularizer_epsilon, regularizer_weight, regularizer_xi:
    each is read, none replaced by today's default (an old VAT run resumes with its own xi)."""
    flat = {
        "vocab_size": 50,
        "num_classes": 2,
        "attention": "dot",
        "regularizer": "virtual_adversarial",
        "regularizer_epsilon": 0.05,
        "regularizer_weight": 0.5,
        "regularizer_xi": 0.004,
    }
    reg = classifier_hparams(flat)["regularizer"]
    assert (reg["name"], reg["epsilon"], reg["weight"], reg["xi"]) == ("virtual_adversarial", 0.05, 0.5, 0.004)
    assert ClassifierModule(**classifier_hparams(flat)).config.regularizer.xi == 0.004


def written_again(written: dict, defaults: dict, prefix: str = "") -> list[str]:
    """The keys of a config file's `written` node set to the default they start from."""
    again = []
    for key, value in written.items():
        default = defaults.get(key, object())
        if isinstance(value, dict) and isinstance(default, dict):
            again += written_again(value, default, f"{prefix}{key}.")
        elif value == default:
            again.append(f"{prefix}{key}")
    return again


def test_each_default_is_written_once_and_the_configs_compose_to_the_dataclasses():
    """Every file of conf/ that starts from a dataclass's defaults (`/attnclf_defaults/<name>@<package>` in its
    defaults list, attnclf/settings/defaults.py) writes only what differs: a key set to its default there is a
    default written twice. And every group and command starts so."""
    from attnclf.commands import attention_tests, eval, faithfulness  # noqa: F401  (they store their nodes)
    from attnclf.settings.defaults import DEFAULTS, stored_defaults

    twice, starts = [], set()
    for path in sorted(Path(CONF).rglob("*.yaml")):
        written = OmegaConf.to_container(OmegaConf.load(path))
        for entry in written.get("defaults", []):
            if isinstance(entry, str) and entry.startswith("/attnclf_defaults/"):
                name, package = entry.removeprefix("/attnclf_defaults/").split("@")
                starts.add(name)
                node = written if package == "_here_" else written.get(package, {})
                twice += [f"{path.name}: {key}" for key in written_again(node, stored_defaults(name))]
    assert twice == []
    assert starts == {*DEFAULTS, "eval", "faithfulness", "attention_tests"}
    cfg = compose_cfg(["paths.output_dir=/tmp/x"])
    assert classifier_config(cfg) == ClassifierConfig()
    assert typed(DataConfig, cfg.data, "data") == DataConfig(cache_dir=cfg.paths.cache_dir)
    assert typed(TrainRunConfig, {k: cfg[k] for k in stored_defaults("train")}, "") == TrainRunConfig()
    vat = classifier_config(compose_cfg(["regularizer=virtual_adversarial", "paths.output_dir=/tmp/x"]))
    assert vat.regularizer.name == "virtual_adversarial" and vat.regularizer.unlabeled_split == "unsupervised"
    assert typed(LMConfig, compose_cfg([], "pretrain").lm, "lm") == LMConfig()
    faith = compose_cfg(["ckpt=x"], "faithfulness")
    assert faith.data.split == "test" and faith.data.path is None and faith.rationales.spans_column == "rationale"


def test_the_module_saves_its_settings_nested_and_reads_the_flat_ones_of_older_checkpoints():
    config = ClassifierConfig(attention="additive", model=ModelConfig(embed_dim=8, hidden_dim=8, dropout=0.1))
    module = ClassifierModule(50, 3, **config.as_dict())
    hp = dict(module.hparams)
    assert hp["kind"] == "classifier" and hp["vocab_size"] == 50 and hp["num_classes"] == 3
    assert hp["model"]["hidden_dim"] == 8 and hp["optimizer"]["lr"] == 2e-3 and hp["regularizer"]["name"] == "none"
    assert module.config == config  # (handed down whole)
    # a checkpoint from before: flat, and without the settings added since (their defaults of that time)
    flat = {
        "vocab_size": 50,
        "num_classes": 3,
        "attention": "additive",
        "embed_dim": 8,
        "hidden_dim": 8,
        "dropout": 0.1,
        "lr": 1e-2,
        "regularizer": "adversarial",
        "regularizer_epsilon": 0.05,
    }
    nested = classifier_hparams(flat)
    assert (
        nested["optimizer"]["lr"] == 1e-2
        and nested["regularizer"] == {**nested["regularizer"], "name": "adversarial", "epsilon": 0.05}
        and nested["model"]["embeddings"] == "random"
    )
    old = ClassifierModule(**nested)
    assert old.config.regularizer.epsilon == 0.05 and old.config.optimizer.lr == 1e-2
    old.load_state_dict(module.state_dict())  # (the same network)
    ids = torch.tensor([[5, 6, 7]])
    torch.testing.assert_close(old.eval()(ids, torch.tensor([3]))[0], module.eval()(ids, torch.tensor([3]))[0])
    # and a resumed run compares either form with its own settings, key by config key
    now = ClassifierConfig(attention="additive", model=ModelConfig(embed_dim=8, hidden_dim=16, dropout=0.1))
    assert setting_differences(nested, now) == {
        "model.hidden_dim": (8, 16),
        "model.embeddings": ("random", "word2vec"),
        "optimizer.lr": (1e-2, 2e-3),
        "regularizer": ("adversarial", "none"),
        "regularizer.epsilon": (0.05, 0.02),
    }
    assert setting_differences(hp, config) == {}
    assert "model.rnn_kernel" not in setting_differences(
        hp,
        ClassifierConfig(  # (how it runs, not what it is)
            attention="additive", model=ModelConfig(embed_dim=8, hidden_dim=8, dropout=0.1, rnn_kernel="padded")
        ),
    )


def test_a_run_records_every_setting_by_its_config_key(tiny_imdb, tmp_path, caplog):
    from helpers.files import strict_json

    caplog.set_level(logging.INFO)
    train(
        compose_cfg(
            [
                "experiment=smoke",
                "logger=none",
                "model.embeddings=random",
                *tiny_overrides(tiny_imdb, tmp_path),
                "data.batch_size=auto",
            ]
        )
    )
    hparams = strict_json(tmp_path / "metrics.json")["hparams"]
    assert hparams["model.hidden_dim"] == 16 and hparams["optimizer.lr"] == 2e-3 and hparams["seed"] == 42
    # data.batch_size=auto: the batch it chose for the few training rows, and why, in the log
    assert hparams["regularizer.name"] == "none" and hparams["data.batch_size"] == 16
    assert "data.batch_size=auto: 16 (" in caplog.text and "fewer than 125" in caplog.text
    assert set(hparams) >= {f"model.{k}" for k in ModelConfig().__dataclass_fields__}


def test_an_lstm_run_is_an_lstm_where_it_is_loaded(tiny_imdb, tmp_path):
    """model.rnn=lstm trains Jain & Wallace's cell, records it, and the checkpoint is rebuilt with it."""
    from torch import nn

    from attnclf.inference.trained import TrainedClassifier

    train(
        compose_cfg(
            [
                "experiment=smoke",
                "logger=none",
                "model.embeddings=random",
                "model.rnn=lstm",
                *tiny_overrides(tiny_imdb, tmp_path),
            ]
        )
    )
    assert json.loads((tmp_path / "metrics.json").read_text())["hparams"]["model.rnn"] == "lstm"
    encoder = TrainedClassifier.from_checkpoint(tmp_path).module.model.encoder
    assert all(type(m) is nn.LSTM for m in (*encoder.fwd, *encoder.bwd))


def test_a_settings_check_only_checks(tiny_run, tmp_path, monkeypatch):
    """Each command's settings as their builders make them (normalised, then checked): every check(), nested
    ones included, leaves its object as it found it (a check that also rewrote a value would hide which
    form was checked)."""
    import copy
    import inspect
    from dataclasses import fields, is_dataclass

    from attnclf.commands.attention_tests import attention_tests_settings
    from attnclf.commands.eval import eval_settings
    from attnclf.commands.faithfulness import faithfulness_settings
    from attnclf.commands.train import train_settings
    from attnclf.settings.serve import serve_settings

    run = [f"ckpt={tiny_run}", f"paths.output_dir={tmp_path}"]

    def build() -> list:
        built = [train_settings(compose_cfg([f"paths.output_dir={tmp_path}"]))]
        built += [
            eval_settings(compose_cfg(run, "eval")),
            faithfulness_settings(compose_cfg(run, "faithfulness")),
            attention_tests_settings(compose_cfg(run, "attention_tests")),
            serve_settings(compose_cfg([*run, "names=[a]"], "serve")),
        ]
        return built

    def classes(obj):  # the object's class and every nested settings class
        yield type(obj)
        for f in fields(obj):
            if is_dataclass(getattr(obj, f.name)):
                yield from classes(getattr(obj, f.name))

    checked = {cls for settings in build() for cls in classes(settings) if hasattr(cls, "check")}
    seen = []
    for cls in checked:
        if inspect.signature(cls.check).parameters.keys() != {"self"}:  # (LMConfig's takes the data)
            continue

        def only_checks(self, _check=cls.check):
            before = copy.deepcopy(self)
            _check(self)
            assert self == before, type(self).__name__
            seen.append(type(self).__name__)

        monkeypatch.setattr(cls, "check", only_checks)
    build()
    assert {"ServeConfig", "EvalConfig", "FaithfulnessConfig", "AttentionTestsConfig", "ModelConfig"} <= set(seen)


OPTIONS = sorted((p.parent.name, p.stem) for p in Path(CONF).glob("*/*.yaml") if p.parent.name != "hydra")


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_config_composes(group, option):
    cfg = compose_cfg([f"{group}={option}", "paths.output_dir=/tmp/x"])
    OmegaConf.to_container(cfg, resolve=True)


ROOT = Path(CONF).parent
README = (ROOT / "README.md").read_text()
CONFIG_DOC = (ROOT / "docs" / "configuration.md").read_text()
GROUPS = {p.name for p in Path(CONF).iterdir() if p.is_dir()}


def readme_table() -> list[tuple[str, str]]:
    """(key or group, documented default) of each row of docs/configuration.md's table of keys."""
    section = CONFIG_DOC.split("## Keys", 1)[1].split("\n## ", 1)[0]
    pairs = []
    for line in section.splitlines()[3:]:
        if not line.startswith("| `"):
            continue
        keys_cell, default_cell = line.split(" | ")[:2]
        keys = re.findall(r"`([^`]+)`", keys_cell)
        defaults = [d.strip(" `") for d in default_cell.split(", ")]
        assert len(keys) == len(defaults), line
        pairs += zip(keys, defaults, strict=True)
    return pairs


def same(value, documented: str) -> bool:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value] == documented
    if isinstance(value, (int, float)):
        return float(documented) == value
    return str(value) == documented


def test_configuration_table_keys_and_defaults():
    """Every row of docs/configuration.md's table: the key exists with the documented default; a group's default
    option is the one train.yaml chooses."""
    cfg = compose_cfg(["paths.output_dir=/tmp/x"])
    defaults = OmegaConf.to_container(OmegaConf.load(Path(CONF) / "train.yaml").defaults)
    chosen = {k: v for d in defaults if isinstance(d, dict) for k, v in d.items()}
    rows = readme_table()
    assert len(rows) >= 20
    for key, documented in rows:
        if key in GROUPS:
            assert chosen[key] == documented and (Path(CONF) / key / f"{documented}.yaml").is_file(), key
            continue
        value = OmegaConf.select(cfg, key, default="MISSING")
        assert value != "MISSING", key
        assert same(value, documented), (key, value, documented)


def test_each_mechanisms_keys_and_defaults_are_its_yamls_and_its_classs():
    """docs/configuration.md's table of mechanisms: each row's keys are its YAML's, with the documented defaults,
    and the same defaults as its class's constructor (a library caller builds what a run builds)."""
    from attnclf.models.registry import attention_class, own_keys
    from attnclf.settings.attention import attention_node, package_attentions

    section = CONFIG_DOC.split("## Attention mechanisms", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `") and "attention." in line]
    documented = {}
    for row in rows:
        name = row[0].strip("| `")
        keys = [k.removeprefix("attention.") for k in re.findall(r"`([^`]+)`", row[1])]
        documented[name] = dict(zip(keys, [d.strip() for d in row[2].split(", ")], strict=True))
    assert sorted(documented) == package_attentions()
    for name, keys in documented.items():
        node = attention_node(name)
        cls = attention_class(node.pop("_target_"))
        assert sorted(node) == sorted(keys) and all(same(node[k], v) for k, v in keys.items()), name
        assert own_keys(cls) == node, name


def test_each_package_mechanisms_name_is_its_yamls_without_importing_it():
    """A run's mechanism is named from conf/attention/ without importing its class (a refusal comes before
    torch): that name is the one its class gives (attention_name), and a class of the user's own is asked."""
    from attnclf.models.registry import attention_class, attention_name
    from attnclf.settings.attention import name_of_class, package_attentions, package_names

    names = package_names()
    assert sorted(names.values()) == package_attentions()
    for target, name in names.items():
        assert attention_name(attention_class(target)) == name == name_of_class(target), target
    # anything else is imported and asked: a class that is not an attention is refused by name
    with pytest.raises(AttnclfError, match="torch.nn.Identity"):
        name_of_class("torch.nn.Identity")
    probe = (
        "import sys; from attnclf.settings.attention import name_of_class, package_names; "
        "print([name_of_class(t) for t in package_names()], 'torch' in sys.modules)"
    )
    said = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert said.strip() == f"{list(names.values())} False"


# a key's line in a command's --help (hydra.help.template), and the default it states: "(default 64)",
# "(default 2000; null: all)", "(default 127.0.0.1: this machine only)", "cpu (default) or cuda"
HELP_DEFAULT = re.compile(r"^(\S+) +.*?\(default ([^;:)<]+?)[;:)]", re.MULTILINE)
HELP_DEFAULT_BEFORE = re.compile(r"^(\S+) +(\S+) \(default\)", re.MULTILINE)


@pytest.mark.parametrize("command", ["train", "pretrain", "eval", "faithfulness", "attention_tests", "serve"])
def test_each_help_states_the_defaults_the_config_composes(command):
    """`attnclf <command> --help` states a key's default as a copy of its dataclass's: checked here, so that
    neither drifts."""
    cfg = compose_cfg(["paths.output_dir=/tmp/x"], command)
    template = OmegaConf.load(Path(CONF) / f"{command}.yaml").hydra.help.template
    stated = HELP_DEFAULT.findall(template) + HELP_DEFAULT_BEFORE.findall(template)
    assert len(stated) >= 3
    for key, text in stated:
        value = OmegaConf.select(cfg, key, default="MISSING")
        if key in GROUPS or OmegaConf.is_config(value):
            continue
        assert value != "MISSING", key
        assert value == yaml.safe_load(text), (command, key, value, text)


def test_every_dotted_key_the_readme_and_docs_name_exists():
    cfg = compose_cfg(["paths.output_dir=/tmp/x"])
    pages = [README] + [p.read_text() for p in (ROOT / "docs").glob("*.md")]
    named = {
        found
        for page in pages
        for found in re.findall(
            r"`((?:data|model|optimizer|trainer|callbacks|paths|word2vec|regularizer)\.[a-z_.]*[a-z_])(?:=([^` ]*))?`",
            page,
        )
    }
    assert len(named) >= 25
    eval_cfg = compose_cfg(["paths.output_dir=/tmp/x"], "eval")  # (data.split is eval's)
    in_a_config = (cfg, compose_cfg(["regularizer=virtual_adversarial", "paths.output_dir=/tmp/x"]), eval_cfg)
    for key, _ in named:
        if key.endswith((".py", ".json", ".safetensors")):  # (a file: data.py, data.json, model.safetensors)
            continue
        assert any(OmegaConf.select(c, key, default="MISSING") != "MISSING" for c in in_a_config), key
    assert cfg.callbacks.step_checkpoint.every_n_train_steps == 200 and cfg.trainer.max_epochs == 3
    assert cfg.attention._target_.endswith(".DotAttention") and cfg.data.path == "stanfordnlp/imdb"
    additive = compose_cfg(["attention=additive", "paths.output_dir=/tmp/x"]).attention
    assert additive == {"_target_": "attnclf.models.attention.AdditiveAttention", "init": "xavier"}
    assert compose_cfg(["trainer=gpu", "paths.output_dir=/tmp/x"]).trainer.precision == "bf16-mixed"


def test_eval_config_composes():
    cfg = compose_cfg(["ckpt=x.ckpt", "paths.output_dir=/tmp/x"], "eval")
    assert cfg.data.split == "test" and cfg.data.path is None  # (null: the run's own data, its data.json)


def test_experiment_pretrained_is_the_measured_best_setting():
    """word2vec start + adversarial training (docs/results.md, "IMDb, other starts"); each part can be overridden."""
    cfg = compose_cfg(["experiment=pretrained", "paths.output_dir=/tmp/x"])
    assert cfg.model.embeddings == "word2vec" and cfg.regularizer.name == "adversarial"
    assert (
        compose_cfg(["experiment=pretrained", "regularizer=none", "paths.output_dir=/tmp/x"]).regularizer.name == "none"
    )


def test_experiment_pretrained_lm_is_pretrained_with_the_measured_pretraining():
    """experiment=pretrained, started from language models on its word2vec vectors kept frozen, 2 epochs, seed 1
    (docs/archive/experiment-log.md, "With the pretrained encoder on top"); its pretraining settings pass the check."""
    from attnclf.commands.train import train_settings

    cfg = compose_cfg(["experiment=pretrained_lm", "paths.output_dir=/tmp/x"])
    base = compose_cfg(["experiment=pretrained", "paths.output_dir=/tmp/x"])
    assert cfg.model.init_from == "pretrain" and cfg.regularizer == base.regularizer
    assert (cfg.model.embeddings, cfg.word2vec, cfg.trainer) == (base.model.embeddings, base.word2vec, base.trainer)
    settings = train_settings(cfg)
    lm = settings.pretraining
    assert (lm.model.embeddings, lm.model.freeze_embeddings, lm.trainer.max_epochs) == ("word2vec", True, 2)
    assert lm.run.seed == 1
    assert lm.word2vec == settings.word2vec  # the vectors experiment=pretrained starts from


def test_the_readme_is_short_and_names_only_paths_a_user_has():
    """A README a user scans in five minutes; no command anywhere a user reads points at the development
    machines' ../shared (CONTRIBUTING.md names it, for contributors)."""
    assert len(README.splitlines()) <= 250
    for path in [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "conf").rglob("*.yaml"),
        *(p for p in (ROOT / "scripts").glob("*") if p.is_file()),
    ]:
        assert "../shared" not in path.read_text(), path


def test_the_old_attention_keys_of_the_model_are_read_as_the_attentions_with_a_note(caplog):
    """model.attention_scale (dot's) and model.attention_init (additive's) are attention.scale and attention.init
    now: a command line or config of before still sets them, said in one line; a mechanism that takes no such
    key refuses it in one line."""
    with caplog.at_level(logging.WARNING):
        dot = classifier_config(compose_cfg(["model.attention_scale=false", "paths.output_dir=/tmp/x"]))
        additive = classifier_config(
            compose_cfg(["attention=additive", "model.attention_init=default", "paths.output_dir=/tmp/x"])
        )
    assert dot.attention.keys == {"scale": False} and additive.attention.keys == {"init": "default"}
    assert "model.attention_scale is now attention.scale: read as attention.scale=False" in caplog.text
    with pytest.raises(AttnclfError, match="attention.init: attnclf.models.attention.DotAttention takes no such"):
        classifier_config(compose_cfg(["model.attention_init=default", "paths.output_dir=/tmp/x"]))


def test_the_old_key_model_gru_kernel_is_read_as_model_rnn_kernel_with_a_note(caplog):
    with caplog.at_level(logging.WARNING):
        config = classifier_config(compose_cfg(["model.gru_kernel=padded", "paths.output_dir=/tmp/x"]))
    assert config.model.rnn_kernel == "padded"
    assert "model.gru_kernel is now model.rnn_kernel: read as model.rnn_kernel=padded" in caplog.text
    assert classifier_config(compose_cfg(["paths.output_dir=/tmp/x"])).model.rnn_kernel == "auto"


def load_checkpoint_of(folder, ckpt: dict, hparams: dict) -> dict:
    """The hyperparameters load_checkpoint reads from `ckpt` saved with `hparams`."""
    path = folder / "form.ckpt"
    torch.save({**ckpt, "hyper_parameters": hparams}, path)
    return load_checkpoint(path)["hyper_parameters"]


def test_a_checkpoint_of_every_form_written_loads_as_todays_and_predicts_the_same(tiny_run, tmp_path):
    """As this release writes it; as the release before (model.gru_kernel); as the releases before the
    nesting (flat, and `pack` before the kernel was a choice): each reads as today's form, and the
    classifier it makes predicts as today's does."""
    from attnclf.inference.trained import TrainedClassifier

    best = json.loads((tiny_run / "metrics.json").read_text())["best_checkpoint"]
    ckpt = torch.load(best, weights_only=True)
    hp = ckpt["hyper_parameters"]
    # before attentions were classes: the attention by its name, its keys among the model's
    model = {("gru_kernel" if k == "rnn_kernel" else k): v for k, v in hp["model"].items()}
    model.update(attention_scale=True, attention_init="xavier")
    named = {k: v for k, v in hp.items() if k not in ("attention_class", "attention_keys")}
    flat = {
        **{k: hp[k] for k in ("vocab_size", "num_classes", "attention")},
        **model,
        **hp["optimizer"],
        "regularizer": "none",
        "pack": False,
    }
    del flat["gru_kernel"]
    texts = ["a wonderful film, truly great", "dull and boring, a waste of time"]
    today = [q for p in TrainedClassifier.from_checkpoint(best).predict(texts) for q in p.probs]
    unscaled = load_checkpoint_of(tmp_path, ckpt, {**named, "model": {**model, "attention_scale": False}})
    assert (unscaled["attention_class"], unscaled["attention_keys"]) == (hp["attention_class"], {"scale": False})
    for name, form in (("today", hp), ("before", {**named, "model": model}), ("flat", flat)):
        path = tmp_path / "checkpoints" / f"{name}.ckpt"
        path.parent.mkdir(exist_ok=True)
        (tmp_path / "vocab.json").write_bytes((tiny_run / "vocab.json").read_bytes())
        torch.save({**ckpt, "hyper_parameters": form}, path)
        read = load_checkpoint(path)["hyper_parameters"]
        mechanism = (read["attention"], read["attention_class"], read["attention_keys"])
        assert mechanism == ("dot", "attnclf.models.attention.DotAttention", {"scale": True}), name
        assert read["model"]["rnn_kernel"] == ("padded" if name == "flat" else hp["model"]["rnn_kernel"])
        assert "gru_kernel" not in read["model"] and read["optimizer"] == hp["optimizer"], name
        got = [q for p in TrainedClassifier.from_checkpoint(path).predict(texts) for q in p.probs]
        assert got == pytest.approx(today), name
