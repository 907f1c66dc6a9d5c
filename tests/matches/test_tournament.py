"""Tournaments: schedules, the resumable game log, ratings files, the command line."""

import json
import signal
import subprocess
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import PYTHON, require_program, subprocess_env, tiny_config, untrained_run

from azjax import config as config_lib
from azjax import games
from azjax.apps import cli
from azjax.config import build
from azjax.matches import arena, tournament
from azjax.matches.engines import HostPlayer
from azjax.matches.tournament import GameLog
from azjax.runs import checkpoint

STEPS = (0, 10, 20)


@pytest.fixture(scope="module")
def ttt_run(tmp_path_factory):
    """A tiny Tic-tac-toe run with checkpoints at iterations 0, 10 and 20 (different random
    networks: the tournament machinery, not learning, is under test)."""
    config = tiny_config("tic_tac_toe")
    workdir = untrained_run(tmp_path_factory.mktemp("ttt") / "run", config)
    network = build.make_network_for(config, build.make_game(config))
    checkpointer = checkpoint.Checkpointer(workdir)
    for step in STEPS[1:]:
        checkpointer.save(
            step,
            network.init(jax.random.PRNGKey(step)),
            {"iteration": np.int32(step)},
            config=json.loads(config_lib.to_json(config)),
            metrics=[],
        )
    checkpointer.close()
    return workdir


def pair_counts(directory) -> dict[frozenset, int]:
    counts = {}
    for game in GameLog(directory).games:
        pair = frozenset((game["a"], game["b"]))
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@pytest.mark.deep  # CI: the killed tournament resumes
@pytest.mark.slow  # 41 s
def test_round_robin_resumes_and_grows_without_replaying(ttt_run, tmp_path):
    directory = tmp_path / "t"
    specs = [f"{ttt_run}@every:20", "random", "mcts:4"]
    names = [f"{ttt_run}@0", f"{ttt_run}@20", "random", "mcts:4"]
    ratings = tournament.run(directory, specs, games_per_pair=4, batch_size=4, quiet=True)
    counts = pair_counts(directory)
    assert len(counts) == 6 and set(counts.values()) == {4}  # 4 players: 6 pairs
    for game_pair in counts:  # colours alternate: each side moves first in half the games
        firsts = [
            g["a"] if g["a_first"] else g["b"]
            for g in GameLog(directory).games
            if frozenset((g["a"], g["b"])) == game_pair
        ]
        assert sorted(firsts.count(name) for name in game_pair) == [2, 2]
    assert set(ratings.players) == set(names) and ratings.anchor == "random"
    table = tournament.load_ratings(directory)
    assert set(table["player"]) == set(names)
    assert table.loc[table["player"] == "random", "elo"].item() == 0
    assert set(table.loc[table["run"].notna(), "step"]) == {0, 20}
    assert (directory / "ratings.png").stat().st_size > 10_000

    # The same command again plays nothing; more games per pair plays only the difference.
    # (Batches of 4 throughout, so every match reuses the programs compiled above.)
    before = (directory / "games.jsonl").read_bytes()
    tournament.run(directory, specs, games_per_pair=4, batch_size=4, quiet=True)
    assert (directory / "games.jsonl").read_bytes() == before
    tournament.run(directory, None, games_per_pair=8, batch_size=4, quiet=True)
    assert set(pair_counts(directory).values()) == {8}
    assert (directory / "games.jsonl").read_bytes().startswith(before)

    # A new player plays the others; the old pairs keep their games.
    tournament.run(directory, [*specs, f"{ttt_run}@10"], games_per_pair=8, batch_size=4, quiet=True)
    counts = pair_counts(directory)
    assert len(counts) == 10 and set(counts.values()) == {8}


@pytest.mark.slow  # 26 s
def test_gauntlet_pairs_one_player_with_each_other(ttt_run, tmp_path):
    focus = f"{ttt_run}@20"
    tournament.run(
        tmp_path / "g",
        [focus, "random", "mcts:4", f"{ttt_run}@0"],
        schedule="gauntlet",
        focus=focus,
        games_per_pair=4,  # the round robin's batches: its compiled matches serve here too
        batch_size=4,
        quiet=True,
    )
    counts = pair_counts(tmp_path / "g")
    assert all(focus in pair for pair in counts) and len(counts) == 3


