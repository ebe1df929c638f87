"""Every config in conf/ composes, and the keys users rely on exist."""

import re
from pathlib import Path

import pytest
from conftest import CONF, compose_cfg
from omegaconf import OmegaConf

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
        if key in GROUPS and key != "attention":
            assert chosen[key] == documented and (Path(CONF) / key / f"{documented}.yaml").is_file(), key
            continue
        value = OmegaConf.select(cfg, key, default="MISSING")
        assert value != "MISSING", key
        assert same(value, documented), (key, value, documented)


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
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):  # (data.split is eval.py's)
        eval_cfg = compose(config_name="eval", overrides=["paths.output_dir=/tmp/x"])
    in_a_config = (cfg, compose_cfg(["regularizer=virtual_adversarial", "paths.output_dir=/tmp/x"]), eval_cfg)
    for key, _ in named:
        if key.endswith((".py", ".json")):  # (a file: data.py, data.json)
            continue
        assert any(OmegaConf.select(c, key, default="MISSING") != "MISSING" for c in in_a_config), key
    assert cfg.callbacks.step_checkpoint.every_n_train_steps == 200 and cfg.trainer.max_epochs == 3
    assert cfg.attention == "dot" and cfg.data.path == "stanfordnlp/imdb"
    assert compose_cfg(["attention=additive", "paths.output_dir=/tmp/x"]).attention == "additive"
    assert compose_cfg(["trainer=gpu", "paths.output_dir=/tmp/x"]).trainer.precision == "bf16-mixed"


def test_eval_config_composes():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="eval", overrides=["ckpt=x.ckpt", "paths.output_dir=/tmp/x"])
    assert cfg.data.split == "test" and cfg.data.path is None  # (null: the run's own data, its data.json)


def test_experiment_pretrained_is_the_measured_best_setting():
    """word2vec start + adversarial training (docs/results.md, section 7); each part can be overridden."""
    cfg = compose_cfg(["experiment=pretrained", "paths.output_dir=/tmp/x"])
    assert cfg.model.embeddings == "word2vec" and cfg.regularizer.name == "adversarial"
    assert (
        compose_cfg(["experiment=pretrained", "regularizer=none", "paths.output_dir=/tmp/x"]).regularizer.name == "none"
    )


def test_experiment_pretrained_lm_is_pretrained_with_the_measured_pretraining():
    """experiment=pretrained, started from language models on its word2vec vectors kept frozen, 2 epochs, seed 1
    (docs/archive/experiment-log.md, "With the pretrained encoder on top"); its pretraining settings pass the check."""
    from attnclf.settings.commands import train_settings

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
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "conf").rglob("*.yaml"),
                 *(ROOT / "scripts").glob("*")]:  # fmt: skip
        assert "../shared" not in path.read_text(), path
