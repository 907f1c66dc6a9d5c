"""Training's Elo estimate: the agent rated against fixed anchors (`eval/elo`).

The anchors are the evaluation opponents that never change: `random`, `minimax`, `mcts:N`
and outside engines (`gtp:...`, `uci:...`); not `previous`, `ladder:N` or a run's
checkpoint, which move. Their ratings are fixed once per run, before its first evaluation
(`azjax.training.evaluation`):

- by a calibration tournament among the anchors (`WORKDIR/eval_anchors/`, an ordinary
  tournament directory: `eval.num_games` games per pair, resumable, its ratings table in
  `ratings.csv`), rated with `eval.elo_anchor` at 0 (default: the first `mcts:N` opponent,
  else the first anchor; `evaluation.calibrate`); or
- from a ratings file a tournament wrote (`eval.elo_ratings=PATH/ratings.csv`), so that
  several runs share one scale (`evaluation.ratings_from_file`).

At each evaluation the agent's games against the anchors are fitted with the anchors held
at those ratings (Bradley-Terry, one free rating, `ratings.elo.fit(fixed=...)`), giving
`eval/elo` with its 95% interval `eval/elo_low`, `eval/elo_high`.

A pair of anchors where one wins every calibration game (random against mcts:200 in Connect
Four, say) has a gap that only the prior bounds (see `ratings.elo`); the rating of the
weaker one is then loose. That is why the default anchor is an MCTS player rather than
random: the agent's estimate leans on the anchors it scores between 0 and 1 against.
"""

from azjax.config.opponents import parse_opponent_spec
from azjax.matches.ratings.elo import fit


def anchor_specs(opponents) -> list[str]:
    """The evaluation opponents that can anchor the Elo estimate (they never change)."""
    fixed = ("random", "minimax", "mcts", "engine")
    return [spec for spec in opponents if parse_opponent_spec(spec)[0] in fixed]


def default_anchor(specs: list[str]) -> str:
    """The anchor rated 0: the first pure MCTS opponent, else the first anchor."""
    return next((s for s in specs if s.startswith("mcts:")), specs[0])


def estimate(outcomes: dict[str, list[float]], anchors: dict[str, float]) -> dict[str, float]:
    """`eval/elo`, `eval/elo_low`, `eval/elo_high` of the agent from its outcomes (+1 win,
    0 draw, -1 loss, the agent's view) against the anchors, whose ratings stay fixed."""
    games = [
        ("agent", spec, (outcome + 1.0) / 2.0)
        for spec, results in outcomes.items()
        if spec in anchors
        for outcome in results
    ]
    if not games:
        return {}
    first = next(iter(anchors))
    ratings = fit(games, anchor=first, fixed={s: r - anchors[first] for s, r in anchors.items()})
    low, high = ratings.interval("agent")
    shift = anchors[first]  # back onto the anchors' scale
    elo = ratings.elo[ratings.players.index("agent")]
    return {"eval/elo": elo + shift, "eval/elo_low": low + shift, "eval/elo_high": high + shift}
