"""Game records of outside engines playing each other or themselves (`azjax records`).

    from azjax.matches import engine_records
    engine_records.run("records/gnugo5", "go_9x9", ['gtp:"gnugo --mode gtp --level 5"'],
                       num_games=100, jobs=2)

One engine spec plays against itself (two processes of it), two specs alternate colours
(the first spec is player 0 in the even games). Game i opens with `opening_plies` random
legal moves drawn from a key of the seed and i alone (never a voluntary pass in Go), so the
games differ and game i is the same opening on every rerun. azjax referees: every move is
checked against its legal moves and the game ends by its rules, Go's by Tromp-Taylor area
scoring of the final board, which is right because GTP engines move by
`kgs-genmove_cleanup` where they have it (GNU Go does: it captures dead stones before it
passes, `gtp_client`). A resignation is a loss for the resigner.

Each game is written whole as `DIR/records-000123.EXT` once it ends (`paths.write_atomically`),
so a rerun skips the games written and plays the rest. `DIR/records.json` holds the settings
(game, players, opening plies, seed, format): a rerun with other settings is refused, and the
file never names an engine to run: engines come from the command line only. `DIR/compute.json`
sums what the games cost over every run that wrote them: the engines' CPU seconds, azjax's
own (the referee) and the wall seconds, so that a budget can count the records' making.
`jobs` games play at once, each job on a thread with its own engine processes. A stop
(Ctrl-C, SIGTERM) drops the games in play at their next move; an engine that fails (crashes,
times out, plays an illegal move) stops the whole run with its one-line `EngineError`.
"""

import json
import logging
import resource
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import jax

from azjax import games
from azjax.config.keys import MAX_SEED
from azjax.config.opponents import EngineSpec, parse_engine_spec
from azjax.games import Game, records
from azjax.matches import arena
from azjax.matches.engines import EngineError, HostPlayer, open_player
from azjax.matches.recording import Recorder, Stopped, check_format, make_record
from azjax.paths import read_json, write_atomically
from azjax.types import RunError, UserError

_log = logging.getLogger(__name__)

SETTINGS = "records.json"
COMPUTE = "compute.json"  # what making the records cost, summed over the runs that made them
_POLL = 0.1  # seconds between the main thread's checks for a stop


def record_path(directory: Path, index: int, fmt: str) -> Path:
    """Where game `index` is written."""
    return directory / f"records-{index:06d}.{fmt}"


