"""Playing a tournament: the schedule, batched device matches, host games with engines.

    from azjax.matches import tournament
    ratings = tournament.run("tournaments/c4", ["runs/c4@every:50", "random", "mcts:400"],
                             games_per_pair=40)
    ratings.table                                # strongest first, with 95% intervals

Every pairing of the schedule plays until it has `games_per_pair` games in the log; games
already in the log are never replayed, so rerunning a stopped tournament finishes it, and a
rerun with more players or more games per pair plays only what is new.

The directory may be a cloud URI (`gs://bucket/tournaments/c4`) and so may a run in a player
spec (`gs://bucket/runs/c4@every:50`): the log, the settings and the ratings are read and
written there (`tournament.log`).
"""

import contextlib
import csv
import io
import logging
import math
import os
import zlib
from pathlib import Path

import jax

from azjax import extras, games, interrupt
from azjax.config import saved
from azjax.config.keys import MAX_SEED, MAX_SIMULATIONS
from azjax.games import Game
from azjax.matches import arena, zoo
from azjax.matches.engines import parse_engine_spec
from azjax.matches.ratings import Ratings, fit
from azjax.matches.tournament.log import GameLog, read_settings, score_of, write_settings
from azjax.matches.tournament.players import PlayerInfo, Roster, check_same_game, resolve
from azjax.paths import is_local, read_text, workdir_path, write_atomically
from azjax.runs.plots import plot_ratings
from azjax.types import UserError

_log = logging.getLogger(__name__)

SCHEDULES = ("round-robin", "gauntlet")


def _game_of(
    infos: list[PlayerInfo], settings: dict, game_name: str | None, game_kwargs: dict | None
) -> dict:
    """The tournament's game as {"name", "kwargs"}: stored, else the first run's, else named."""
    stored = settings.get("game")
    chosen = next((_run_game(i) for i in infos if i.kind == "checkpoint"), None)
    if chosen is None and game_name is not None:
        games.make(game_name, **(game_kwargs or {}))  # a one-line error for an unknown game
        chosen = {"name": game_name, "kwargs": dict(game_kwargs or {})}
    chosen = stored or chosen
    if chosen is None:
        raise UserError("name the game with --game: no player is a run's checkpoint")
    if game_name is not None and game_name != chosen["name"]:
        raise UserError(f"this tournament plays {chosen['name']}, not {game_name}")
    return chosen


def _run_game(info: PlayerInfo) -> dict:
    """The game of a checkpoint player's run, as {"name", "kwargs"}."""
    settings = zoo.read_settings(info.run) if zoo.is_zoo(info.run) else saved.read_run(info.run)
    run = settings.run
    return {"name": run.game, "kwargs": dict(run.game_kwargs)}


def _check_plays(game: Game, info: PlayerInfo) -> None:
    """Raises UserError where `info` does not play `game` (a run of another game or rules, an
    engine that plays other games): checked before anything is written."""
    if info.kind == "checkpoint":
        played = _run_game(info)
        check_same_game(game, games.make(played["name"], **played["kwargs"]), info.name)
    elif info.kind == "engine":
        parse_engine_spec(info.name).require_plays(game, info.name)


def _merge_players(settings: dict, infos: list[PlayerInfo]) -> list[PlayerInfo]:
    """Adds new players to the settings; a known name must keep its settings."""
    known = settings.setdefault("players", {})
    for info in infos:
        old = known.get(info.name)
        if old is not None and PlayerInfo.from_json(old) != info:
            raise UserError(
                f"{info.name} already plays in this tournament with other settings "
                f"({PlayerInfo.from_json(old).simulations} simulations); use a new directory"
            )
        known[info.name] = info.to_json()
    return list(dict.fromkeys(infos))


def pairings(names: list[str], *, schedule: str, focus: str | None) -> list[tuple[str, str]]:
    """The pairs of a schedule: every pair (round robin) or `focus` against each other."""
    if schedule == "round-robin":
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    if schedule != "gauntlet":
        raise UserError(f"unknown schedule {schedule!r}; use {' or '.join(SCHEDULES)}")
    if focus not in names:
        raise UserError(f"the gauntlet player {focus!r} is not among the players")
    return [(focus, other) for other in names if other != focus]


