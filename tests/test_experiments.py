"""Every experiment file loads, validates and builds its run (without compiling it)."""

from pathlib import Path

import pytest
from conftest import REPO

from azjax import build
from azjax.config import load_config

EXPERIMENTS = sorted(p.name for p in (Path(REPO) / "experiments").glob("*.py"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_builds(name):
    config = load_config(str(Path(REPO) / "experiments" / name))
    assert config.name == Path(name).stem
    pipeline = build.make_pipeline(config)
    assert pipeline.game.name.split("_")[0] in config.game
