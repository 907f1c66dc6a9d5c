"""The zoo: agents shipped inside the package load, play and beat random; a run exports to
one and every command that takes an agent takes `--agent NAME` / `zoo:NAME`."""

import json

import jax
import numpy as np
import pytest
from conftest import jit_for, require_program, tiny_config, untrained_run

from azjax.apps import cli
from azjax.matches import arena, tournament, zoo
from azjax.matches.agent import load_agent, make_opponent
from azjax.matches.zoo import export as zoo_export


@pytest.fixture
def tiny_zoo(tmp_path, monkeypatch):
    """A zoo in a temporary folder holding one exported (untrained) Tic-tac-toe agent."""
    run = untrained_run(tmp_path / "run", tiny_config())
    monkeypatch.setattr(zoo, "AGENTS", tmp_path / "zoo")
    card = zoo_export.export(
        str(run),
        "tiny_ttt",
        command="azjax train --config tiny",
        opponents=["random"],
        games=4,
        into=tmp_path / "zoo",
    )
    return run, card


def test_export_writes_a_card_and_loads_back(tiny_zoo):
    run, card = tiny_zoo
    assert zoo.names() == ["tiny_ttt"]
    assert card.game == "tic_tac_toe" and card.iteration == 0
    (rating,) = card.ratings
    assert rating["opponent"] == "random" and rating["games"] == 4
    assert rating["low"] <= rating["score"] <= rating["high"]
    assert zoo.card("tiny_ttt") == card  # read back from card.json
    shipped, original = load_agent("zoo:tiny_ttt"), load_agent(str(run))
    assert shipped.game.name == original.game.name
    for a, b in zip(
        jax.tree.leaves(shipped.variables), jax.tree.leaves(original.variables), strict=True
    ):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-2, atol=1e-2)  # bf16


def test_unknown_zoo_agent_is_a_user_error(tiny_zoo, capsys):
    assert cli.main(["evaluate", "--agent", "nope", "--games", "2"]) == 2
    assert "no zoo agent 'nope' (the zoo has: tiny_ttt)" in capsys.readouterr().err
    assert cli.main(["zoo", "--export", "x"]) == 2  # --name missing


@pytest.mark.slow  # 17 s
def test_commands_take_agent_names(tiny_zoo, tmp_path, capsys):
    assert cli.main(["zoo", "--names"]) == 0
    assert capsys.readouterr().out.split() == ["tiny_ttt"]
    assert cli.main(["zoo"]) == 0
    listing = capsys.readouterr().out
    assert "tiny_ttt  (tic_tac_toe, iteration 0" in listing and "vs random" in listing
    args = ["evaluate", "--agent", "tiny_ttt", "--opponent", "zoo:tiny_ttt", "--games", "2"]
    assert cli.main(args) == 0
    assert "zoo:tiny_ttt (iteration 0" in capsys.readouterr().out
    ratings = tournament.run(
        tmp_path / "t", ["zoo:tiny_ttt", "random"], games_per_pair=2, batch_size=2, quiet=True
    )
    assert sorted(ratings.players) == ["random", "zoo:tiny_ttt"]


@pytest.mark.slow  # 19 s
def test_rate_adds_ratings_to_a_shipped_agent(tiny_zoo, capsys):
    _, before = tiny_zoo
    args = ["zoo", "--rate", "tiny_ttt", "--opponents", "mcts:8,random", "--games", "6"]
    assert cli.main(args) == 0
    assert "vs mcts:8" in capsys.readouterr().out
    after = zoo.card("tiny_ttt")
    # random's rating is replaced in place (6 games now), mcts:8's appended; the rest kept
    assert [(r["opponent"], r["games"]) for r in after.ratings] == [("random", 6), ("mcts:8", 6)]
    assert after.command == before.command and after.iteration == before.iteration
    assert cli.main(["zoo", "--rate", "nope"]) == 2
    assert "no zoo agent 'nope'" in capsys.readouterr().err
    assert cli.main(["zoo", "--rate", "tiny_ttt", "--export", "x"]) == 2


