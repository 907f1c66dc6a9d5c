"""Every experiment file loads, validates and builds its run (without compiling it); names,
files, the old `experiments/` and `sweeps/` spellings and saved configs resolve."""

import json
from pathlib import Path

import pytest
from conftest import tiny_config

from azjax import config as config_lib
from azjax.apps.sweeps import space as space_lib
from azjax.config import build, load_config
from azjax.types import UserError

EXPERIMENTS = config_lib.experiment_names()


def test_the_experiments_and_spaces_ship_in_the_package():
    import azjax.experiments

    # The repository's experiments/, installed as azjax.experiments.
    assert config_lib.EXPERIMENTS_DIR == Path(azjax.experiments.__file__).resolve().parent
    assert {"connect_four", "tic_tac_toe", "othello", "go_9x9", "xiangqi"} <= set(EXPERIMENTS)
    assert "__init__" not in EXPERIMENTS
    assert space_lib.space_names() == ["connect_four", "connect_four_lr", "tic_tac_toe"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_builds(name):
    config = load_config(str(config_lib.EXPERIMENTS_DIR / f"{name}.py"))
    assert config.name == name
    pipeline = build.make_pipeline(config)
    assert pipeline.game.name.split("_")[0] in config.game


VARIANTS = [
    f"{name}:{variant}"
    for name in EXPERIMENTS
    for variant in getattr(
        config_lib.load_module(config_lib.EXPERIMENTS_DIR / f"{name}.py", "experiment"),
        "VARIANTS",
        (),
    )
]


def test_the_cpu_variants_are_there():
    assert {"othello:cpu6", "othello:cpu", "gomoku_8x8:cpu", "go_9x9:cpu", "xiangqi:cpu"} <= set(
        VARIANTS
    )


@pytest.mark.parametrize("spelling", VARIANTS)
def test_every_variant_builds(spelling):
    config = load_config(spelling)
    assert config.name == spelling.replace(":", "_")
    build.make_pipeline(config)
    with pytest.raises(UserError, match="has variants"):
        load_config(spelling.split(":")[0] + ":no_such_variant")


@pytest.mark.parametrize(
    "spelling",
    [
        "tic_tac_toe",
        "tic_tac_toe.py",
        "experiments/tic_tac_toe.py",
        "../experiments/tic_tac_toe.py",
    ],
)
def test_names_and_the_old_spelling_resolve_from_any_folder(spelling, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no experiments/ here
    assert config_lib.find_experiment(spelling) == config_lib.EXPERIMENTS_DIR / "tic_tac_toe.py"
    assert load_config(spelling).name == "tic_tac_toe"
    variant = spelling.replace("tic_tac_toe", "othello") + ":cpu6"
    assert load_config(variant).game == "othello_6x6"


def test_a_file_in_the_working_folder_comes_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tic_tac_toe.py").write_text(
        "from azjax.config import base_config\n\n"
        "def get_config():\n"
        "    config = base_config()\n"
        "    config.name = 'mine'\n"
        "    return config\n"
    )
    assert load_config("tic_tac_toe").name == "mine"
    assert load_config("experiments/tic_tac_toe.py").name == "mine"
    assert load_config(str(config_lib.EXPERIMENTS_DIR / "tic_tac_toe.py")).name == "tic_tac_toe"


def test_spaces_resolve_by_name_and_old_spelling(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    packaged = space_lib.SPACES_DIR / "tic_tac_toe.py"
    for spelling in ("tic_tac_toe", "sweeps/tic_tac_toe.py", str(packaged)):
        assert space_lib.find_space(spelling) == packaged
    assert space_lib.load_space("tic_tac_toe").sampler == "random"
    with pytest.raises(UserError, match=r"space file 'nope' not found.*connect_four_lr"):
        space_lib.load_space("nope")


def test_a_saved_config_loads_as_the_experiment(tmp_path):
    config = tiny_config()
    (tmp_path / "config.json").write_text(config_lib.to_json(config))
    for source in (tmp_path / "config.json", tmp_path):  # the file, or the run directory
        loaded = load_config(str(source))
        assert json.loads(config_lib.to_json(loaded)) == json.loads(config_lib.to_json(config))
    with pytest.raises(UserError, match="has no variants"):
        load_config(f"{tmp_path / 'config.json'}:cpu")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(UserError, match="is corrupt"):
        load_config(str(tmp_path / "broken.json"))


@pytest.mark.parametrize(
    "spelling, fragment",
    [
        ("nope", "experiment config 'nope' not found: no such file, nor one of azjax's"),
        ("experiments/nope.py", "connect_four, go_19x19"),
        ("some/folder/tic_tac_toe.py", "not found"),
    ],
)
def test_unknown_experiments_name_the_shipped_ones(spelling, fragment):
    with pytest.raises(UserError, match="not found") as error:
        load_config(spelling)
    assert fragment in str(error.value)


def test_a_file_that_is_not_python_is_refused(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(UserError, match="not a Python file"):
        load_config(str(text))
