"""Hyperparameter sweeps: many runs of one experiment, searched by Optuna.

    azjax sweep --config connect_four --space connect_four \\
        --workdir runs/sweep_c4 --trials 16
    azjax sweep --workdir runs/sweep_c4 --report

From Python (a notebook)::

    from azjax.apps import sweeps

    space = sweeps.load_space("tic_tac_toe")           # or a file, or sweeps.Space(params={...})
    sweeps.run_sweep(config, space, "runs/sweep_ttt", trials=8)
    sweeps.trials_table("runs/sweep_ttt")                  # pandas, best first
    sweeps.write_report("runs/sweep_ttt")                  # PNGs in runs/sweep_ttt/report/

Modules: `space` (the search space file and its checks), `objective` (the metric judged by,
checked against what the runs log), `storage` (the study's storage and the sweep directory's
files), `study` (the Optuna study, its sampler and pruner; anchors rated once per sweep),
`liveness` (heartbeats; abandoned trials claimed and re-queued), `worker` (`run_sweep`: ask,
train, tell), `tell` (what a worker tells Optuna: evaluations, results, failures; the HParams
view), `pod` (a worker over several processes), `report` (table and plots), `arguments` and
`command` (the CLI).
"""

import importlib

from azjax import extras

# public name -> module; imported on first use, so that the command line's parser (which
# imports `azjax.apps.sweeps.arguments`) loads neither Optuna nor jax.
_EXPORTS = {
    "Choice": "azjax.apps.sweeps.space",
    "Int": "azjax.apps.sweeps.space",
    "LogUniform": "azjax.apps.sweeps.space",
    "Space": "azjax.apps.sweeps.space",
    "Uniform": "azjax.apps.sweeps.space",
    "find_space": "azjax.apps.sweeps.space",
    "load_space": "azjax.apps.sweeps.space",
    "load_study": "azjax.apps.sweeps.report",
    "trials_table": "azjax.apps.sweeps.report",
    "write_report": "azjax.apps.sweeps.report",
    "run_sweep": "azjax.apps.sweeps.worker",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'azjax.apps.sweeps' has no attribute {name!r}")
    extras.require("optuna")  # one line naming the [sweep] extra where it is missing
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
