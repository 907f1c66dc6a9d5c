"""azjax: a JAX-native AlphaZero research codebase.

The public Python API, for notebooks and scripts::

    import azjax

    game = azjax.make_game("connect_four")
    config = azjax.load_config("connect_four")          # an experiment's ConfigDict
    azjax.apply_overrides(config, {"search.num_simulations": "64"})
    azjax.train(config, "runs/c4")                      # a progress bar; resumes a run
    agent = azjax.load_agent("runs/c4", num_simulations=200)
    metrics = azjax.load_metrics("runs/c4")              # a pandas DataFrame
    ratings = azjax.load_ratings("tournaments/c4")       # `azjax tournament`'s Elo table

Names are imported on first use, so `import azjax` stays fast and does not load jax. These
names, `__all__`, are the API, kept across versions, and the only attributes `azjax`
resolves by itself. The wings (`azjax.games`, `azjax.core`, `azjax.config`, `azjax.runs`,
`azjax.matches`, `azjax.training`, `azjax.apps`) hold the rest, imported by name
(`import azjax.games`, `from azjax.core import search`): the codebase a researcher reads and
changes, not an API, whose modules may move or change between versions (CHANGELOG.md says
how).
"""

import importlib

from azjax import xla_flags

xla_flags.apply()  # before jax starts: XLA:CPU's library fusions off (see the module)

__version__ = "0.1.0"

# public name -> (module, attribute)
_EXPORTS = {
    "make_game": ("azjax.games", "make"),
    "game_names": ("azjax.games", "names"),
    "Game": ("azjax.games", "Game"),
    "State": ("azjax.games", "State"),
    "notation": ("azjax.games.notation", None),
    "base_config": ("azjax.config", "base_config"),
    "load_config": ("azjax.config", "load_config"),
    "apply_overrides": ("azjax.config", "apply_overrides"),
    "validate_config": ("azjax.config", "validate"),
    "make_pipeline": ("azjax.config.build", "make_pipeline"),
    "make_hyperparams": ("azjax.config.build", "make_hyperparams"),
    "Pipeline": ("azjax.core.steps", "Pipeline"),
    "Hyperparams": ("azjax.core.steps", "Hyperparams"),
    "TrainerState": ("azjax.core.steps", "TrainerState"),
    "init_state": ("azjax.core.steps", "init_state"),
    "play_step": ("azjax.core.steps", "play_step"),
    "learn_step": ("azjax.core.steps", "learn_step"),
    "Agent": ("azjax.matches.agent", "Agent"),
    "load_agent": ("azjax.matches.agent", "load_agent"),
    "make_opponent": ("azjax.matches.agent", "make_opponent"),
    "make_match": ("azjax.matches.arena", "make_match"),
    "summarize": ("azjax.matches.arena", "summarize"),
    "make_search": ("azjax.core.search", "make_search"),
    "make_mcts_baseline": ("azjax.matches.mcts_baseline", "make_mcts_baseline"),
    "SearchParams": ("azjax.core.search", "SearchParams"),
    "SearchOutput": ("azjax.types", "SearchOutput"),
    "Batch": ("azjax.types", "Batch"),
    "UserError": ("azjax.errors", "UserError"),
    "train": ("azjax.apps.api", "train"),
    "train_population": ("azjax.apps.api", "train_population"),
    "evaluations": ("azjax.runs.directory", "evaluations"),
    "opponents": ("azjax.runs.directory", "opponents"),
    "read_metrics": ("azjax.runs.metrics", "read_metrics"),
    "load_metrics": ("azjax.runs.directory", "load_metrics"),
    "list_checkpoints": ("azjax.runs.directory", "list_checkpoints"),
    "export_state": ("azjax.runs.export_state", "export"),
    "load_run_config": ("azjax.config", "load_run_config"),
    "plot_run": ("azjax.runs.plots", "plot_run"),
    "plot_runs": ("azjax.runs.plots", "plot_runs"),
    "plot_ratings": ("azjax.runs.plots", "plot_ratings"),
    "fit_ratings": ("azjax.matches.ratings", "fit"),
    "load_ratings": ("azjax.matches.tournament", "load_ratings"),
}

__all__ = ["__version__", *_EXPORTS]

# The wings, lowest first: a module imports only from its own wing and the wings before it
# (tests/test_layers.py reads this and checks every import, wherever it stands). A word
# names a module or a folder of azjax.
_WINGS = (
    # plain Python helpers
    "errors types extras interrupt faults paths stats compile_cache xla_flags",
    "games",  # rules as pure JAX, notation, drawings
    "core",  # networks, search, self-play, replay, learner, steps: pure functions
    "config",  # the typed config and the one mapping from config to core objects
    "runs",  # a run's directory: checkpoints, metrics, trackers, processes, plots
    "matches",  # agents, outside engines, arena, ratings, tournaments, the zoo
    "training",  # compiled steps, the host loop, evaluation, gating, populations
    "apps",  # command line, GTP/UCI engines, web board, sweeps, benchmarks
)


def __getattr__(name: str):
    """A name of `__all__`, imported on first use; any other name is no attribute (a wing is
    imported by name: `import azjax.games`)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'azjax' has no attribute {name!r}")
    module_name, attribute = _EXPORTS[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
