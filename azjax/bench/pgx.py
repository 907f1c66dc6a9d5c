"""pgx's environments for the bench's random-play comparison; pgx is imported when asked for,
so azjax works without it (it is a test dependency)."""

from azjax.bench.measure import Environment

# azjax game name -> pgx environment id, for games both implement with the same rules.
PGX_NAMES = {
    "connect_four": "connect_four",
    "tic_tac_toe": "tic_tac_toe",
    "othello": "othello",
    "go_9x9": "go_9x9",
    "go_19x19": "go_19x19",
}
PGX_MISSING = "pgx not installed"
NO_PGX_GAME = "no pgx game"


def pgx_environment(game_name: str) -> Environment | str:
    """The pgx environment with the same rules as `game_name`, or why there is none
    (`NO_PGX_GAME`, `PGX_MISSING`)."""
    if game_name not in PGX_NAMES:
        return NO_PGX_GAME
    try:
        import pgx  # noqa: PLC0415  (optional)
    except ImportError:
        return PGX_MISSING
    env = pgx.make(PGX_NAMES[game_name])
    return Environment(
        init=env.init,
        step=lambda state, action: env.step(state, action),
        done=lambda state: state.terminated | state.truncated,
        observe=lambda state: state.observation,  # pgx computes it inside step
    )
