"""Training's evaluation: the agent against the config's opponents, and its Elo against the
fixed ones.

    evaluation = make_evaluation(game, searcher, opponents=("random", "mcts:200"),
                                 num_games=40, seed=0, elo=settings.eval.elo)
    evaluation.begin(variables, records, workdir)   # the anchors rated once per run
    metrics = evaluation(variables, iteration)      # eval/OPP/win_rate, ..., eval/elo

The anchors' ratings come from a calibration tournament among them (`calibrate`, in
`WORKDIR/eval_anchors/`) or from a tournament's ratings file (`ratings_from_file`); the
agent is fitted against them with `ratings.anchors.estimate`.
"""

import contextlib
import copy
import logging
import tempfile
from pathlib import Path

import jax
import numpy as np

from azjax.config.opponents import parse_opponent_spec
from azjax.config.settings import Settings
from azjax.core.steps import Pipeline
from azjax.games import Game
from azjax.matches import arena, tournament
from azjax.matches.agent import make_opponent
from azjax.matches.arena import search_player
from azjax.matches.mcts_baseline import make_mcts_baseline
from azjax.matches.ratings import anchors
from azjax.paths import copy_tree, is_local, workdir_path
from azjax.types import Searcher, UserError

_log = logging.getLogger(__name__)

CALIBRATION_DIR = "eval_anchors"  # the anchors' calibration tournament in the run directory


def make_evaluation(
    game: Game,
    searcher: Searcher,
    *,
    opponents: tuple[str, ...],
    num_games: int,
    seed: int,
    engine_timeout: float = 60.0,
    elo: dict | None = None,
) -> "Evaluation":
    """Builds train's evaluation: the agent playing `searcher`'s moves against each opponent
    spec, `num_games` games each (half as first player). See `Evaluation`.

    `elo`: None, or the Elo estimate's settings {"anchor", "ratings", "game", "game_kwargs"}
    (the config's `eval.elo_anchor`, `eval.elo_ratings`, `game` and `game_kwargs`)."""
    return Evaluation(
        game,
        searcher,
        opponents=opponents,
        num_games=num_games,
        seed=seed,
        engine_timeout=engine_timeout,
        elo=elo,
    )


def ladder_level(spec: str, records: list[dict]) -> int:
    """The simulations the opponent `ladder:N` plays at the next evaluation after `records`.

    It starts at N and rises by N after each evaluation whose games the agent all won; the
    records (a run's metrics, iterations in order) hold the level each evaluation played at.
    """
    _, step = parse_opponent_spec(spec)
    for record in reversed(records):
        level = record.get(f"eval/{spec}/simulations")
        if level is not None:
            games = record[f"eval/{spec}/games"]
            won_all = round(record[f"eval/{spec}/win_rate"] * games) == games
            return int(level) + (step if won_all else 0)
    return step