# Compiled matches of this process, by (game, family, family, games, opening plies): a
# tournament run again or grown in the same process (a notebook, the tests) compiles nothing
# twice. A family fixes its player function (`Roster.device`).
_COMPILED: dict = {}


class _Matches:
    """Compiled batched matches, one per (family, family, games, opening plies)."""

    def __init__(self, game: Game, roster: Roster):
        self.game, self.roster, self._compiled = game, roster, _COMPILED

    def play(self, a: PlayerInfo, b: PlayerInfo, *, num_games: int, opening_plies: int, key):
        family_a, player_a, params_a = self.roster.device(a)
        family_b, player_b, params_b = self.roster.device(b)
        swap = repr(family_a) > repr(family_b)  # one orientation per family pair
        if swap:
            family_a, family_b = family_b, family_a
            player_a, player_b, params_a, params_b = player_b, player_a, params_b, params_a
        signature = (repr(self.game), family_a, family_b, num_games, opening_plies)
        if signature not in self._compiled:
            self._compiled[signature] = jax.jit(
                arena.make_match(
                    self.game, player_a, player_b, num_games=num_games, opening_plies=opening_plies
                )
            )
        result = jax.device_get(self._compiled[signature](params_a, params_b, key))
        records = []
        columns = (result.outcomes, result.a_first, result.lengths)
        for outcome, a_first, plies in zip(*columns, strict=True):
            score = (float(outcome) + 1.0) / 2.0
            first = bool(a_first)
            if swap:  # the compiled match's A is our b
                score, first = 1.0 - score, not first
            records.append(
                {"a": a.name, "b": b.name, "score_a": score, "a_first": first, "plies": int(plies)}
            )
        return records


def _pair_key(seed: int, a: str, b: str, played: int):
    pair = zlib.crc32("\n".join(sorted((a, b))).encode())
    return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), pair), played)


