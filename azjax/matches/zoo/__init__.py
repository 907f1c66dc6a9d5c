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
from pathlib import Path

import jax
import ml_dtypes
import numpy as np

from azjax.config import build, read_config_file, to_json
from azjax.types import UserError

__all__ = ["PREFIX", "Card", "card", "cards", "is_zoo", "load", "names", "read_config", "save"]

PREFIX = "zoo:"
AGENTS = Path(__file__).resolve().parent / "agents"
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


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


def is_zoo(source) -> bool:
    return isinstance(source, str) and source.startswith(PREFIX)


def names() -> list[str]:
    """The shipped agents' names, sorted."""
    if not AGENTS.is_dir():
        return []
    return sorted(p.name for p in AGENTS.iterdir() if (p / "card.json").is_file())


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


def card(name: str) -> Card:
    data = json.loads((agent_folder(name) / "card.json").read_text())
    return Card(**{**data, "ratings": tuple(data.get("ratings", ()))})


def cards() -> list[Card]:
    return [card(name) for name in names()]


def read_config(name: str):
    """The config a zoo agent was trained with."""
    return read_config_file(agent_folder(name) / "config.json")


def load(name: str):
    """(config, variables, card) of a zoo agent; the variables in float32 as the network's
    `init` lays them out.

    Raises:
      UserError: no such agent, or its files do not fit its config's network.
    """
    folder = agent_folder(name)
    config = read_config(name)
    game = build.make_game(config)
    network = build.make_network_for(config, game)
    like = jax.eval_shape(network.init, jax.random.PRNGKey(0))
    with np.load(folder / "params.npz") as stored:
        arrays = dict(stored)
    paths, treedef = jax.tree_util.tree_flatten_with_path(like)
    leaves = []
    for path, leaf in paths:
        key = jax.tree_util.keystr(path)
        if key not in arrays or arrays[key].shape != leaf.shape:
            raise UserError(f"zoo agent {folder.name}: params.npz does not fit its network ({key})")
        value = arrays[key]
        if value.dtype == np.uint16 and leaf.dtype != np.uint16:
            value = value.view(_BFLOAT16)
        leaves.append(jax.numpy.asarray(value.astype(leaf.dtype)))
    return config, jax.tree_util.tree_unflatten(treedef, leaves), card(folder.name)


def save(folder: Path, config, variables, agent_card: Card) -> None:
    """Writes an agent's folder: config.json, params.npz (floats as bfloat16), card.json."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(jax.device_get(variables))[0]:
        value = np.asarray(leaf)
        if np.issubdtype(value.dtype, np.floating):
            value = value.astype(_BFLOAT16).view(np.uint16)
        arrays[jax.tree_util.keystr(path)] = value
    np.savez_compressed(folder / "params.npz", **arrays)
    (folder / "config.json").write_text(to_json(config) + "\n")
    write_card(folder, agent_card)


def write_card(folder: Path, agent_card: Card) -> None:
    """Writes an agent's card.json."""
    (folder / "card.json").write_text(json.dumps(agent_card.to_json(), indent=2) + "\n")