def test_players_resolve_checkpoints(ttt_run):
    assert [p.name for p in tournament.resolve(str(ttt_run))] == [f"{ttt_run}@20"]
    assert [p.step for p in tournament.resolve(f"{ttt_run}@every:20")] == [0, 20]
    assert [p.step for p in tournament.resolve(f"{ttt_run}@all")] == list(STEPS)
    (player,) = tournament.resolve(f"workdir:{ttt_run}@10", simulations=7)
    assert (player.kind, player.step, player.simulations) == ("checkpoint", 10, 7)
    assert tournament.resolve("mcts:3")[0].deterministic is False
    assert tournament.resolve("minimax")[0].deterministic is True


def test_torn_last_line_is_cut_off(tmp_path):
    log = GameLog(tmp_path)
    game = {"a": "x", "b": "y", "score_a": 1.0, "a_first": True, "plies": 5, "reason": ""}
    log.append([game, {**game, "score_a": 0.5}])
    with open(tmp_path / "games.jsonl", "a") as file:
        file.write('{"a": "x", "b": "y", "sco')  # a kill -9 in the middle of a write
    assert len(GameLog(tmp_path).games) == 2
    assert (tmp_path / "games.jsonl").read_text().endswith("}\n")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--players", "nonexistent_run", "random"], "not a run directory"),
        (["--players", "RUN@99", "random"], "has no checkpoint 99"),
        (["--players", "RUN@every:0", "random"], "every:K needs K >= 1"),
        (["--players", "random", "mcts:4"], "name the game with --game"),
        (["--players", "random", "mcts:0"], "mcts:N needs N >= 1"),
        (["--players", "random", "mcts:4", "--game", "chess"], "unknown game"),
        (["--players", "RUN", "random", "--gauntlet", "mcts:4x"], "not a run directory"),
        (["--players", "RUN", "random", "--anchor", "nobody"], "anchor 'nobody' is not a player"),
        (["--players", "RUN", "random", "--games", "0"], "must be between 1"),
    ],
)
def test_bad_tournament_input_is_a_one_line_error(ttt_run, tmp_path, capsys, arguments, message):
    arguments = [a.replace("RUN", str(ttt_run)) for a in arguments]
    status = cli.main(["tournament", "--dir", str(tmp_path / "t"), "--games", "2", *arguments])
    err = capsys.readouterr().err
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_changed_settings_of_a_known_player_are_refused(ttt_run, tmp_path, capsys, azjax_records):
    directory = str(tmp_path / "t")
    base = ["tournament", "--dir", directory, "--games", "2", "--batch", "2"]
    assert cli.main([*base, "--players", f"{ttt_run}@0", "random"]) == 0
    (line,) = [r.getMessage() for r in azjax_records if r.name.startswith("azjax.matches.")]
    assert line.startswith(f"{ttt_run}@0 vs random: ") and line in capsys.readouterr().out
    status = cli.main([*base, "--players", f"{ttt_run}@0", "random", "--simulations", "9"])
    assert status == 2 and "other settings" in capsys.readouterr().err


