"""The config's key tables: which keys a resumed run may change, which change what a run
computes without changing its compiled functions, which were added after runs were saved
(and the values older runs used), and which reach the step functions as arguments.
`config` reads them for resuming, loading old configs and the compiled-function cache key."""

__all__ = ["ADDED_KEYS", "GATING_KEYS", "OLD_VALUES", "RESUMABLE_KEYS", "TUNABLE_KEYS"]

# Keys that may change when resuming without changing what the run computes: the iteration
# budget, checkpoint cadence and evaluation. Also left out of the compiled-function cache key.
RESUMABLE_KEYS = (
    "train.num_iterations",
    "train.max_minutes",
    "train.checkpoint_every",
    "train.keep_checkpoints",
    "train.loggers",
    "train.wandb_project",
    "train.mlflow_uri",
    "train.profile",
    "eval.every",
    "eval.num_games",
    "eval.opponents",
    "eval.num_simulations",
    "eval.elo",
    "eval.elo_anchor",
    "eval.elo_ratings",
)
# Keys that change what a run computes (not resumable) but not its compiled step functions:
# gating decides which network self-play passes to them. Left out of the cache key. Also
# `train.gating_every`: another cadence picks other best networks, so other self-play games.
GATING_KEYS = (
    "train.gating",
    "train.gating_every",
    "train.gating_games",
    "train.gating_threshold",
)
# Keys added after runs were saved: a config.json without them gets their defaults, which
# compute what those runs computed, or the value given here where the default changed.
ADDED_KEYS = (
    *GATING_KEYS,
    "train.loggers",
    "train.wandb_project",
    "train.mlflow_uri",
    "train.profile",
    "eval.elo",
    "eval.elo_anchor",
    "eval.elo_ratings",
    "network.dtype",
    "learner.value_loss_weight",
    "search.tree_reuse",
    "search.symmetric_eval",
    "search.forced_playouts",
    "selfplay.full_search_fraction",
    "selfplay.cheap_simulations",
    "selfplay.resign",
    "selfplay.resign_threshold",
    "selfplay.resign_check_fraction",
    "selfplay.resign_false_positives",
    "learner.value_target_mix",
    "learner.kl_target",
    "selfplay.draw_adjudication",
    "selfplay.win_adjudication",
    "selfplay.random_move_fraction",
    "selfplay.handicap_starts",
    "network.global_pooling",
    "learner.ownership_weight",
    "learner.score_weight",
    "selfplay.game_kwargs",
    "search.gumbel_value_scale",
    "search.win_check",
)
OLD_VALUES = {
    "search.tree_reuse": False,
    "selfplay.full_search_fraction": 1.0,
    "selfplay.resign": False,
    "learner.value_target_mix": 0.0,
    "learner.kl_target": 0.0,
    "selfplay.game_kwargs": {},
}
# Keys whose values reach the step functions as arguments (`build.Hyperparams`), not as
# compiled constants; with `name` and `seed` they do not change the compiled functions.
TUNABLE_KEYS = (
    "learner.learning_rate",
    "learner.weight_decay",
    "learner.value_loss_weight",
    "selfplay.temperature_moves",
    "search.dirichlet_alpha",
    "search.dirichlet_fraction",
    "search.pb_c_init",
    "search.pb_c_base",
    "search.gumbel_scale",
)
