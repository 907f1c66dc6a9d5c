"""Shared fixtures: tiny configs so that every compiled function stays small."""

import os
import sys

import pytest

from azjax.config import base_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_config(game: str = "tic_tac_toe"):
    """A config small enough to compile and run an iteration in seconds on a laptop CPU."""
    config = base_config()
    config.name = f"tiny_{game}"
    config.game = game
    config.network.channels = 8
    config.network.num_blocks = 1
    config.network.value_hidden = 8
    config.search.num_simulations = 4
    config.selfplay.batch_size = 8
    config.selfplay.num_steps = 4
    config.selfplay.temperature_moves = 2
    config.replay.capacity = 512
    config.replay.min_size = 16
    config.learner.batch_size = 16
    config.learner.updates_per_iteration = 2
    config.train.num_iterations = 4
    config.train.checkpoint_every = 2
    config.eval.every = 0
    config.eval.num_games = 4
    config.eval.num_simulations = 4
    config.eval.opponents = ("random",)
    return config


@pytest.fixture
def tiny():
    return tiny_config()


def subprocess_env(**extra) -> dict:
    """Environment for running azjax in a child process from the repository checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


PYTHON = sys.executable


def untrained_run(workdir, config):
    """A run directory holding `config` and freshly initialised network variables at
    iteration 0 (enough for anything that loads an agent: evaluate, selfplay, gtp)."""
    import jax  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    from azjax import agent, checkpoint, train  # noqa: PLC0415

    train.prepare_workdir(config, workdir, allow_config_change=False)
    _, network = agent.make_game_and_network(config)
    checkpointer = checkpoint.Checkpointer(workdir)
    checkpointer.save(0, network.init(jax.random.PRNGKey(config.seed)), {"iteration": np.int32(0)})
    checkpointer.close()
    return workdir


@pytest.fixture(scope="session")
def go_run(tmp_path_factory):
    """An untrained tiny go_9x9 run (search with 4 simulations)."""
    return untrained_run(tmp_path_factory.mktemp("go_run"), tiny_config("go_9x9"))
