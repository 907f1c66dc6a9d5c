"""The training evaluation's opponents beyond the baselines: the previous network and outside
engines (the same specs as tournament players)."""

import pytest
from conftest import require_program, tiny_config

from azjax.apps import api, cli
from azjax.config import validate
from azjax.runs.directory import load_metrics
from azjax.types import UserError


def test_previous_network_and_random_as_evaluation_opponents(tmp_path):
    config = tiny_config("tic_tac_toe")
    config.eval.every = 2
    config.eval.opponents = ("random", "previous")
    api.train(config, tmp_path / "run", quiet=True)
    metrics = load_metrics(tmp_path / "run")
    evaluated = metrics[metrics["eval/previous/games"].notna()]
    assert list(evaluated["iteration"]) == [2, 4]
    assert (evaluated["eval/previous/games"] == config.eval.num_games).all()
    assert evaluated["eval/previous/score"].between(0, 1).all()


@pytest.mark.deep  # CI: test_gtp's complete games against GNU Go
@pytest.mark.slow
def test_gnugo_as_a_training_evaluation_opponent(tmp_path):
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    config = tiny_config("go_9x9")
    config.train.num_iterations = 1
    config.eval.every = 1
    config.eval.num_games = 2
    config.replay.capacity = 2048  # Go games are long: one iteration's positions must fit
    spec = f'gtp:"{gnugo} --mode gtp --level 0"'
    config.eval.opponents = (spec,)
    api.train(config, tmp_path / "run", quiet=True)
    record = load_metrics(tmp_path / "run").iloc[-1]
    assert record[f"eval/{spec}/games"] == 2
    # An untrained 4-simulation network against GNU Go: it should lose, and it did in every
    # run seen; the check is that complete games were played and scored.
    assert 0 <= record[f"eval/{spec}/score"] <= 1


@pytest.mark.parametrize(
    "opponents, message",
    [
        (("gtp:",), "bad engine spec"),
        (("uci:fairy-stockfish depth=x",), "depth must be"),
        (("previous", "chess"), "bad opponent 'chess'"),
    ],
)
def test_bad_evaluation_opponents_are_config_errors(opponents, message):
    config = tiny_config()
    config.eval.opponents = opponents
    with pytest.raises(UserError, match=message):
        validate(config)


def test_an_engine_that_cannot_play_the_game_is_refused(tmp_path):
    config = tiny_config("tic_tac_toe")
    config.eval.every = 2
    config.eval.opponents = ('gtp:"gnugo --mode gtp"',)
    with pytest.raises(UserError, match="cannot play"):
        api.train(config, tmp_path / "run", quiet=True)


def test_evaluate_command_refuses_training_only_opponents(tmp_path, capsys):
    config = tiny_config()
    api.train(config, tmp_path / "run", quiet=True)
    status = cli.main(["evaluate", "--workdir", str(tmp_path / "run"), "--opponent", "previous"])
    assert status == 2 and "only in training evaluations" in capsys.readouterr().err