@pytest.mark.slow
def test_a_series_against_gnugo_goes_on_the_card(tmp_path, monkeypatch, capsys):
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    run = untrained_run(tmp_path / "run", tiny_config("go_9x9"))
    monkeypatch.setattr(zoo, "AGENTS", tmp_path / "zoo")
    spec = f'gtp:"{gnugo} --mode gtp --level 0"'
    args = ["zoo", "--export", str(run), "--name", "tiny_go", "--opponents", f"random,{spec}"]
    assert cli.main([*args, "--games", "4", "--engine-games", "2"]) == 0
    random, engine = zoo.card("tiny_go").ratings
    assert (random["games"], engine["opponent"], engine["games"]) == (4, spec, 2)
    assert engine["wins"] + engine["draws"] + engine["losses"] == 2
    assert engine["forfeits"] == 0  # GNU Go answered every move, legally
    assert f"vs {spec}" in capsys.readouterr().out
    args = ["zoo", "--rate", "tiny_go", "--opponents", 'uci:"fairy-stockfish"']
    assert cli.main(args) == 2
    assert "cannot play go_9x9" in capsys.readouterr().err


@pytest.mark.slow  # eight agents' matches to compile: 84 s in all
@pytest.mark.parametrize("name", zoo.names())
def test_every_shipped_agent_beats_random(name):
    agent = load_agent(
        f"zoo:{name}", num_simulations=min(16, zoo.read_config(name).eval.num_simulations)
    )
    opponent, params = make_opponent(agent.game, "random")
    # Xiangqi's games of up to 400 plies: 36 s optimised against 60 s for 20 games.
    jit = jit_for(agent.game)
    # 12 games: 12 wins give a score interval of 0.76-1.00, 10 of 12 still 0.55-0.95.
    match = jit(arena.make_match(agent.game, agent.player, opponent, num_games=12))
    result = match(agent.variables, params, jax.random.PRNGKey(0))
    summary = arena.summarize(jax.device_get(result.outcomes))
    assert summary.score_low > 0.5, f"{name}: {summary.format()}"


def test_the_zoo_ships_agents():
    assert len(zoo.names()) >= 1, "no trained agent is shipped in azjax/matches/zoo/agents/"


def test_rate_from_a_tournament_puts_its_games_on_the_card(tiny_zoo, tmp_path, capsys):
    directory = tmp_path / "t"
    tournament.run(directory, ["zoo:tiny_ttt", "random", "minimax"], schedule="gauntlet",
                   focus="zoo:tiny_ttt", games_per_pair=4, batch_size=4, quiet=True)  # fmt: skip
    played = [json.loads(line) for line in (directory / "games.jsonl").read_text().splitlines()]
    args = ["zoo", "--rate", "tiny_ttt", "--from-tournament", str(directory)]
    assert cli.main(args) == 0
    assert "vs minimax" in capsys.readouterr().out
    ratings = {r["opponent"]: r for r in zoo.card("tiny_ttt").ratings}
    assert list(ratings) == ["random", "minimax"]  # random's in place, minimax's appended
    for opponent, rating in ratings.items():
        scores = [g["score_a"] if g["a"] == "zoo:tiny_ttt" else 1 - g["score_a"]
                  for g in played if opponent in (g["a"], g["b"])]  # fmt: skip
        assert rating["games"] == len(scores) == 4
        assert (rating["wins"], rating["losses"]) == (scores.count(1.0), scores.count(0.0))
        assert rating["score"] == pytest.approx(sum(scores) / 4)
        assert rating["low"] <= rating["score"] <= rating["high"] and "forfeits" not in rating

    # One opponent alone; then the one-line refusals (exit status 2).
    assert cli.main([*args, "--opponents", "minimax"]) == 0
    for extra, said in [
        (["--opponents", "mcts:8"], "played no game against mcts:8"),
        (["--games", "20"], "rates the games played there"),
        (["--games", "2", "--export", "x"], "two commands"),
    ]:
        assert cli.main([*args, *extra]) == 2
        assert said in capsys.readouterr().err
    assert cli.main(["zoo", "--rate", "tiny_ttt", "--from-tournament", str(tmp_path)]) == 2
    assert "holds no tournament" in capsys.readouterr().err
    assert cli.main(["zoo", "--from-tournament", str(directory)]) == 2
    assert "goes with --rate NAME" in capsys.readouterr().err
    # Played at other simulations than its own (`--simulations 2`), it is not the card's agent.
    settings = json.loads((directory / "tournament.json").read_text())
    settings["players"]["zoo:tiny_ttt"]["simulations"] = 2
    (directory / "tournament.json").write_text(json.dumps(settings))
    assert cli.main(args) == 2
    assert "played at 2 simulations" in capsys.readouterr().err
