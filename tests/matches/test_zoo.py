"""The zoo: agents shipped inside the package load, play and beat random; a run exports to
one and every command that takes an agent takes `--agent NAME` / `zoo:NAME`."""

import io
import json
import os
import pickle
import shutil
import zipfile

import jax
import numpy as np
import pytest
from conftest import jit_for, marked, require_program, tiny_config, untrained_run

from azjax.apps import cli
from azjax.matches import arena, tournament, zoo
from azjax.matches.agent import load_agent, make_opponent
from azjax.matches.zoo import export as zoo_export
from azjax.types import UserError


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


@pytest.mark.deep  # CI: test_gtp's games against GNU Go; rate puts a tournament on the card
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
@pytest.mark.parametrize("name", marked(zoo.names(), deep=["xiangqi"]))  # CI: the others
def test_every_shipped_agent_beats_random(name):
    agent = load_agent(
        f"zoo:{name}", num_simulations=min(16, zoo.read_settings(name).agent.simulations)
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


# Damaged agents: every damage is one line naming the agent and the file, never a traceback
# or a hang (a FIFO in a file's place is never opened), and the listing shows the others.


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """A zoo in a temporary folder holding a copy of the shipped Tic-tac-toe agent."""
    folder = tmp_path / "zoo" / "tic_tac_toe"
    shutil.copytree(zoo.AGENTS / "tic_tac_toe", folder)
    monkeypatch.setattr(zoo, "AGENTS", tmp_path / "zoo")
    return folder


def _replace(path, make) -> None:
    if path.is_dir():
        path.rmdir()
    elif path.exists():
        path.unlink()
    make(path)


def _first_array(path) -> tuple[dict, str]:
    with np.load(path) as stored:
        arrays = dict(stored)
    return arrays, sorted(arrays)[0]


def _object_array(path) -> None:
    arrays, first = _first_array(path)
    arrays[first] = np.array([{"pickled": True}] * arrays[first].size, dtype=object)
    np.savez(path, **arrays)


def _padded_member(path) -> None:
    """The first array stored with 1 MiB more bytes than its shape holds."""
    arrays, first = _first_array(path)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            padding = b"\0" * 2**20 if key == first else b""
            archive.writestr(f"{key}.npy", _npy(value) + padding)


def _npy(array) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array)
    return stream.getvalue()


def _wrong_shape(path) -> None:
    arrays, first = _first_array(path)
    arrays[first] = np.zeros((3, 5), arrays[first].dtype)
    np.savez_compressed(path, **arrays)


COMMON_DAMAGES = {
    "missing": lambda path: path.unlink(),
    "empty": lambda path: path.write_bytes(b""),
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "a directory": lambda path: _replace(path, lambda p: p.mkdir()),
    "a FIFO": lambda path: _replace(path, os.mkfifo),
}
CARD_DAMAGES = {
    "nested 100,000 deep": lambda path: path.write_text("[" * 100_000),
    "a 5,000-digit integer": lambda path: path.write_text(
        path.read_text().replace('"iteration": 60', '"iteration": 1' + "0" * 4999)
    ),
    "not an object": lambda path: path.write_text("[1, 2]"),
    "a bad field": lambda path: path.write_text(
        path.read_text().replace('"iteration": 60', '"iteration": "sixty"')
    ),
    "a rating without its score": lambda path: path.write_text(
        path.read_text().replace('"score": 0.5,', "")
    ),
}
PARAMS_DAMAGES = {
    "a pickle": lambda path: path.write_bytes(pickle.dumps({"params": [1.0, 2.0]})),
    "an object array": _object_array,
    "an array larger than its shape": _padded_member,
    "an array of another shape": _wrong_shape,
    "an .npy file": lambda path: path.write_bytes(_npy(np.zeros(3))),
}
DAMAGES = [
    (file, name, damage)
    for file, damages in [
        ("card.json", {**COMMON_DAMAGES, **CARD_DAMAGES}),
        ("params.npz", {**COMMON_DAMAGES, **PARAMS_DAMAGES}),
        ("config.json", COMMON_DAMAGES),
    ]
    for name, damage in damages.items()
]


@pytest.mark.timeout(120)  # a FIFO opened would block forever
@pytest.mark.parametrize(
    "file, damage", [(file, damage) for file, _, damage in DAMAGES],
    ids=[f"{file}: {name}" for file, name, _ in DAMAGES],
)  # fmt: skip
def test_a_damaged_agent_is_one_line_naming_it(shipped_copy, capsys, file, damage):
    damage(shipped_copy / file)
    with pytest.raises(UserError) as raised:
        load_agent("zoo:tic_tac_toe")
    message = str(raised.value)
    assert "\n" not in message and "tic_tac_toe" in message and file in message, message
    # The command line: one line, status 2 (the agent is loaded before any game is played).
    assert cli.main(["zoo", "--rate", "tic_tac_toe", "--opponents", "random"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("azjax: error: zoo agent tic_tac_toe") and err.count("\n") == 1, err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("damage", ["a FIFO", "nested 100,000 deep", "a bad field"])
def test_the_listing_shows_good_agents_and_a_line_per_damaged_one(shipped_copy, capsys, damage):
    shutil.copytree(shipped_copy, shipped_copy.parent / "broken")
    (shipped_copy.parent / "broken" / "card.json").write_text(
        (shipped_copy / "card.json").read_text().replace('"tic_tac_toe"', '"broken"', 1)
    )
    {**COMMON_DAMAGES, **CARD_DAMAGES}[damage](shipped_copy.parent / "broken" / "card.json")
    assert zoo.names() == ["broken", "tic_tac_toe"]
    assert cli.main(["zoo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("broken  (damaged: ") and "card.json" in lines[0], lines
    assert lines[1].startswith("tic_tac_toe  (tic_tac_toe, iteration 60"), lines


def test_only_the_arrays_the_network_needs_are_read(shipped_copy, monkeypatch):
    """An extra array in params.npz (large, or an object array that numpy would unpickle) is
    never decompressed; the agent loads."""
    path = shipped_copy / "params.npz"
    arrays, _ = _first_array(path)
    extra = {
        "extra_big": np.zeros(2**23, np.float32),  # 32 MiB, 32 KiB compressed
        "extra_object": np.array([{"pickled": True}], dtype=object),
    }
    np.savez_compressed(path, **arrays, **extra)
    opened = []
    original = zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(getattr(name, "filename", name))
        return original(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    agent = load_agent("zoo:tic_tac_toe")
    assert agent.iteration == 60
    assert opened and not [name for name in opened if name.startswith("extra")], opened