@pytest.mark.slow
def test_killed_tournament_resumes_without_losing_or_repeating_games(ttt_run, tmp_path):
    """kill -9 once some games are logged, then Ctrl-C; reruns finish every pairing with
    exactly the games asked for: nothing finished is lost, nothing is played twice."""
    directory = tmp_path / "t"
    command = [
        PYTHON, "-m", "azjax.apps.cli", "tournament", "--dir", str(directory), "--games", "8",
        "--batch", "2", "--players", f"{ttt_run}@all", "random", "mcts:4",
    ]  # fmt: skip
    log = directory / "games.jsonl"
    for stop in (signal.SIGKILL, signal.SIGINT):
        process = subprocess.Popen(command, env=subprocess_env(), stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        start = len(GameLog(directory).games) if log.exists() else 0
        while time.monotonic() < deadline and process.poll() is None:
            if log.exists() and len(log.read_bytes().splitlines()) >= start + 6:
                break
            time.sleep(0.2)
        process.send_signal(stop)
        _, err = process.communicate(timeout=120)
        assert b"Traceback" not in err, err.decode()
        kept = len(GameLog(directory).games)
        assert kept >= start + 6 and set(pair_counts(directory).values()) <= set(range(9))
        if stop == signal.SIGINT:  # the first Ctrl-C stops after the batch in play
            assert process.returncode == 130, err.decode()
            assert kept < 80
    result = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    counts = pair_counts(directory)
    assert len(counts) == 10 and set(counts.values()) == {8}
    assert "random" in result.stdout and "95% interval" in result.stdout


@pytest.mark.deep  # CI: test_gtp's complete games against GNU Go
@pytest.mark.slow
def test_go_gauntlet_against_gnugo_levels_through_gtp(go_run, tmp_path):
    """A tiny untrained Go run against GNU Go at levels 0 and 10, refereed by azjax's rules."""
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    level = {lvl: f'gtp:"{gnugo} --mode gtp --level {lvl}"' for lvl in (0, 10)}
    ratings = tournament.run(
        tmp_path / "go",
        [str(go_run), level[0], level[10]],
        schedule="gauntlet",
        focus=f"{go_run}@0",
        games_per_pair=2,
        anchor=level[0],
        quiet=True,
    )
    games = GameLog(tmp_path / "go").games
    assert len(games) == 4 and all(g["reason"] == "" for g in games), games
    assert {g["b"] for g in games} == set(level.values())
    assert sorted(g["a_first"] for g in games) == [False, False, True, True]
    assert all(g["plies"] >= 2 for g in games)
    assert ratings.elo[ratings.players.index(level[0])] == 0


class Passer(HostPlayer):
    """Always passes; keeps the moves of the game."""

    name = "passer"

    def start(self, game, state):
        self.pass_action, self.actions = game.num_actions - 1, []

    def observe(self, state, action):
        self.actions.append(action)

    def choose(self, state):
        return self.pass_action

    def close(self):
        pass


def test_random_host_openings_never_pass_in_go():
    """A random opening pass let the next player end the game at once (seen in a tournament:
    black's random stone, white's random pass, black passed and won 3-ply game against GNU
    Go level 10 that GNU Go never moved in). Key 79 drew that opening (a stone, a pass)."""
    go = games.make("go_9x9")
    first, second = Passer(), Passer()
    score, plies, reason = arena.play_host_game(
        go, first, second, opening_plies=2, key=jax.random.PRNGKey(79)
    )
    assert (plies, reason) == (4, "") and first.actions[2:] == [go.num_actions - 1] * 2
    assert go.num_actions - 1 not in first.actions[:2]
    # Where the pass is the only legal move, an opening ply still may pass.
    state = go.init(jax.random.PRNGKey(0))
    mask = arena._opening_mask(go, state)
    assert not mask[-1] and bool(np.all(mask[:-1] == state.legal_action_mask[:-1]))
    only_pass = state.replace(legal_action_mask=jnp.arange(go.num_actions) == go.num_actions - 1)
    assert bool(np.array_equal(arena._opening_mask(go, only_pass), only_pass.legal_action_mask))


FAKE_GTP = """\
import sys
moves = 0
for line in sys.stdin:
    command = line.split()[0] if line.split() else ""
    if command == "genmove":
        moves += 1
        if moves > {crash_after}:
            sys.exit(3)  # a crash in the middle of a game
        print("= pass" if {passes} else "= Z99", end="\\n\\n", flush=True)
    elif command == "quit":
        print("=", end="\\n\\n", flush=True)
        break
    else:
        print("=", end="\\n\\n", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "crash_after, passes, reason",
    [(0, True, "exited with status 3"), (5, False, "illegal"), (99, True, "")],
)
def test_failing_engines_lose_and_the_tournament_goes_on(
    go_run, tmp_path, crash_after, passes, reason
):
    script = tmp_path / "engine.py"
    script.write_text(FAKE_GTP.format(crash_after=crash_after, passes=passes))
    engine = f'gtp:"{PYTHON} {script}" timeout=20'
    tournament.run(
        tmp_path / "t", [f"{go_run}@0", engine], games_per_pair=2, anchor=engine, quiet=True
    )
    games = GameLog(tmp_path / "t").games
    assert len(games) == 2
    for game in games:
        assert reason in game["reason"]
        if reason:  # the engine lost
            assert game["score_a"] == 1.0 if game["a"] == f"{go_run}@0" else 0.0


@pytest.mark.slow
def test_xiangqi_series_against_fairy_stockfish_through_uci(xiangqi_run, tmp_path):
    """An untrained Xiangqi run against Fairy-Stockfish at depth 1: complete games refereed by
    azjax's rules (every engine move checked against our legal moves)."""
    engine = require_program(
        "fairy-stockfish", install="apt-get install fairy-stockfish", paths=("/usr/games",)
    )
    spec = f"uci:{engine} depth=1"
    ratings = tournament.run(
        tmp_path / "x", [str(xiangqi_run), spec], games_per_pair=2, anchor=spec, quiet=True
    )
    games = GameLog(tmp_path / "x").games
    assert len(games) == 2 and all(g["reason"] == "" for g in games), games
    assert sorted(g["a_first"] for g in games) == [False, True]
    # Not asserted: who wins. Fairy-Stockfish mated the untrained agent in every game seen.
    assert set(ratings.players) == {f"{xiangqi_run}@0", spec}


def one_line_error(capsys, argv) -> str:
    status = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("azjax: error: "), err
    return err


@pytest.mark.parametrize(
    "spec", ["mcts:99999999999999999999", "mcts:1000001", "mcts:" + "9" * 5000, "mcts:²"]
)
def test_a_bad_player_spec_writes_nothing(tmp_path, capsys, spec):
    directory = tmp_path / "t"
    argv = ["tournament", "--dir", directory, "--game", "tic_tac_toe", "--players", "random", spec]
    err = one_line_error(capsys, argv)
    assert "bad player" in err or "not a run directory" in err, err
    assert not directory.exists()  # the folder is not spoilt: the next run starts afresh


def test_a_run_of_another_game_is_refused_before_anything_is_written(ttt_run, tmp_path, capsys):
    """A tournament refused for mixing games leaves no settings behind: the folder still
    takes a tournament of one game."""
    other = untrained_run(tmp_path / "c4", tiny_config("connect_four"))
    directory = tmp_path / "t"
    argv = ["tournament", "--dir", directory, "--games", "2", "--batch", "2", "--players"]
    err = one_line_error(capsys, [*argv, f"{ttt_run}@0", f"{other}@0", "random"])
    assert f"player {other}@0 plays" in err and "but this tournament plays" in err, err
    assert not (directory / "tournament.json").exists()
    assert cli.main([str(a) for a in [*argv, f"{ttt_run}@0", "random"]]) == 0


def test_a_bad_directory_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("")
    base = ["tournament", "--game", "tic_tac_toe", "--players", "random", "mcts:2", "--games", "2"]
    for directory, said in [
        ("", "the tournament directory is empty"),
        ("   ", "the tournament directory is empty"),
        (tmp_path / "file", "is a file"),
        (tmp_path / "file" / "t", "cannot make the tournament directory"),
    ]:
        assert said in one_line_error(capsys, [*base, "--dir", directory])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing in the cwd


SETTINGS = {
    "game": {"name": "tic_tac_toe", "kwargs": {}},
    "players": {
        "random": {"name": "random", "kind": "baseline", "run": None, "step": None,
                   "simulations": None, "deterministic": False},
        "mcts:2": {"name": "mcts:2", "kind": "baseline", "run": None, "step": None,
                   "simulations": None, "deterministic": False},
    },
}  # fmt: skip


@pytest.mark.parametrize(
    "file, text, said",
    [
        ("tournament.json", "[" * 100_000, "nested too deeply"),
        ("tournament.json", '{"players": {}, "n": 1' + "0" * 5000 + "}", "4300 digits"),
        ("tournament.json", '{"players": [], "game": 1}', "not a tournament's settings"),
        ("tournament.json", json.dumps({**SETTINGS, "game": ["go"]}), "not a tournament's"),
        ("games.jsonl", "[" * 100_000 + "\n", "nested too deeply"),
        ("games.jsonl", '{"a": "random", "plies": 1' + "0" * 5000 + "}\n", "4300 digits"),
        ("games.jsonl", '{"a": "random", "b": "mcts:2", "score_a": 1e400, "a_first": true, '
                        '"plies": 3}\n', "line 1 is not a game record"),
    ],
    ids=["settings nested 100,000 deep", "settings with a 5,000-digit integer",
         "settings not a tournament's", "settings with a bad game", "a game nested deep",
         "a game with a 5,000-digit integer", "an infinite score"],
)  # fmt: skip
def test_damaged_tournament_files_are_one_line(tmp_path, capsys, file, text, said):
    directory = tmp_path / "t"
    directory.mkdir()
    (directory / "tournament.json").write_text(json.dumps(SETTINGS))
    (directory / file).write_text(text)
    err = one_line_error(capsys, ["tournament", "--dir", directory, "--games", "2"])
    assert said in err and file in err, err


@pytest.mark.parametrize(
    "player",
    [
        {"name": "mcts:99999999999999999999", "kind": "baseline"},
        {"name": "mcts:2", "kind": "baseline", "deterministic": "no"},
        {"name": "run", "kind": "checkpoint", "run": "run", "step": -1, "simulations": 2},
        {"name": "x", "kind": "wizard"},
        ["not", "a", "record"],
    ],
)
def test_a_damaged_player_record_is_one_line(tmp_path, capsys, player):
    directory = tmp_path / "t"
    directory.mkdir()
    settings = {**SETTINGS, "players": {**SETTINGS["players"], "bad": player}}
    (directory / "tournament.json").write_text(json.dumps(settings))
    err = one_line_error(capsys, ["tournament", "--dir", directory, "--games", "2"])
    assert "damaged" in err, err
    assert not (directory / "games.jsonl").exists()


def test_an_engine_named_only_by_the_settings_never_runs(tmp_path, capsys):
    """A received tournament folder whose settings name `gtp:"touch FILE"`: re-rating it
    runs nothing unless the command line gives that engine or --trust-engines."""
    marker = tmp_path / "ran"
    engine = f'gtp:"touch {marker}"'
    directory = tmp_path / "t"
    directory.mkdir()
    settings = {
        "game": {"name": "go_9x9", "kwargs": {}},
        "players": {
            "random": SETTINGS["players"]["random"],
            engine: {**SETTINGS["players"]["random"], "name": engine, "kind": "engine"},
        },
    }
    (directory / "tournament.json").write_text(json.dumps(settings))
    err = one_line_error(capsys, ["tournament", "--dir", directory, "--games", "2"])
    assert engine in err and "--players" in err and "--trust-engines" in err, err
    assert not marker.exists() and not (directory / "games.jsonl").exists()


@pytest.mark.slow  # a Go game's step compiles
@pytest.mark.parametrize("allow", ["--players", "--trust-engines"])
def test_an_engine_runs_when_the_command_line_says_so(tmp_path, capsys, allow):
    marker = tmp_path / "ran"
    engine = f'gtp:"touch {marker}"'
    directory = tmp_path / "t"
    argv = ["tournament", "--dir", str(directory), "--game", "go_9x9"]
    assert cli.main([*argv, "--games", "1", "--players", "random", engine]) == 0
    assert marker.exists()  # the engine given on the command line ran (and lost: it quit)
    marker.unlink()
    extra = ["--players", "random", engine] if allow == "--players" else ["--trust-engines"]
    assert cli.main([*argv, "--games", "2", *extra]) == 0  # the second game
    assert marker.exists()
    capsys.readouterr()