def run(
    directory: str | Path,
    specs: list[str] | None = None,
    *,
    game: str | None = None,
    game_kwargs: dict | None = None,
    schedule: str = "round-robin",
    focus: str | None = None,
    games_per_pair: int = 20,
    batch_size: int = 32,
    simulations: int | None = None,
    opening_plies: int = 2,
    seed: int = 0,
    timeout: float = 60.0,
    anchor: str = "random",
    quiet: bool = False,
    stop_on_signal: bool = False,
    trust_engines: bool = False,
) -> Ratings:
    """Plays what the schedule still needs and rates every game in the log.

    Args:
      directory: the tournament directory (made if new; holds the game log).
      specs: player specs (see `tournament.players`); None or empty: the players already in
        the tournament.
      game: the game, needed only when no player is a run's checkpoint.
      game_kwargs: the rule options of `game` (board size, komi, ...).
      schedule: "round-robin" (every pair) or "gauntlet" (`focus` against every other).
      games_per_pair: games each pairing has when done (half with each colour).
      batch_size: games played at once between two azjax players.
      simulations: search simulations of checkpoints (default: each run's eval setting).
      opening_plies: random moves opening games between two deterministic players.
      seed: seeds the games (each pairing and batch draws its own key from it).
      timeout: seconds an outside engine may take for one answer.
      anchor: the player rated 0.
      quiet: log nothing (by default a line per pairing played, and engine failures).
      stop_on_signal: Ctrl-C and SIGTERM stop the tournament after the batch of games in
        play, logged (`azjax tournament`: a signal never lands inside jax's code), raising
        KeyboardInterrupt; otherwise the caller's handlers apply.
      trust_engines: run the outside engines recorded in the directory's settings even
        where `specs` does not name them. By default an engine runs only where this call's
        `specs` names it: a directory received from elsewhere never runs the programs its
        file names.

    Returns:
      The ratings of all players in the log (also written to ratings.csv and ratings.png).

    Raises:
      UserError: a bad directory, spec, setting or damaged file; an engine of the settings
        that would run without `specs` naming it (one line; nothing written).
    """
    # The first signal stops after the batch in play (checked below); the second at once.
    with interrupt.deferred() if stop_on_signal else contextlib.nullcontext():
        directory = _directory(directory)
        if games_per_pair < 1:
            raise UserError(f"games per pair must be at least 1, got {games_per_pair}")
        if simulations is not None and not 1 <= simulations <= MAX_SIMULATIONS:
            raise UserError(
                f"simulations must be between 1 and {MAX_SIMULATIONS}, got {simulations}"
            )
        if not 0 <= seed <= MAX_SEED:
            raise UserError(f"the seed must be between 0 and {MAX_SEED}, got {seed}")
        settings = read_settings(directory)
        given = [info for spec in (specs or []) for info in resolve(spec, simulations=simulations)]
        infos = given or [
            PlayerInfo.from_json(data) for data in settings.get("players", {}).values()
        ]
        settings["game"] = _game_of(infos, settings, game, game_kwargs)
        infos = _merge_players(settings, infos)
        if anchor not in settings["players"]:
            known = ", ".join(settings["players"])
            raise UserError(f"the anchor {anchor!r} is not a player of this tournament ({known})")
        the_game = games.make(settings["game"]["name"], **settings["game"]["kwargs"])
        names = [info.name for info in infos]
        pairs = pairings(names, schedule=schedule, focus=focus) if len(names) > 1 else []
        by_name = {info.name: info for info in infos}
        for info in infos:
            _check_plays(the_game, info)
        game_log = GameLog(directory)  # made here, after every check of the input
        if not trust_engines:
            _refuse_untrusted_engines(
                [
                    (by_name[a], by_name[b])
                    for a, b in pairs
                    if game_log.played(a, b) < games_per_pair
                ],
                {info.name for info in given},
            )
        write_settings(directory, settings)
        roster = Roster(the_game)
        matches = _Matches(the_game, roster)
        step = jax.jit(the_game.step)
        try:
            for a_name, b_name in pairs:
                a, b = by_name[a_name], by_name[b_name]
                opening = opening_plies if a.deterministic and b.deterministic else 0
                new = 0
                while (played := game_log.played(a_name, b_name)) < games_per_pair:
                    key = _pair_key(seed, a_name, b_name, played)
                    if a.kind == "engine" or b.kind == "engine":
                        records = [
                            _host_game(the_game, roster, a, b, played, opening, key, step, timeout)
                        ]
                        if records[0]["reason"] and not quiet:
                            _log.warning("%s vs %s: %s", a_name, b_name, records[0]["reason"])
                    else:
                        remaining = games_per_pair - played
                        count = min(batch_size, remaining + remaining % 2)
                        records = matches.play(
                            a, b, num_games=count, opening_plies=opening, key=key
                        )
                    game_log.append(records)
                    new += len(records)
                    if stop_on_signal and interrupt.requested():
                        raise KeyboardInterrupt
                if new and not quiet:
                    scores = [score_of(game, a_name) for game in game_log.between(a_name, b_name)]
                    _log.info("%s vs %s: %g / %d", a_name, b_name, sum(scores), len(scores))
        finally:
            roster.close()
        return write_ratings(directory, game_log, anchor=anchor)


def _directory(directory: str | Path):
    """The tournament directory as a path, checked before anything is written.

    Raises:
      UserError: an empty path (which would be the working folder), or a file.
    """
    text = os.fspath(directory) if isinstance(directory, os.PathLike) else str(directory)
    if not text.strip():
        raise UserError("the tournament directory is empty: name one (--dir DIR)")
    path = workdir_path(text)
    if path.exists() and not path.is_dir():
        raise UserError(f"the tournament directory {path} is a file")
    return path


def _refuse_untrusted_engines(pairs: list[tuple[PlayerInfo, PlayerInfo]], given: set[str]):
    """Refuses to run an outside engine that only the tournament's settings name: a folder
    received from elsewhere must not run the programs its file names.

    Args:
      pairs: the pairings that still play games.
      given: the names of the players this invocation's specs gave.

    Raises:
      UserError: an engine would run that `given` does not hold (one line).
    """
    for pair in pairs:
        for info in pair:
            if info.kind == "engine" and info.name not in {*given, "solver"}:  # no program
                raise UserError(
                    f"the tournament's settings name the engine {info.name}, a program azjax "
                    "would run: give that spec in --players to run it (or --trust-engines to "
                    "run the engines a tournament's settings name)"
                )


