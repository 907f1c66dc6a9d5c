"""Trained agents and opponents as players: load one from a workdir and ask it for moves.
Training's evaluation against the config's opponents is `azjax.training.evaluation`.

Example::

    agent = azjax.matches.agent.load_agent("runs/c4", num_simulations=200)
    states = jax.vmap(agent.game.init)(jax.random.split(key, 16))
    output = agent.act(states, key)   # action [B], action_weights [B, A], value [B]
"""

import dataclasses
from pathlib import Path
from typing import Any

import jax

from azjax.config import saved
from azjax.config.opponents import parse_opponent_spec
from azjax.config.settings import Settings
from azjax.core.networks import Network
from azjax.core.selfplay_rules import choose_action
from azjax.games import Game, State
from azjax.matches import arena, zoo
from azjax.matches.arena import random_player, search_player
from azjax.matches.mcts_baseline import make_mcts_baseline
from azjax.matches.minimax import make_minimax_player
from azjax.paths import workdir_path
from azjax.runs import checkpoint
from azjax.types import Player, PRNGKey, Searcher, SearchOutput, UserError


@dataclasses.dataclass
class Agent:
    """A trained network with its search, playing without exploration noise.

    Attributes:
      game, network: the run's game and network.
      settings: the records of the config the checkpoint was written with (`Settings`).
      variables: the network variables.
      iteration: the checkpoint's iteration.
      num_simulations: search simulations per move.
    """

    game: Game
    network: Network
    settings: Settings
    variables: Any
    iteration: int
    num_simulations: int

    def __post_init__(self):
        self.search: Searcher = self.settings.agent.searcher(
            self.game, self.network, num_simulations=self.num_simulations
        )
        self._act = TreeMemory(self.search)

    def act(self, states: State, key: PRNGKey) -> SearchOutput:
        """Searches a batch of states [B]: chosen action, search policy and value. With the
        run's `search.tree_reuse`, a position the previous call's tree holds (after the
        agent's move and the reply) starts from that subtree."""
        return self._act(self.variables, states, key)

    def policy_value(self, states: State):
        """The raw network prior logits [B, A] and value [B], without search."""
        obs = jax.vmap(self.game.observe)(states)
        logits, value, _ = self.network.apply(self.variables, obs, False)
        return logits, value

    @property
    def player(self) -> Player:
        return search_player(self.search)


class TreeMemory:
    """A jitted search that keeps its last tree on the device between calls, for callers
    that hand it positions one after another (`Agent.act`, GTP): with tree reuse each call
    starts from the subtree of the node holding the new position (`Search.reroot`: the
    position after the agent's move and the reply, or the same one searched again), and a
    position it does not hold (a new game, an undo) starts from an empty tree."""

    def __init__(self, search: Searcher):
        self._search = jax.jit(search)
        self._reuse = getattr(search, "tree_reuse", False)
        if self._reuse:
            self._empty = jax.jit(search.empty_tree)
            self._reroot = jax.jit(search.reroot)
        self._tree = None

    def __call__(self, variables, states: State, key: PRNGKey) -> SearchOutput:
        if not self._reuse:
            return self._search(variables, states, key)
        held = self._tree
        if held is None or held.node_visits.shape[0] != states.terminated.shape[0]:
            tree = self._empty(states)
        else:
            tree = self._reroot(held, states)
        output = self._search(variables, states, key, None, tree)
        self._tree = output.tree
        return output

    def forget(self) -> None:
        """Drops the kept tree (the next call starts afresh)."""
        self._tree = None


def load_agent(
    workdir: str | Path,
    *,
    num_simulations: int | None = None,
    step: int | None = None,
    search: dict[str, str] | None = None,
) -> Agent:
    """Loads the newest readable (or the `step`) checkpoint of a run as an `Agent`.

    A damaged newest checkpoint is moved to `checkpoints_damaged/` with a warning and the
    next older one is loaded. The agent uses the config its checkpoint was written with.

    Args:
      workdir: the run directory (holding config.json and checkpoints/), the path of
        one checkpoint in it (`RUN/checkpoints/STEP`), or `zoo:NAME`, a shipped agent.
      num_simulations: search simulations per move (default: the run's eval setting).
      step: iteration to load (default: the newest).
      search: overrides of the agent's `search.*` config keys (`{"search.win_check":
        "true"}`): the same network with another search, to rate or play it.

    Raises:
      UserError: not a run directory, no checkpoint, a damaged one asked for by `step`, a
        bad `num_simulations`, or a bad or non-search override.
    """
    if num_simulations is not None and not 1 <= num_simulations <= 1_000_000:
        raise UserError(f"simulations must be between 1 and 1000000, got {num_simulations}")
    if zoo.is_zoo(str(workdir)):
        settings, variables, card = zoo.load(str(workdir), overrides=_search_overrides(search))
        if step is not None and step != card.iteration:
            raise UserError(f"{workdir} is iteration {card.iteration}, not {step}")
        return _agent(settings, variables, card.iteration, num_simulations)
    path = workdir_path(workdir)
    if path.name.isdigit() and path.parent.name == "checkpoints":  # a checkpoint's path
        workdir, step = path.parent.parent, int(path.name) if step is None else step
    run = saved.read_run(workdir, what="an azjax run directory")
    if not (workdir_path(workdir) / "checkpoints").is_dir():
        raise UserError(f"no checkpoint in {workdir}/checkpoints")

    def example(data: dict | None):  # the network as the checkpoint was written
        settings = (
            run if data is None else saved.from_saved(data, source=f"a checkpoint of {workdir}")
        )
        return jax.eval_shape(settings.network.init, jax.random.PRNGKey(0))

    restored = checkpoint.read_checkpoint(workdir, step, example)
    overrides = _search_overrides(search)
    settings = run
    if restored.config is not None:
        source = f"checkpoint {restored.step} of {workdir}"
        settings = saved.from_saved(restored.config, source=source, overrides=overrides)
    elif overrides:
        settings = saved.read_run(workdir, overrides=overrides, what="an azjax run directory")
    return _agent(settings, restored.params, restored.step, num_simulations)


