"""`azjax bench --compile`: each of a run's programs traced, lowered and compiled, and a plain
pgx + mctx + Flax self-play step of the same sizes that really plays.

No timing assertions: machines are shared and noisy.
"""

import jax
import numpy as np
import pgx
import pytest
from conftest import tiny_config, tiny_experiment

from azjax.apps import cli
from azjax.apps.bench import pgx as bench_pgx


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_the_plain_step_plays_games_of_the_game(algorithm):
    """The reference is a real self-play step: legal moves searched into policies, and
    finished games replaced by new ones."""
    config = tiny_config()
    config.search.algorithm = algorithm
    config.search.max_num_considered_actions = 4
    config.selfplay.num_steps = 12  # past a game's end (9 plies at most)
    play, (variables, state, key) = bench_pgx.plain_play_step(config)
    (_, final), (observations, policies) = jax.device_get(play(variables, state, key))
    assert observations.shape == (12, 8, 3, 3, 2)
    np.testing.assert_allclose(policies.sum(-1), 1.0, rtol=1e-5)
    pieces = observations.sum(axis=(2, 3, 4))  # [ply, game] stones on the board
    assert (pieces[0] == 1).all() and (np.diff(pieces, axis=0) != 1).any()  # games restarted
    assert not final.terminated.any()


def test_no_plain_step_for_a_game_pgx_lacks():
    for game in ("gomoku_6x6_k4", "othello_6x6", "xiangqi"):
        assert bench_pgx.plain_play_step(tiny_config(game)) == bench_pgx.NO_PGX_GAME, game
    assert pgx.make("othello").num_actions == 65  # the one pgx has: 8x8


def test_the_command_prints_each_program_and_the_plain_step(tmp_path, capsys):
    experiment = tiny_experiment(tmp_path, num_iterations=1, checkpoint_every=1)
    assert cli.main(["bench", "--compile", "--config", str(experiment)]) == 0
    captured = capsys.readouterr()
    # The tests' persistent compilation cache (conftest): the command says its times may be reads.
    assert "persistent compilation cache is on" in captured.err
    lines = captured.out.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("compile time:"))
    assert lines[title].startswith("compile time: tiny_tic_tac_toe (tic_tac_toe), 8 channels")
    rows = [line.rsplit(maxsplit=3) for line in lines[title + 2 :]]
    assert [row[0] for row in rows] == [
        "init",
        "play_step",
        "learn_begin",
        "learn_update (2 calls a chunk)",
        "learn_end",
        "plain pgx + mctx + Flax play step",
    ]
    for _, trace_s, compile_s, instructions in rows:
        assert float(trace_s) >= 0 and float(compile_s) >= 0
        assert int(instructions.replace(",", "")) > 100


def test_a_bad_override_is_one_line(capsys):
    code = cli.main(["bench", "--compile", "--config", "tic_tac_toe", "--config.nope=1"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("azjax: error:") and "\n" not in err
