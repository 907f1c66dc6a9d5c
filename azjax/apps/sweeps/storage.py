"""Where a sweep's study lives, and the files that make a sweep directory.

A sweep directory holds `sweep.json` (the study's name and storage, the space and the base
config), `space.py` (a copy of the space file), `study.journal` (the embedded Optuna journal
storage, unless `--storage` names a database), `sweep.lock` (serialises claims of abandoned
trials and the rating of the Elo anchors), `anchor_ratings.csv`, `trial_NNNN/` (one run
directory per trial), `tensorboard/` (the HParams view) and `report/`.

The sweep directory may be a cloud URI (`gs://bucket/sweeps/c4`, `paths.workdir_path`) when
the study is in a database (`--storage`): a journal file needs a local file system and its
locks, so a cloud sweep directory with no `--storage` is refused in one line. Such a
directory has no `sweep.lock` (`locked` holds nothing there): a database's row lock makes a
claim atomic without it (see `liveness`), and workers that start at the same moment may each
rate the Elo anchors (the same seeded games) before the first to finish stores its ratings
for all.
"""

import contextlib
import fcntl
import importlib.util
import json
import random
import time
from pathlib import Path

import ml_collections
import optuna

from azjax import config as config_lib
from azjax.config.keys import flatten
from azjax.paths import is_local, read_json, workdir_path, write_atomically
from azjax.types import UserError

SWEEP_FILE = "sweep.json"
SPACE_FILE = "space.py"
JOURNAL_FILE = "study.journal"
LOCK_FILE = "sweep.lock"
STUDY_ATTR = "azjax_sweep"  # the study's user attr holding the space and the base config
CONNECT_TIMEOUT_S = 10
_CREATE_ATTEMPTS = 5


def journal_path(workdir: Path) -> Path:
    return Path(workdir) / JOURNAL_FILE


def check_storage(workdir, url: str | None) -> None:
    """Refuses a journal file on cloud storage (Optuna's journal file needs a local file
    system and its locks): a cloud sweep directory keeps its study in a database.

    Raises:
      UserError: `workdir` is a URI and `url` is None (one line naming `--storage`).
    """
    if url is None and not is_local(workdir_path(workdir)):
        raise UserError(
            f"a sweep in {workdir} needs --storage: the study's journal file cannot live on "
            "cloud storage; keep the study in a database (--storage postgresql://user@host/db, "
            "or sqlite:////local/folder/study.db for one host)"
        )


def open_storage(workdir: Path, url: str | None) -> optuna.storages.BaseStorage:
    """The study's storage: a journal file in `workdir` (several processes of one machine or
    a shared file system), or the database at `url` (postgresql://, mysql://, sqlite://) that
    workers on many hosts share.

    Raises:
      UserError: the database cannot be reached within 10 seconds (one line, password hidden).
    """
    check_storage(workdir, url)
    if url is None:
        from optuna.storages.journal import JournalFileBackend  # noqa: PLC0415

        return optuna.storages.JournalStorage(JournalFileBackend(str(journal_path(workdir))))
    engine_kwargs = {"pool_pre_ping": True}  # a connection idle through a trial may be gone
    if url.startswith(("postgresql", "mysql")):
        engine_kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
    for attempt in range(_CREATE_ATTEMPTS):
        try:
            return optuna.storages.RDBStorage(_with_driver(url), engine_kwargs=engine_kwargs)
        except Exception as error:  # OperationalError, ArgumentError, a missing driver, ...
            # Workers starting together on a new database race to create Optuna's tables;
            # the losers' CREATE fails on a duplicate, and the tables exist when they retry.
            if _lost_create_race(error) and attempt + 1 < _CREATE_ATTEMPTS:
                time.sleep(1.0 + random.random())
                continue
            message = " ".join(str(error).split("\n")[0].split())[:200]
            raise UserError(
                f"cannot open the study storage {hide_password(url)}: {message}"
            ) from None


def _lost_create_race(error: Exception) -> bool:
    """Whether `error` is SQLAlchemy's IntegrityError or ProgrammingError: a CREATE of a
    table that another worker made first."""
    try:
        from sqlalchemy import exc  # noqa: PLC0415
    except ImportError:  # no database storage without SQLAlchemy
        return False
    return isinstance(error, exc.IntegrityError | exc.ProgrammingError)


def _with_driver(url: str) -> str:
    """`postgresql://` through psycopg2 (the `postgres` extra) where psycopg 3, SQLAlchemy
    2.1's default driver, is not installed."""
    scheme, separator, rest = url.partition("://")
    if scheme == "postgresql" and separator and importlib.util.find_spec("psycopg") is None:
        if importlib.util.find_spec("psycopg2") is not None:
            return f"postgresql+psycopg2://{rest}"
    return url


def hide_password(url: str) -> str:
    """`url` with its password (if any) replaced by ***."""
    try:
        import sqlalchemy  # noqa: PLC0415

        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def default_study_name(workdir: Path) -> str:
    """The study of a sweep directory unless named: the directory's name."""
    path = workdir_path(workdir)
    return path.resolve().name if is_local(path) else path.name


@contextlib.contextmanager
def locked(workdir: Path):
    """Holds the sweep directory's lock file (an flock: a killed holder releases it); in a
    cloud sweep directory, nothing (its study is in a database)."""
    path = workdir_path(workdir) / LOCK_FILE
    if not is_local(path):
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def identity(space_description: dict, config: ml_collections.ConfigDict) -> dict:
    """What a sweep is: its space and base config, as JSON-able data."""
    return {"space": space_description, "config": json.loads(config_lib.to_json(config))}


def check_identity(saved: dict, given: dict, where: str) -> None:
    """Refuses to go on with a sweep whose space or config differs from `saved`.

    Raises:
      UserError: one line naming the first difference.
    """
    for part, name in (("space", "space"), ("config", "config")):
        old, new = flatten(saved.get(part, {})), flatten(given[part])
        differences = [
            f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
            for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)
        ]
        if differences:
            more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
            raise UserError(
                f"{where} was started with another {name}: {differences[0]}{more}; use "
                "another --workdir (or --study) for a new sweep"
            )


def read_sweep_file(workdir: Path) -> dict | None:
    path = workdir_path(workdir) / SWEEP_FILE
    try:
        return read_json(path)
    except FileNotFoundError:
        return None


def write_sweep_file(workdir: Path, data: dict) -> None:
    path = workdir_path(workdir) / SWEEP_FILE
    write_atomically(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


def stored_url(workdir: Path, url: str | None) -> str | None:
    """The storage of the sweep in `workdir`: `url` if given, else the one sweep.json names.

    Raises:
      UserError: no sweep there, or its URL had a password (not stored: pass --storage).
    """
    saved = read_sweep_file(workdir)
    if saved is None:
        raise UserError(f"no sweep in {workdir} (no {SWEEP_FILE}); start one with --space")
    if url is not None:
        return url
    url = saved.get("storage")
    if url is not None and "***" in url:
        raise UserError(f"the sweep in {workdir} uses {url}: pass --storage with the password")
    return url