class Evaluation:
    """`evaluate(variables, iteration) -> metrics`: the agent against each opponent.

    Opponents play batched matches on the device (one compiled match each), except outside
    engines (`gtp:...`, `uci:...`), which play `num_games` host games one at a time. The
    opponent `previous` is the network of the previous evaluation (at a session's first
    evaluation: the network the session started from, see `begin`), with 2 random opening
    plies since both sides are deterministic. The opponent `ladder:N` is pure MCTS at a level
    that starts at N simulations and rises by N after each evaluation the agent won every
    game of (AlphaZero_Gomoku's schedule); each level compiles its own match, once. Metrics
    per opponent OPP: `eval/OPP/win_rate`, `draw_rate`, `loss_rate`, `score` and `games`, and
    for a ladder `eval/OPP/simulations` (the level played); with `elo` settings, the agent's
    Elo against the fixed opponents `eval/elo`, `eval/elo_low`, `eval/elo_high`
    (`ratings.anchors`).
    """

    def __init__(self, game, searcher, *, opponents, num_games, seed, engine_timeout, elo=None):
        self.game, self.num_games, self.seed = game, num_games, seed
        self._elo, self._anchors = elo, None  # settings; the anchors' ratings (`begin`)
        self._engine_timeout = engine_timeout
        self._agent = arena.search_player(searcher)
        # The network evaluations of one move of the agent: its root and each simulation.
        self._move_evaluations = 1 + int(searcher.num_simulations)
        self._previous = None
        self._matches, self._engines = {}, {}
        self._ladders, self._ladder_matches = {}, {}  # spec -> level; simulations -> match
        for spec in opponents:
            kind, argument = parse_opponent_spec(spec)
            if kind == "engine":
                argument.require_plays(game, f"opponent {spec}")
                self._engines[spec] = argument
                continue
            if kind == "ladder":
                self._ladders[spec] = argument
                continue
            if kind == "previous":
                opponent, params, opening = self._agent, None, 2
            else:
                (opponent, params), opening = make_opponent(game, spec), 0
            match = arena.make_match(
                game, self._agent, opponent, num_games=num_games, opening_plies=opening
            )
            self._matches[spec] = (jax.jit(match), params)
        self._host_agent = jax.jit(self._agent) if self._engines else None
        self._step = jax.jit(game.step)  # host games: one compilation for all evaluations

    def fork(self, *, seed: int) -> "Evaluation":
        """An evaluation of another agent with the same opponents and compiled matches but
        its own state (`previous`, ladder levels) and `seed` (a population's members)."""
        forked = copy.copy(self)
        forked.seed, forked._previous, forked._ladders = seed, None, dict(self._ladders)
        return forked

    def begin(
        self,
        variables,
        records: list[dict] | None = None,
        workdir=None,
        *,
        anchors_from: "Evaluation | None" = None,
    ) -> None:
        """Starts a session: sets the network `previous` stands for until the next evaluation,
        each ladder's level from the run's metrics records so far (a resumed run goes on
        where the ladder stood), and the Elo anchors' ratings (calibrated in `workdir` the
        first time, see `calibrate`; or those of `anchors_from`, begun already, so that
        a population's members are rated on one scale without calibrating K times)."""
        self._previous = variables
        for spec in self._ladders:
            self._ladders[spec] = ladder_level(spec, records or [])
        self._anchors = None
        if anchors_from is not None:
            self._anchors = anchors_from._anchors
            return
        specs = anchors.anchor_specs([*self._matches, *self._engines])
        if self._elo is None or not specs:
            return
        if self._elo["ratings"]:
            self._anchors = ratings_from_file(self._elo["ratings"], specs)
            return
        anchor = self._elo["anchor"] or anchors.default_anchor(specs)
        if anchor not in specs:
            raise UserError(f"eval.elo_anchor {anchor!r} is not a fixed opponent ({specs})")
        self._anchors = calibrate(
            workdir,
            self._elo["game"],
            self._elo["game_kwargs"],
            specs,
            anchor=anchor,
            games_per_pair=self.num_games,
            seed=self.seed,
        )

    def _ladder_match(self, simulations: int):
        """The compiled match of the agent against pure MCTS at `simulations`."""
        if simulations not in self._ladder_matches:
            opponent = search_player(make_mcts_baseline(self.game, num_simulations=simulations))
            match = arena.make_match(self.game, self._agent, opponent, num_games=self.num_games)
            self._ladder_matches[simulations] = jax.jit(match)
        return self._ladder_matches[simulations]

    def _outcomes(self, spec: str, variables, key) -> tuple[list[float], int]:
        """The agent's outcomes against `spec` and the run's network evaluations they took.

        A device match searches with the agent in half of the games at every ply until the
        longest game ends (ended games included: the batch keeps its shape); against
        `previous` both sides are the run's network."""
        if spec in self._engines:
            return self._engine_outcomes(spec, variables, key)
        if spec in self._ladders:
            match, params = self._ladder_match(self._ladders[spec]), None
        else:
            match, params = self._matches[spec]
        if spec == "previous":
            params = variables if self._previous is None else self._previous
        result = jax.device_get(match(variables, params, key))
        sides = 2 if spec == "previous" else 1
        plies = int(np.max(result.lengths))
        evaluations = sides * plies * (self.num_games // 2) * self._move_evaluations
        return list(result.outcomes), evaluations

    def _engine_outcomes(self, spec: str, variables, key) -> tuple[list[float], int]:
        outcomes, _, moves = arena.engine_outcomes(
            self.game,
            self._host_agent,
            variables,
            self._engines[spec],
            num_games=self.num_games,
            key=key,
            seed=self.seed,
            timeout=self._engine_timeout,
            step=self._step,
        )
        return outcomes, moves * self._move_evaluations

    def __call__(self, variables, iteration: int) -> dict:
        results, outcomes, evaluations = {}, {}, 0
        for index, spec in enumerate([*self._matches, *self._engines, *self._ladders]):
            key = jax.random.fold_in(jax.random.PRNGKey(self.seed + 1), iteration * 64 + index)
            outcomes[spec], spent = self._outcomes(spec, variables, key)
            evaluations += spent
            summary = arena.summarize(outcomes[spec])
            games = summary.games
            results[f"eval/{spec}/win_rate"] = summary.wins / games
            results[f"eval/{spec}/draw_rate"] = summary.draws / games
            results[f"eval/{spec}/loss_rate"] = summary.losses / games
            results[f"eval/{spec}/score"] = summary.score
            results[f"eval/{spec}/games"] = games
            if spec in self._ladders:
                results[f"eval/{spec}/simulations"] = self._ladders[spec]
                self._ladders[spec] = ladder_level(spec, [results])
        if self._anchors:
            results.update(anchors.estimate(outcomes, self._anchors))
        self._previous = variables
        results["eval_evaluations"] = evaluations  # the run's compute (`compute`)
        return results


def ratings_from_file(path: str | Path, specs: list[str]) -> dict[str, float]:
    """The anchors' ratings as a tournament's ratings file gives them.

    Raises:
      UserError: no ratings file at `path`, or one that does not rate an anchor.
    """
    given = tournament.read_elo(path)
    missing = [s for s in specs if s not in given or not np.isfinite(given[s])]
    if missing:
        raise UserError(f"the ratings in {path} do not rate the anchor {missing[0]!r}")
    return {s: float(given[s]) for s in specs}


def calibrate(
    workdir: str | Path,
    game_name: str,
    game_kwargs: dict,
    specs: list[str],
    *,
    anchor: str,
    games_per_pair: int,
    seed: int,
    quiet: bool = False,
) -> dict[str, float]:
    """Rates the anchors by a round robin among them in `workdir/eval_anchors` (resumed if
    interrupted), `anchor` at 0. A cloud workdir's tournament is played in a local folder
    and copied there when it ends (one interrupted before that starts again)."""
    if len(specs) == 1:
        return {specs[0]: 0.0}
    directory = workdir_path(workdir) / CALIBRATION_DIR
    if not quiet:
        _log.info("rating the Elo anchors %s in %s", ", ".join(specs), directory)
    with contextlib.ExitStack() as stack:
        local = directory
        if not is_local(directory):
            local = Path(stack.enter_context(tempfile.TemporaryDirectory())) / CALIBRATION_DIR
            copy_tree(directory, local)  # a finished tournament is read, not played again
        ratings = tournament.run(
            local,
            specs,
            game=game_name,
            game_kwargs=game_kwargs,
            games_per_pair=games_per_pair,
            batch_size=games_per_pair,
            seed=seed,
            anchor=anchor,
            quiet=quiet,
        )
        if local != directory:
            copy_tree(local, directory)
    return {s: float(ratings.elo[ratings.players.index(s)]) for s in specs}


_EVALUATIONS: dict = {}


def evaluation_for(settings: Settings, pipeline: Pipeline) -> Evaluation:
    """The run's evaluation, shared between runs of this process with the same settings
    (`Settings.evaluation_key`)."""
    key = ("eval", settings.pipeline_key, settings.evaluation_key)
    evaluation = settings.eval
    # A `workdir:` opponent is read from disk: its checkpoint may have changed since.
    if any(parse_opponent_spec(s)[0] == "workdir" for s in evaluation.opponents):
        _EVALUATIONS.pop(key, None)
    if key not in _EVALUATIONS:
        searcher = settings.agent.searcher(pipeline.eval_game, pipeline.network)
        _EVALUATIONS[key] = make_evaluation(
            pipeline.eval_game,
            searcher,
            opponents=evaluation.opponents,
            num_games=evaluation.num_games,
            seed=evaluation.seed,
            elo=evaluation.elo,
        )
    return _EVALUATIONS[key]
