"""Every experiment file loads, validates and builds its run (without compiling it)."""

from pathlib import Path

import pytest
from conftest import REPO

from azjax import train
from azjax.config import load_config

EXPERIMENTS = sorted(p.name for p in (Path(REPO) / "experiments").glob("*.py"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_builds(name):
    config = load_config(str(Path(REPO) / "experiments" / name))
    assert config.name == Path(name).stem
    trainer = train.make_trainer(config, mesh=train.make_mesh(1))
    assert trainer.game.name.split("_")[0] in config.game