def game_key(seed: int, index: int):
    """The key of game `index`'s start and opening: the same on every rerun."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), index)


def play_record(
    game: Game,
    first: HostPlayer,
    second: HostPlayer,
    *,
    key,
    opening_plies: int,
    step=None,
    stop: threading.Event | None = None,
    names: tuple[str, str] | None = None,
    info: dict | None = None,
) -> records.Record:
    """One host game between `first` (player 0) and `second` as a record: the players
    named `names` (default: theirs), `info` with the opening plies and how the game ended
    ("rules" or "resigned").

    Raises:
      EngineError: an engine failed (crashed, timed out, played an illegal move): no record.
      Stopped: `stop` was set during the game.
    """
    step = step or jax.jit(game.step)
    recorder = Recorder(stop)
    score, _, reason = arena.play_host_game(
        game, first, second, opening_plies=opening_plies, key=key, step=step, watchers=[recorder]
    )
    resigned = reason in (f"{first.name} resigned", f"{second.name} resigned")
    if reason and not resigned:
        raise EngineError(reason)
    watched = recorder.games[-1]
    ended = {"ended": "resigned" if resigned else "rules"}
    return make_record(
        game,
        watched.start,
        watched.actions,
        2.0 * score - 1.0,
        final=watched.final(step),
        players=names or (first.name, second.name),
        info={**(info or {}), "opening_plies": opening_plies, **ended},
    )


def play_records(
    game: Game,
    specs: Sequence[str],
    indices: Iterable[int],
    *,
    seed: int,
    opening_plies: int,
    jobs: int = 1,
    timeout: float | None = None,
    on_record: Callable[[int, records.Record], None],
    should_stop: Callable[[], object] = lambda: False,
) -> bool:
    """Plays games `indices` (see the module) on `jobs` threads, each with its own engine
    processes, calling `on_record(index, record)` (one call at a time) as each ends.

    Returns:
      True where every game was played, False where `should_stop()` (polled) or Ctrl-C
      stopped them (the games in play dropped at their next move).

    Raises:
      EngineError, UserError: the first failure of any job (the others stop).
    """
    seats = list(specs) if len(specs) == 2 else [specs[0], specs[0]]  # their texts
    pending = iter(list(indices))
    lock, stop, errors = threading.Lock(), threading.Event(), []
    step = jax.jit(game.step)

    def work():
        players = []
        try:
            players = [open_player(spec, timeout=timeout) for spec in seats]
            while not stop.is_set():
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                order = (0, 1) if index % 2 == 0 else (1, 0)
                first, second = (players[i] for i in order)
                info = {"seed": seed, "index": index}
                record = play_record(
                    game,
                    first,
                    second,
                    key=game_key(seed, index),
                    opening_plies=opening_plies,
                    step=step,
                    stop=stop,
                    names=tuple(seats[i] for i in order),
                    info=info,
                )
                with lock:  # a game that ended is kept, whatever stops the others
                    on_record(index, record)
        except Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 (raised again by the main thread)
            with lock:
                errors.append(error)
            stop.set()
        finally:
            for player in players:
                player.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            if should_stop():
                stop.set()
            time.sleep(_POLL)
    except KeyboardInterrupt:  # not deferred: stop the jobs, then stop
        stop.set()
        raise
    finally:
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    return not stop.is_set()


def _check_program(spec: EngineSpec) -> None:
    """Raises UserError where the program of `spec` is not there to run."""
    if spec.protocol == "solver":
        return
    program = shlex.split(spec.command)[0]
    if shutil.which(program) is None:
        raise UserError(f"engine program not found: {program}")


def _check_settings(directory: Path, settings: dict) -> None:
    """Refuses a directory whose records were played with other settings."""
    path = directory / SETTINGS
    if not path.exists():
        return
    written = read_json(path)
    for key, value in settings.items():
        if not isinstance(written, dict) or written.get(key) != value:
            old = written.get(key) if isinstance(written, dict) else None
            raise UserError(
                f"{directory} holds records played with {key} {old!r}, not {value!r}: "
                "use another --out (or the same settings to resume)"
            )


class _Progress:
    """The line printed after each game: games done, results, games a minute."""

    def __init__(self, total: int, before: int, names: Sequence[str]):
        self.total, self.done, self.names = total, before, names
        self.results: list[float] = []
        self.began = time.monotonic()

    def add(self, index: int, record: records.Record) -> None:
        self.done += 1
        # player 0's results; of two specs, the first's (player 0 in the even games)
        flip = len(self.names) == 2 and index % 2 == 1
        self.results.append(-record.result if flip else record.result)
        minutes = (time.monotonic() - self.began) / 60
        wins = sum(r > 0 for r in self.results)
        losses = sum(r < 0 for r in self.results)
        draws = len(self.results) - wins - losses
        who = "player 0" if len(self.names) == 1 else self.names[0]
        _log.info(
            "%d/%d games: this run %s won %d, lost %d, drew %d; %.1f games a minute",
            self.done,
            self.total,
            who,
            wins,
            losses,
            draws,
            len(self.results) / max(minutes, 1e-9),
        )


def run(
    directory: str | Path,
    game_name: str,
    specs: Sequence[str],
    *,
    num_games: int,
    jobs: int = 1,
    opening_plies: int = 4,
    seed: int = 0,
    fmt: str | None = None,
    timeout: float | None = None,
    should_stop: Callable[[], object] = lambda: False,
) -> int:
    """Plays and writes the games `directory` still lacks of `num_games` (see the module).

    Args:
      specs: one engine spec (it plays itself) or two (alternating colours).
      fmt: sgf (Go), pgn (Xiangqi) or jsonl (any game; default: the game's).
      timeout: seconds an engine may take per answer (default: its spec's, else 30).
      should_stop: polled ten times a second; true stops the games in play at their next
        move (`interrupt.requested`).

    Returns:
      The games written by this call.

    Raises:
      UserError: bad input, found before any game (one line); KeyboardInterrupt: stopped
        (what was written is kept); EngineError: an engine failed during a game.
    """
    game = games.make(game_name)
    if not 1 <= len(specs) <= 2:
        raise UserError(f"give one or two engine specs, not {len(specs)}")
    parsed = [parse_engine_spec(spec) for spec in specs]
    for text, spec in zip(specs, parsed, strict=True):
        spec.require_plays(game, text)
        _check_program(spec)
    if num_games < 1 or jobs < 1:
        raise UserError(f"games and jobs must be at least 1, got {num_games} and {jobs}")
    if not 0 <= opening_plies < game.max_episode_length:
        raise UserError(
            f"the opening plies must be from 0 to {game.max_episode_length - 1} (the longest "
            f"game of {game.name}), got {opening_plies}"
        )
    if not 0 <= seed <= MAX_SEED:
        raise UserError(f"the seed must be between 0 and {MAX_SEED}, got {seed}")
    fmt = check_format(game, fmt)
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UserError(f"the records folder {directory} is a file")
    names = [spec.strip() for spec in specs]
    settings = {"game": game.name, "players": names, "opening_plies": opening_plies}
    settings |= {"seed": seed, "format": fmt}
    _check_settings(directory, settings)
    pending = [i for i in range(num_games) if not record_path(directory, i, fmt).exists()]
    if not pending:
        _log.info("%s already holds the %d games", directory, num_games)
        return 0
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_atomically(directory / SETTINGS, json.dumps(settings, indent=1).encode())
    except OSError as error:
        raise UserError(f"cannot write to {directory}: {error.strerror or error}") from None
    progress = _Progress(num_games, num_games - len(pending), names)
    written = 0
    began = _usage()

    def write(index: int, record: records.Record) -> None:
        nonlocal written
        path = record_path(directory, index, fmt)
        try:
            write_atomically(path, records.dumps(game, record, fmt).encode(), sync=True)
        except OSError as error:
            raise RunError(f"cannot write {path}: {error.strerror or error}") from None
        written += 1
        progress.add(index, record)

    if len(pending) < num_games:
        before = num_games - len(pending)
        _log.info("%d of %d games already written; playing %d", before, num_games, len(pending))
    try:
        done = play_records(
            game,
            names,
            pending,
            seed=seed,
            opening_plies=opening_plies,
            jobs=min(jobs, len(pending)),
            timeout=timeout,
            on_record=write,
            should_stop=should_stop,
        )
    finally:  # stopped or failed too: the games written cost what they cost
        _add_compute(directory, began, written)
    if not done:
        _log.info("stopped: %d games written now; run the same command again to resume", written)
        raise KeyboardInterrupt
    _log.info("wrote %d games to %s (%d in all)", written, directory, num_games)
    return written


def _usage() -> dict[str, float]:
    """This process's and its ended children's (the engines') CPU seconds, and the clock."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return {
        "engine_cpu_seconds": children.ru_utime + children.ru_stime,
        "azjax_cpu_seconds": own.ru_utime + own.ru_stime,
        "wall_seconds": time.monotonic(),
    }


def _add_compute(directory: Path, began: dict[str, float], games_written: int) -> None:
    """Adds this run's cost since `began` to `directory`'s compute.json, and logs the sum."""
    now, path = _usage(), directory / COMPUTE
    try:
        total = read_json(path) if path.exists() else {}
    except (OSError, UserError):
        total = {}  # an unreadable sum starts again: the records themselves are unharmed
    total = total if isinstance(total, dict) else {}
    for key, value in now.items():
        total[key] = float(total.get(key, 0.0)) + value - began[key]
    total["games"] = int(total.get("games", 0)) + games_written
    try:
        write_atomically(path, json.dumps(total, indent=1).encode())
    except OSError as error:
        _log.warning("cannot write %s: %s", path, error.strerror or error)
    _log.info(
        "making the %d games written so far cost %.0f CPU seconds of the engines, %.0f of "
        "azjax and %.0f s of wall clock (%s)",
        total["games"],
        total["engine_cpu_seconds"],
        total["azjax_cpu_seconds"],
        total["wall_seconds"],
        path,
    )
