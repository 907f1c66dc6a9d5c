"""The optional parts of azjax and the packages each needs, for one-line errors.

Training, evaluation, self-play, `play`, `gtp`, `uci` and the zoo need only the core
install (`pip install azjax`). The rest are extras (`pip install 'azjax[sweep,serve]'`):

    sweep     Optuna: `azjax sweep`, populations with PBT studies, sweep reports
    plots     pandas and matplotlib: `azjax plot`, tables, tournaments, notebooks' figures
    render    CairoSVG and Pillow: PNG pictures and GIFs of games
    serve     Starlette and uvicorn: `azjax serve`, the web board
    gcs       gcsfs and google-cloud-storage: `gs://` workdirs
    wandb     Weights & Biases, mlflow MLflow: trackers beside TensorBoard (`train.loggers`)
    postgres  psycopg2: sweep studies in PostgreSQL
    solver    bitbully: the Connect Four solver (the opponent `solver`, `azjax mistakes`)

A command that reaches a missing one stops with one line naming the extra to install.
Standard library only: the lowest layer.
"""

import importlib
import importlib.util

__all__ = ["EXTRAS", "installed", "missing_extra", "require"]

# The top-level module each optional package installs, and the extra that installs it.
EXTRAS = {
    "optuna": "sweep",
    "sqlalchemy": "sweep",
    "pandas": "plots",
    "matplotlib": "plots",
    "cairosvg": "render",
    "PIL": "render",
    "starlette": "serve",
    "uvicorn": "serve",
    "h11": "serve",
    "gcsfs": "gcs",
    "google.cloud": "gcs",  # google-cloud-storage (google.protobuf is a core dependency's)
    "psycopg2": "postgres",
    "wandb": "wandb",
    "mlflow": "mlflow",
    "bitbully": "solver",
}


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """One line naming the extra that installs the module `error` misses, or None where the
    module is no optional package of azjax's (a broken install: let it show)."""
    parts = (error.name or "").split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if (extra := EXTRAS.get(name)) is not None:
            return f"{name} is not installed: pip install 'azjax[{extra}]' (the {extra} extra)"
    return None


def installed(*modules: str) -> bool:
    """Whether every one of `modules` can be imported (without importing it)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):  # a module hidden or half-installed
        return False


def require(*modules: str) -> None:
    """Imports `modules` (optional packages) and raises ModuleNotFoundError with the
    `missing_extra` line, keeping the module's name, where one is not installed."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            message = missing_extra(error)
            if message is None:
                raise
            raise ModuleNotFoundError(message, name=error.name) from None