def _host_game(game, roster, a, b, played, opening, key, step, timeout) -> dict:
    a_first = played % 2 == 0
    player_a, player_b = roster.host(a, timeout=timeout), roster.host(b, timeout=timeout)
    first, second = (player_a, player_b) if a_first else (player_b, player_a)
    score, plies, reason = arena.play_host_game(
        game, first, second, opening_plies=opening, key=key, step=step
    )
    score_a = score if a_first else 1.0 - score
    return {
        "a": a.name,
        "b": b.name,
        "score_a": score_a,
        "a_first": a_first,
        "plies": plies,
        "reason": reason,
    }


def write_ratings(directory: str | Path, game_log: GameLog | None = None, *, anchor="random"):
    """Fits the ratings of every game in the log; writes ratings.csv, and ratings.png where
    the plots extra (matplotlib, pandas) is installed (each whole or not at all)."""
    directory = workdir_path(directory)
    game_log = game_log or GameLog(directory)
    if not game_log.games:
        raise UserError(f"no games in {directory} yet")
    ratings = fit(game_log.results(), anchor=anchor)
    settings = read_settings(directory)
    rows = rating_rows(ratings, settings)
    rounding = {"elo": 1, "elo_low": 1, "elo_high": 1, "score": 4}
    stream = io.StringIO(newline="")
    writer = csv.DictWriter(stream, fieldnames=list(rows[0]))
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v, rounding.get(k)) for k, v in row.items()})
    write_atomically(directory / "ratings.csv", stream.getvalue().encode())
    if extras.installed("matplotlib", "pandas"):
        figure = plot_ratings(ratings_table(ratings, settings), title=directory.name)
        image = io.BytesIO()
        figure.savefig(image, format="png", dpi=100)
        write_atomically(directory / "ratings.png", image.getvalue())
    return ratings


def _cell(value, digits: int | None):
    """A CSV cell: empty for None and NaN, floats rounded to `digits`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return round(value, digits) if digits is not None else value


def rating_rows(ratings: Ratings, settings: dict) -> list[dict]:
    """`ratings.rows()` with each player's run, iteration (step) and simulations (None for
    players that are no checkpoint)."""
    players = settings.get("players", {})
    return [
        {
            **row,
            **{c: players.get(row["player"], {}).get(c) for c in ("run", "step", "simulations")},
        }
        for row in ratings.rows()
    ]


def ratings_table(ratings: Ratings, settings: dict):
    """`rating_rows` as a pandas DataFrame (`step` an integer column with gaps)."""
    import pandas as pd  # noqa: PLC0415

    table = pd.DataFrame(rating_rows(ratings, settings))
    table["step"] = table["step"].astype("Int64")
    return table


def _ratings_file(path: str | Path):
    path = workdir_path(path)
    file = path / "ratings.csv" if path.is_dir() else path
    if not file.is_file():
        raise UserError(f"no ratings in {path} (run `azjax tournament` there first)")
    return file


def load_ratings(path: str | Path):
    """The ratings a tournament wrote as a pandas DataFrame, strongest first.

    Args:
      path: the tournament directory, or a ratings file it wrote (`ratings.csv`).
    """
    import pandas as pd  # noqa: PLC0415

    file = _ratings_file(path)
    table = pd.read_csv(file if is_local(file) else io.StringIO(read_text(file)))
    if "step" in table:
        table["step"] = table["step"].astype("Int64")
    return table


def read_elo(path: str | Path) -> dict[str, float]:
    """Each player's rating in a tournament's ratings file (NaN where unlinked); plain Python,
    for training's anchors (no pandas needed)."""
    file = _ratings_file(path)
    with open(file, newline="") if is_local(file) else io.StringIO(read_text(file)) as stream:
        return {row["player"]: float(row["elo"] or "nan") for row in csv.DictReader(stream)}


def format_table(table) -> str:
    """The ratings as aligned text, strongest first."""
    lines = [f"{'player':<40} {'Elo':>7} {'95% interval':>17} {'games':>6} {'score':>6}"]
    for row in table.itertuples():
        linked = math.isfinite(row.elo)
        interval = f"{row.elo_low:+7.0f} to {row.elo_high:+.0f}" if linked else "not linked"
        elo = f"{row.elo:+7.0f}" if math.isfinite(row.elo) else "    nan"
        lines.append(f"{row.player:<40} {elo} {interval:>17} {row.games:>6} {row.score:>6.3f}")
    return "\n".join(lines)
