"""Trained agents and opponents as players: load one from a workdir and ask it for moves;
evaluate a network against the config's opponents.

Example::

    agent = azjax.agent.load_agent("runs/c4", num_simulations=200)
    states = jax.vmap(agent.game.init)(jax.random.split(key, 16))
    output = agent.act(states, key)   # action [B], action_weights [B, A], value [B]
"""

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import ml_collections

from azjax import arena, checkpoint, games
from azjax.arena import Player, random_player, search_player
from azjax.config import parse_opponent_spec
from azjax.games import Game, State
from azjax.networks import Network, network_from_config
from azjax.search import (
    SearchOutput,
    make_mcts_baseline,
    network_evaluator,
    search_from_config,
)
from azjax.selfplay import choose_action
from azjax.types import PRNGKey, UserError


def make_game_and_network(config: ml_collections.ConfigDict) -> tuple[Game, Network]:
    """The game and the network an experiment config describes."""
    game = games.make(config.game, **dict(config.game_kwargs))
    network = network_from_config(config.network, game.observation_shape, game.num_actions)
    return game, network


def read_config(workdir: str | Path) -> ml_collections.ConfigDict:
    """The resolved config saved in a run's workdir."""
    path = Path(workdir) / "config.json"
    if not path.is_file():
        raise UserError(f"{workdir} is not an azjax run directory (no config.json)")
    try:
        return ml_collections.ConfigDict(json.loads(path.read_text()))
    except json.JSONDecodeError as error:
        raise UserError(f"{path} is corrupt: {error}") from None


def evaluation_search(game: Game, network: Network, config: ml_collections.ConfigDict):
    """The searcher an agent plays with: `config.search` at `config.eval.num_simulations`
    simulations, without exploration noise."""
    search_config = ml_collections.ConfigDict(config.search.to_dict())
    search_config.num_simulations = config.eval.num_simulations
    return search_from_config(game, network_evaluator(game, network), search_config, explore=False)


@dataclasses.dataclass
class Agent:
    """A trained network with its search, playing without exploration noise."""

    game: Game
    network: Network
    config: ml_collections.ConfigDict
    variables: Any
    iteration: int

    def __post_init__(self):
        self.search = evaluation_search(self.game, self.network, self.config)
        self._act = jax.jit(self.search)

    def act(self, states: State, key: PRNGKey) -> SearchOutput:
        """Searches a batch of states [B]: chosen action, search policy and value."""
        return self._act(self.variables, states, key)

    def policy_value(self, states: State):
        """The raw network prior logits [B, A] and value [B], without search."""
        obs = jax.vmap(self.game.observe)(states)
        logits, value, _ = self.network.apply(self.variables, obs, False)
        return logits, value

    @property
    def player(self) -> Player:
        return search_player(self.search)


def load_agent(
    workdir: str | Path, *, num_simulations: int | None = None, step: int | None = None
) -> Agent:
    """Loads the latest (or `step`) checkpoint of a run as an `Agent`.

    Args:
      workdir: the run directory (holding config.json and checkpoints/), or the path of
        one checkpoint in it (`RUN/checkpoints/STEP`).
      num_simulations: search simulations per move (default: the run's eval setting).
      step: iteration to load (default: the latest).

    Raises:
      UserError: not a run directory, no checkpoint, or a corrupt one.
    """
    path = Path(workdir)
    if path.name.isdigit() and path.parent.name == "checkpoints":  # a checkpoint's path
        workdir, step = path.parent.parent, int(path.name) if step is None else step
    config = read_config(workdir)
    if num_simulations is not None:
        config.eval.num_simulations = int(num_simulations)
    game, network = make_game_and_network(config)
    checkpointer = checkpoint.Checkpointer(workdir)
    step = checkpointer.latest_step() if step is None else step
    if step is None:
        raise UserError(f"no checkpoint in {workdir}/checkpoints")
    example = jax.eval_shape(network.init, jax.random.PRNGKey(0))
    variables, _ = checkpointer.restore(step, example)
    checkpointer.close()
    return Agent(game, network, config, variables, step)


def selfplay_player(agent: Agent) -> Player:
    """Plays like training self-play: the run's training search (with exploration noise, at
    `config.search.num_simulations`) and its temperature schedule."""
    config = agent.config
    search = search_from_config(
        agent.game, network_evaluator(agent.game, agent.network), config.search, explore=True
    )

    def play(params, states: State, key: PRNGKey):
        search_key, sample_key = jax.random.split(key)
        return choose_action(
            search(params, states, search_key),
            states,
            sample_key,
            config.selfplay.temperature_moves,
            sample_search_action=config.search.algorithm == "gumbel",
        )

    return play


def make_opponent(game: Game, spec: str, *, num_simulations: int | None = None):
    """Returns (player, params) for an opponent spec: random, mcts:N or workdir:PATH."""
    kind, argument = parse_opponent_spec(spec)
    if kind == "random":
        return random_player(game), None
    if kind == "mcts":
        return search_player(make_mcts_baseline(game, num_simulations=argument)), None
    agent = load_agent(argument, num_simulations=num_simulations)
    if agent.game.name != game.name or agent.game.num_actions != game.num_actions:
        raise UserError(f"opponent {argument} plays {agent.game.name}, not {game.name}")
    return agent.player, agent.variables


def make_evaluation(game: Game, network: Network, config: ml_collections.ConfigDict):
    """Builds `evaluate(variables, iteration) -> metrics` playing the config's opponents."""
    agent = arena.search_player(evaluation_search(game, network, config))
    matches = {}
    for spec in config.eval.opponents:
        opponent, params = make_opponent(game, spec)
        match = jax.jit(arena.make_match(game, agent, opponent, num_games=config.eval.num_games))
        matches[spec] = (match, params)

    def evaluate(variables, iteration: int) -> dict:
        results = {}
        for index, (spec, (match, params)) in enumerate(matches.items()):
            key = jax.random.fold_in(jax.random.PRNGKey(config.seed + 1), iteration * 64 + index)
            summary = arena.summarize(jax.device_get(match(variables, params, key).outcomes))
            games = summary.games
            results[f"eval/{spec}/win_rate"] = summary.wins / games
            results[f"eval/{spec}/draw_rate"] = summary.draws / games
            results[f"eval/{spec}/loss_rate"] = summary.losses / games
            results[f"eval/{spec}/score"] = summary.score
        return results

    return evaluate
