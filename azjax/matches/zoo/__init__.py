"""The zoo: trained agents shipped inside the package, so a new user plays at once.

Each agent is a folder `azjax/matches/zoo/agents/NAME/` holding

    config.json   the resolved config of the run that trained it
    params.npz    its network variables, bfloat16 (compressed npz; float32 when loaded)
    card.json     game, iteration, training time, the command that trained it, and its
                  score and Elo with 95% intervals against fixed opponents and outside
                  engines (`azjax zoo`)

`azjax.load_agent("zoo:NAME")`, `--agent NAME` on the commands that take `--workdir`, and
`zoo:NAME` as an opponent or tournament player load one. `azjax zoo --export RUN --name NAME`
(`azjax/matches/zoo/export.py`) rates a run's newest checkpoint and writes its folder; `azjax zoo
--rate NAME --opponents ...` adds ratings to a shipped agent's card.
"""

import dataclasses
import json
import math
import os
import stat
import zipfile
import zlib
from pathlib import Path

import jax
import ml_dtypes
import numpy as np

from azjax.config import saved
from azjax.config.settings import Settings
from azjax.paths import read_json
from azjax.types import UserError

__all__ = [
    "PREFIX",
    "Card",
    "Damaged",
    "card",
    "cards",
    "is_zoo",
    "load",
    "names",
    "read_settings",
    "save",
]

PREFIX = "zoo:"
AGENTS = Path(__file__).resolve().parent / "agents"
FILES = ("config.json", "params.npz", "card.json")
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_CARD_LIMIT = 2**20  # bytes: a card is a few kilobytes


@dataclasses.dataclass(frozen=True)
class Card:
    """What `azjax zoo` shows of one agent.

    Attributes:
      name, game: the agent's name and its game (a registered game name).
      iteration: the checkpoint's training iteration.
      train_minutes: wall-clock training time, evaluations included.
      command: the command that trained it.
      cpu: the processor it was trained on.
      ratings: per fixed opponent or outside engine {opponent, games, wins, draws, losses,
        score, low, high, elo, elo_low, elo_high}, and for an engine `forfeits` (games it
        lost by failing, resigning or an illegal move); the agent at its config's
        evaluation simulations.
      notes: anything else worth knowing (a goal missed, a rule set).
    """

    name: str
    game: str
    iteration: int
    train_minutes: float
    command: str
    cpu: str
    ratings: tuple[dict, ...] = ()
    notes: str = ""

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "ratings": list(self.ratings)}


@dataclasses.dataclass(frozen=True)
class Damaged:
    """An agent of the zoo that cannot be read: its name and the one-line reason."""

    name: str
    reason: str


def is_zoo(source) -> bool:
    return isinstance(source, str) and source.startswith(PREFIX)


def names() -> list[str]:
    """The shipped agents' names, sorted: the folders holding any of an agent's files (one
    with a file missing or damaged too, so that loading it says what is wrong)."""
    if not AGENTS.is_dir():
        return []
    return sorted(
        p.name
        for p in AGENTS.iterdir()
        if p.is_dir() and any(os.path.lexists(p / file) for file in FILES)
    )


def agent_folder(name: str) -> Path:
    """The folder of the shipped agent `name` (`zoo:NAME` too).

    Raises:
      UserError: no such agent.
    """
    name = name.removeprefix(PREFIX)
    if name not in names():
        known = ", ".join(names()) or "none"
        raise UserError(f"no zoo agent {name!r} (the zoo has: {known})")
    return AGENTS / name