def _search_overrides(search: dict[str, str] | None) -> dict[str, str] | None:
    """An agent's overrides, each of a `search.*` key.

    Raises:
      UserError: an override of another key.
    """
    wrong = sorted(key for key in search or {} if not key.startswith("search."))
    if wrong:
        raise UserError(f"an agent's overrides are search.* keys, not {wrong[0]!r}")
    return search


def _agent(settings: Settings, variables, iteration: int, num_simulations) -> Agent:
    """The agent of a loaded checkpoint: the run's evaluation game and its network."""
    simulations = num_simulations or settings.agent.simulations
    return Agent(settings.game, settings.network, settings, variables, iteration, simulations)


def selfplay_player(agent: Agent, *, with_policy: bool = False) -> Player:
    """Plays like training self-play: the run's training search (with exploration noise, at
    self-play's simulations) and its temperature schedule. `with_policy`: the player
    returns (actions [B], searched policies [B, A])."""
    settings = agent.settings.agent
    search = settings.search.searcher(agent.game, agent.network, explore=True)

    def play(params, states: State, key: PRNGKey):
        search_key, sample_key = jax.random.split(key)
        output = search(params, states, search_key)
        actions = choose_action(
            output,
            states,
            sample_key,
            settings.temperature_moves,
            sample_search_action=settings.sample_search_action,
        )
        return (actions, output.action_weights) if with_policy else actions

    return play


def make_opponent(game: Game, spec: str, *, num_simulations: int | None = None):
    """Returns (player, params) for an opponent spec: random, minimax (exact play, Tic-tac-toe
    only), mcts:N or workdir:PATH. Outside engines and the solver play host games
    (`play_opponent`)."""
    kind, argument = parse_opponent_spec(spec)
    if kind == "random":
        return random_player(game), None
    if kind == "minimax":
        perfect = make_minimax_player(game)
        return (lambda params, states, key: perfect(states, key)), None
    if kind == "mcts":
        return search_player(make_mcts_baseline(game, num_simulations=argument)), None
    if kind == "ladder":
        raise UserError(f"opponent {spec!r} plays only in training evaluations (eval.opponents)")
    if kind == "previous":
        raise UserError(
            f"opponent {spec!r} plays only in training evaluations (eval.opponents) and in "
            "`azjax tournament`"
        )
    if kind == "engine":
        raise UserError(f"opponent {spec!r} plays host games, one at a time (`play_opponent`)")
    agent = load_agent(argument, num_simulations=num_simulations)
    if agent.game.name != game.name or agent.game.num_actions != game.num_actions:
        raise UserError(f"opponent {argument} plays {agent.game.name}, not {game.name}")
    return agent.player, agent.variables


def play_opponent(
    agent: Agent,
    spec: str,
    *,
    num_games: int,
    key: PRNGKey,
    opening_plies: int = 0,
    seed: int = 0,
    num_simulations: int | None = None,
    watchers=(),
    should_stop=lambda: False,
):
    """The agent against an opponent spec, half the games as first player; `watchers` are
    told every host game (`arena.play_host_game`: a `recording.Recorder`).

    Outside engines and the solver play host games one at a time (`arena.engine_outcomes`),
    fewer where `should_stop()` comes true after a game; the others one batched match
    (`arena.make_match`).

    Returns:
      (outcomes, reasons, result): the agent's outcome in each game (+1, 0, -1); the reasons
      of the host games that did not end by the rules (the engine lost them); the batched
      match's `MatchResult`, None for host games.

    Raises:
      UserError: a bad spec, or an opponent that cannot play the agent's game.
    """
    kind, argument = parse_opponent_spec(spec)
    if kind == "engine":
        argument.require_plays(agent.game, f"opponent {spec}")
        outcomes, reasons, _ = arena.engine_outcomes(
            agent.game,
            jax.jit(agent.player),
            agent.variables,
            argument,
            num_games=num_games,
            key=key,
            seed=seed,
            opening_plies=opening_plies,
            watchers=watchers,
            should_stop=should_stop,
        )
        return outcomes, reasons, None
    opponent, params = make_opponent(agent.game, spec, num_simulations=num_simulations)
    match = arena.make_match(
        agent.game, agent.player, opponent, num_games=num_games, opening_plies=opening_plies
    )
    result = jax.jit(match)(agent.variables, params, key)
    return [float(x) for x in jax.device_get(result.outcomes)], [], result
