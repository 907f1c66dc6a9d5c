"""What tree reuse and playout caps save: `azjax bench --search-options --config EXP`.

Rows, each measured in the same run with the option off and on:

- self-play (the training search, root noise and temperature): seconds per ply of one
  `selfplay.run` call, and the share of the root's visits carried over from the previous
  move (tree reuse);
- arena play (the agent's search without noise against itself, each side with its own tree
  following both sides' moves): seconds per move and the share carried over;
- playout caps: seconds per ply of a self-play call of only full searches and of only cheap
  ones.

The network is a fresh one, or a trained run's (`--workdir RUN`, or `variables` from the
Python API).
"""

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp

from azjax.apps.bench.measure import empty_replay
from azjax.apps.bench.timing import FULL, time_call
from azjax.config import apply_overrides, build, from_dict, load_config
from azjax.core import selfplay
from azjax.core.search import Search
from azjax.matches.agent import load_agent
from azjax.types import UserError


def _selfplay_call(pipeline, search: Search, cap=None):
    game = pipeline.game
    capacity = pipeline.selfplay_batch_size * (pipeline.num_steps + game.max_episode_length)
    buffer = empty_replay(game, capacity)
    rules = selfplay.SelfPlayRules(playout_cap=cap)
    state = selfplay.init(
        game, jax.random.PRNGKey(0), batch_size=pipeline.selfplay_batch_size, rules=rules
    )
    run = jax.jit(
        functools.partial(
            selfplay.run,
            game,
            search,
            num_steps=pipeline.num_steps,
            temperature_moves=8,
            rules=rules,
        )
    )
    return lambda variables: run(variables, state, buffer, jax.random.PRNGKey(1))


def _arena_call(game, search: Search, batch_size: int, num_plies: int):
    """Both sides played by `search` (no noise), each keeping its own trees when it reuses."""
    reuse = search.tree_reuse

    def play(variables, key):
        states = jax.vmap(game.init)(jax.random.split(key, batch_size))
        trees = (search.empty_tree(states), search.empty_tree(states)) if reuse else ((), ())

        def ply(carry, ply_key):
            states, trees, carried = carry
            if reuse:
                mine = trees[0]
                output = search(variables, states, ply_key, tree=mine)
                share = mine.node_visits[:, 0] / (mine.node_visits[:, 0] + search.num_simulations)
                carried = carried + jnp.mean(share)
                moved = tuple(search.advance(t, output.action) for t in (output.tree, trees[1]))
                trees = (moved[1], moved[0])  # the other side searches next
            else:
                output = search(variables, states, ply_key)
            return (jax.vmap(game.step)(states, output.action), trees, carried), None

        (states, _, carried), _ = jax.lax.scan(
            ply, (states, trees, jnp.float32(0)), jax.random.split(key, num_plies)
        )
        return states.step_count, carried / num_plies

    return jax.jit(play)


def measure(config, variables=None, *, log=print) -> list[dict]:
    """Rows {setting, seconds, per, carried_fraction}."""
    config = config.copy_and_resolve_references()
    config.search.tree_reuse = False
    pipeline = build.make_pipeline(config)
    if variables is None:
        variables = pipeline.network.init(jax.random.PRNGKey(0))
    plain = pipeline.search
    reuse = dataclasses.replace(plain, tree_reuse=True, return_tree=True)
    plies = pipeline.num_steps
    rows = []
    for name, search in (("self-play, fresh trees", plain), ("self-play, tree reuse", reuse)):
        seconds, (_, _, output) = time_call(
            _selfplay_call(pipeline, search), variables, settings=FULL
        )
        rows.append(
            dict(
                setting=name,
                seconds=seconds / plies,
                per="ply",
                carried_fraction=float(output.carried_fraction),
            )
        )
        log(f"{name}: {seconds / plies * 1000:.1f} ms per ply")
    agent = build.make_agent_searcher(config, pipeline.game, pipeline.network)
    agent_reuse = dataclasses.replace(agent, tree_reuse=True, return_tree=True)
    batch, moves = pipeline.selfplay_batch_size, min(16, pipeline.game.max_episode_length)
    for name, search in (("arena, fresh trees", agent), ("arena, tree reuse", agent_reuse)):
        play = _arena_call(pipeline.game, search, batch, moves)
        seconds, (_, carried) = time_call(play, variables, jax.random.PRNGKey(2), settings=FULL)
        rows.append(
            dict(
                setting=name,
                seconds=seconds / moves,
                per="move (batch)",
                carried_fraction=float(carried),
            )
        )
        log(f"{name}: {seconds / moves * 1000:.1f} ms per move")
    cheap = plain.with_simulations(config.selfplay.cheap_simulations)
    for name, fraction in (("playout cap, full plies", 1.0), ("playout cap, cheap plies", 0.0)):
        cap = selfplay.PlayoutCap(fraction, cheap)
        seconds, _ = time_call(_selfplay_call(pipeline, plain, cap), variables, settings=FULL)
        rows.append(dict(setting=name, seconds=seconds / plies, per="ply", carried_fraction=0.0))
        log(f"{name}: {seconds / plies * 1000:.1f} ms per ply")
    return rows


def format_rows(config, rows: list[dict]) -> str:
    lines = [
        f"{config.name}: {config.search.num_simulations} simulations "
        f"(cheap: {config.selfplay.cheap_simulations}), {config.selfplay.batch_size} games, "
        f"on {jax.devices()[0].platform}",
        f"{'setting':<28} {'ms':>9}  {'per':<14} {'visits carried':>14}",
    ]
    for row in rows:
        lines.append(
            f"{row['setting']:<28} {row['seconds'] * 1000:>9.1f}  {row['per']:<14} "
            f"{row['carried_fraction']:>14.3f}"
        )
    return "\n".join(lines)


def main(args, overrides) -> int:
    variables = None
    if args.workdir:  # a trained network visits fewer moves: more of its tree is carried
        if args.config:
            raise UserError("--search-options takes --config or --workdir, not both")
        agent = load_agent(args.workdir)
        config = from_dict(json.loads(agent.settings.config_json), source=str(args.workdir))
        variables = agent.variables
    else:
        config = load_config(args.config)
    config = apply_overrides(config, overrides)
    rows = measure(config, variables)
    print(format_rows(config, rows))
    return 0
