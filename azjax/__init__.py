"""azjax: a JAX-native AlphaZero research codebase.

The public Python API, for notebooks and scripts::

    import azjax

    game = azjax.make_game("connect_four")
    config = azjax.load_config("connect_four")          # an experiment's ConfigDict
    azjax.apply_overrides(config, {"search.num_simulations": "64"})
    azjax.train.train(config, "runs/c4")                 # a progress bar; resumes a run
    agent = azjax.load_agent("runs/c4", num_simulations=200)
    metrics = azjax.load_metrics("runs/c4")              # a pandas DataFrame
    ratings = azjax.load_ratings("tournaments/c4")       # `azjax tournament`'s Elo table

Names are imported on first use, so `import azjax` stays fast and does not load jax. The
modules (`azjax.train`, `azjax.selfplay`, ...) are the rest of the API.
"""

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute)
_EXPORTS = {
    "make_game": ("azjax.games", "make"),
    "game_names": ("azjax.games", "names"),
    "Game": ("azjax.games", "Game"),
    "State": ("azjax.games", "State"),
    "notation": ("azjax.notation", None),
    "base_config": ("azjax.config", "base_config"),
    "load_config": ("azjax.config", "load_config"),
    "apply_overrides": ("azjax.config", "apply_overrides"),
    "validate_config": ("azjax.config", "validate"),
    "make_pipeline": ("azjax.build", "make_pipeline"),
    "make_hyperparams": ("azjax.build", "make_hyperparams"),
    "Pipeline": ("azjax.build", "Pipeline"),
    "Hyperparams": ("azjax.build", "Hyperparams"),
    "TrainerState": ("azjax.steps", "TrainerState"),
    "init_state": ("azjax.steps", "init_state"),
    "play_step": ("azjax.steps", "play_step"),
    "learn_step": ("azjax.steps", "learn_step"),
    "Agent": ("azjax.agent", "Agent"),
    "load_agent": ("azjax.agent", "load_agent"),
    "make_opponent": ("azjax.agent", "make_opponent"),
    "make_match": ("azjax.arena", "make_match"),
    "summarize": ("azjax.arena", "summarize"),
    "make_search": ("azjax.search", "make_search"),
    "make_mcts_baseline": ("azjax.mcts_baseline", "make_mcts_baseline"),
    "SearchParams": ("azjax.search", "SearchParams"),
    "SearchOutput": ("azjax.types", "SearchOutput"),
    "Batch": ("azjax.types", "Batch"),
    "UserError": ("azjax.types", "UserError"),
    "read_metrics": ("azjax.metrics", "read_metrics"),
    "load_metrics": ("azjax.runs", "load_metrics"),
    "list_checkpoints": ("azjax.runs", "list_checkpoints"),
    "load_run_config": ("azjax.runs", "load_run_config"),
    "plot_run": ("azjax.plots", "plot_run"),
    "plot_runs": ("azjax.plots", "plot_runs"),
    "plot_ratings": ("azjax.plots", "plot_ratings"),
    "fit_ratings": ("azjax.ratings", "fit"),
    "load_ratings": ("azjax.tournament", "load_ratings"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name not in _EXPORTS:
        try:  # a module: `azjax.train.train(...)` works after a plain `import azjax`
            return importlib.import_module(f"azjax.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"azjax.{name}":
                raise  # the module exists but needs something missing
            raise AttributeError(f"module 'azjax' has no attribute {name!r}") from None
    module_name, attribute = _EXPORTS[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
