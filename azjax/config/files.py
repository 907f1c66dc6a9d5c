"""Where experiment and sweep space files are found and how they load: the packaged ones
(`experiments/`, `azjax/apps/spaces/`) by name, a path to any file, `file.py:variant`.
`config.load_config` and `sweeps.load_space` build on these."""

import importlib.util
from pathlib import Path

from azjax.types import UserError

__all__ = [
    "EXPERIMENTS_DIR",
    "experiment_names",
    "file_names",
    "find_experiment",
    "find_file",
    "load_module",
    "split_variant",
]

# The packaged experiment files (one get_config() each): the repository's experiments/,
# installed as `azjax.experiments` (pyproject.toml maps it into the package).
EXPERIMENTS_DIR = Path(importlib.util.find_spec("azjax.experiments").submodule_search_locations[0])


def load_module(path: Path, what: str):
    """Executes the Python file `path` (an experiment, a sweep's space) as a module.

    Raises:
      UserError: the file fails to load (the user's to fix), named as `what`.
    """
    name = f"azjax_{what.split()[0]}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise UserError(f"cannot load {what} {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise UserError(f"cannot load {what} {path}: {error}") from None
    return module


def split_variant(path: str) -> tuple[str, str | None]:
    """Splits `file.py:variant` (Flax's and big_vision's way) into the file and the variant."""
    head, sep, tail = path.rpartition(":")
    if sep and head and tail and "/" not in tail:
        return head, tail
    return path, None


def experiment_names() -> list[str]:
    """The experiments shipped with azjax (`experiments/NAME.py`), sorted."""
    return file_names(EXPERIMENTS_DIR)


def file_names(folder: Path) -> list[str]:
    """The names of the Python files in `folder` (their stems, `__init__` left out), sorted."""
    return sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_"))


def find_file(text: str, folder: Path, legacy: str, what: str) -> Path:
    """The file that `text` names: a path to a file, else one of azjax's files in `folder`.

    In order: `text` as a path, when that file exists; a bare name (`connect_four` or
    `connect_four.py`) as `LEGACY/NAME.py` of the working folder, then as `folder/NAME.py`;
    any other path whose folder is named `legacy` (`experiments/connect_four.py`, the
    repository's old layout) as `folder/` and its file name.

    Args:
      text: what the user gave (`--config`, `--space`).
      folder: the packaged files (`EXPERIMENTS_DIR`, `SPACES_DIR`).
      legacy: the folder name they had in the repository (`experiments`, `sweeps`).
      what: the kind of file, for the error (`experiment config`, `space file`).

    Raises:
      UserError: nothing found; the message lists the packaged names.
    """
    path = Path(text)
    if path.is_file():
        return path
    name = path.name if path.suffix == ".py" else f"{path.name}.py"
    if text and len(path.parts) == 1:
        for candidate in (Path.cwd() / legacy / name, folder / name):
            if candidate.is_file():
                return candidate
    elif path.parent.name == legacy and (folder / name).is_file():
        return folder / name
    known = ", ".join(file_names(folder)) or "none"
    raise UserError(f"{what} {text!r} not found: no such file, nor one of azjax's ({known})")


def find_experiment(path: str) -> Path:
    """The experiment file (or run config.json) that `path` names; see `find_file`.

    A run directory stands for its `config.json`.

    Raises:
      UserError: nothing found.
    """
    if Path(path).is_dir() and (Path(path) / "config.json").is_file():
        return Path(path) / "config.json"
    return find_file(path, EXPERIMENTS_DIR, "experiments", "experiment config")