def _file(folder: Path, file: str) -> Path:
    """An agent's file, checked to be a regular, non-empty file (never opened otherwise: a
    FIFO would block the read).

    Raises:
      UserError: missing, empty or not a regular file; one line naming agent and file.
    """
    path = folder / file
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"zoo agent {folder.name}: {file} is missing ({path})") from None
    except OSError as error:
        raise UserError(f"zoo agent {folder.name}: cannot read {path}: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"zoo agent {folder.name}: {path} is not a regular file")
    if info.st_size == 0:
        raise UserError(f"zoo agent {folder.name}: {path} is empty")
    return path


def card(name: str) -> Card:
    """The card of the shipped agent `name` (`zoo:NAME` too).

    Raises:
      UserError: no such agent, or a card that is missing or damaged (one line naming it).
    """
    folder = agent_folder(name)
    path = _file(folder, "card.json")
    data = read_json(path, limit=_CARD_LIMIT, what=f"zoo agent {folder.name}: {path}")
    problem = _card_problem(data)
    if problem:
        raise UserError(f"zoo agent {folder.name}: {path} is damaged: {problem}")
    return Card(**{**data, "ratings": tuple(data.get("ratings", ()))})


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


# A card's fields and their checks; ratings and notes may be left out.
_CARD_FIELDS = {
    "name": lambda v: isinstance(v, str),
    "game": lambda v: isinstance(v, str),
    "iteration": lambda v: _is_int(v) and v >= 0,
    "train_minutes": lambda v: _is_number(v) and v >= 0,
    "command": lambda v: isinstance(v, str),
    "cpu": lambda v: isinstance(v, str),
    "ratings": lambda v: isinstance(v, list),
    "notes": lambda v: isinstance(v, str),
}
# A rating's fields (`export._rating`) and their checks; `forfeits` may be left out.
_RATING_FIELDS = {
    "opponent": lambda v: isinstance(v, str),
    **{key: lambda v: _is_int(v) and v >= 0 for key in ("games", "wins", "draws", "losses")},
    **{key: _is_number for key in ("score", "low", "high")},
    **{key: lambda v: v is None or _is_number(v) for key in ("elo", "elo_low", "elo_high")},
    "forfeits": lambda v: _is_int(v) and v >= 0,
}


def _card_problem(data) -> str | None:
    """What is wrong with a card's JSON (None: nothing)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for key, value in data.items():
        if key not in _CARD_FIELDS:
            return f"an unknown field {key!r}"
        if not _CARD_FIELDS[key](value):
            return f"a bad {key!r}"
    missing = [key for key in _CARD_FIELDS if key not in data and key not in ("ratings", "notes")]
    if missing:
        return f"no {missing[0]!r}"
    for number, rating in enumerate(data.get("ratings", ()), 1):
        if not isinstance(rating, dict):
            return f"rating {number} is not a JSON object"
        for key in _RATING_FIELDS:
            if key == "forfeits" and key not in rating:
                continue
            if key not in rating or not _RATING_FIELDS[key](rating[key]):
                return f"rating {number} has no valid {key!r}"
    return None


def cards() -> list[Card | Damaged]:
    """Every agent's card, sorted by name; a `Damaged` in place of an agent whose files are
    missing or damaged (its card, or its other files missing, empty or not regular files)."""
    listed = []
    for name in names():
        try:
            folder = agent_folder(name)
            for file in FILES:
                _file(folder, file)
            listed.append(card(name))
        except UserError as error:
            listed.append(Damaged(name, str(error).removeprefix(f"zoo agent {name}: ")))
    return listed


def read_settings(name: str, *, overrides: dict[str, str] | None = None) -> Settings:
    """The records of the config a zoo agent was trained with, with `overrides`
    (`config.apply_overrides`).

    Raises:
      UserError: no such agent, or its config.json is missing or damaged (one line).
    """
    folder = agent_folder(name)
    path = _file(folder, "config.json")
    try:
        return saved.read(path, overrides=overrides)
    except UserError as error:
        raise UserError(f"zoo agent {folder.name}: {error}") from None


def load(name: str, *, overrides: dict[str, str] | None = None):
    """(settings, variables, card) of a zoo agent (`read_settings`); the variables in float32
    as the network's `init` lays them out. Only the arrays the network needs are read from
    params.npz, each checked first (a number array of the network's shape, stored in as many
    bytes as that shape needs; never a pickle).

    Raises:
      UserError: no such agent, or its files are damaged or do not fit its config's network
        (one line naming the agent and the file).
    """
    folder = agent_folder(name)
    settings = read_settings(name, overrides=overrides)
    agent_card = card(name)
    like = jax.eval_shape(settings.network.init, jax.random.PRNGKey(0))
    path = _file(folder, "params.npz")
    paths, treedef = jax.tree_util.tree_flatten_with_path(like)
    try:
        # Opened here, a regular file (`_file`), so that numpy never opens anything else.
        with open(path, "rb") as stream:
            stored = np.load(stream, allow_pickle=False)
            if not isinstance(stored, np.lib.npyio.NpzFile):  # an .npy file
                raise ValueError("not an npz archive")
            with stored:
                leaves = [_leaf(stored.zip, at, leaf, folder.name, path) for at, leaf in paths]
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as error:
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        if "pickle" in reason:  # numpy's advice to load it unsafely is not ours to give
            reason = "a pickle, not an npz archive (azjax never loads pickles)"
        raise UserError(f"zoo agent {folder.name}: {path} is damaged: {reason}") from None
    return settings, jax.tree_util.tree_unflatten(treedef, leaves), agent_card


def _leaf(archive: zipfile.ZipFile, key_path, leaf, name: str, path: Path):
    """The network variable at `key_path`, as `leaf` lays it out, from the agent's archive."""
    key = jax.tree_util.keystr(key_path)
    value = _read_array(archive, key, leaf, f"zoo agent {name}: {path}")
    if value.dtype == np.uint16 and leaf.dtype != np.uint16:
        value = value.view(_BFLOAT16)  # floats are stored as bfloat16 bits
    return jax.numpy.asarray(value.astype(leaf.dtype))


def _read_array(archive: zipfile.ZipFile, key: str, leaf, source: str) -> np.ndarray:
    """The array `key` of an npz archive, read only after its header and size check out: a
    number array of `leaf`'s shape whose stored size is what that shape and its dtype need
    (so that a lying member is never decompressed beyond that).

    Raises:
      UserError: the member is missing or does not fit (one line, naming `source`).
      ValueError, zipfile.BadZipFile, zlib.error, EOFError: a damaged member.
    """
    try:
        info = archive.getinfo(key + ".npy")
    except KeyError:
        raise UserError(f"{source} does not fit its network (no array {key})") from None
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f"array {key}: npy format {version} is not supported")
        if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields or dtype.subdtype:
            raise UserError(f"{source} is damaged: array {key} holds {dtype}, not numbers")
        if tuple(shape) != tuple(leaf.shape):
            raise UserError(
                f"{source} does not fit its network ({key}: shape {tuple(shape)}, "
                f"not {tuple(leaf.shape)})"
            )
        size = math.prod(shape) * dtype.itemsize
        if info.file_size != member.tell() + size:
            raise UserError(
                f"{source} is damaged: array {key} holds {info.file_size - member.tell()} "
                f"bytes, not the {size} of its shape and dtype"
            )
        data = member.read(size)
        if len(data) != size or member.read(1):  # reading to the end checks the CRC
            raise ValueError(f"array {key} is cut short")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


def save(folder: Path, settings: Settings, variables, agent_card: Card) -> None:
    """Writes an agent's folder: config.json (`settings.config_json`), params.npz (floats as
    bfloat16), card.json."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(jax.device_get(variables))[0]:
        value = np.asarray(leaf)
        if np.issubdtype(value.dtype, np.floating):
            value = value.astype(_BFLOAT16).view(np.uint16)
        arrays[jax.tree_util.keystr(path)] = value
    np.savez_compressed(folder / "params.npz", **arrays)
    (folder / "config.json").write_text(settings.config_json + "\n")
    write_card(folder, agent_card)


def write_card(folder: Path, agent_card: Card) -> None:
    """Writes an agent's card.json."""
    (folder / "card.json").write_text(json.dumps(agent_card.to_json(), indent=2) + "\n")
