"""Makes the pictures of the README and docs/ pages from a trained Connect Four run.

    python docs/make_pictures.py --workdir runs/connect_four

writes docs/connect_four_policy.svg (the agent's search policy and value on a position where
the mover must block) and docs/connect_four_vs_mcts.gif (one game of the agent, first, against
pure MCTS), and prints what it drew.
"""

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp

import azjax
from azjax.games import render

DOCS = Path(__file__).parent
# Columns 1-7 from the left. After these moves red (first) has three in a row on the bottom
# row in columns 1-3; yellow, to move, must block in column 4.
THREAT = (1, 1, 2, 2, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--opponent", default="mcts:800")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    agent = azjax.load_agent(args.workdir, num_simulations=args.simulations)
    game = agent.game
    state = game.init(jax.random.PRNGKey(0))
    for column in THREAT:
        state = game.step(state, jnp.int32(column - 1))
    batch = jax.tree.map(lambda x: x[None], state)
    logits, value = agent.policy_value(batch)
    searched = agent.act(batch, jax.random.PRNGKey(0))
    pictures = [
        render.picture(
            game,
            state,
            policy=jax.nn.softmax(logits[0]),
            value=float(value[0]),
            last_action=THREAT[-1] - 1,
        ),
        render.picture(
            game,
            state,
            policy=searched.action_weights[0],
            value=float(searched.value[0]),
            last_action=THREAT[-1] - 1,
        ),
    ]
    captions = ["network prior", f"search, {agent.num_simulations} simulations"]
    render.row(pictures, captions).save(DOCS / "connect_four_policy.svg")
    print(f"iteration {agent.iteration}: search policy {searched.action_weights[0].round(2)}")

    opponent, params = azjax.make_opponent(game, args.opponent)
    match = jax.jit(azjax.make_match(game, agent.player, opponent, num_games=2))
    result = jax.device_get(match(agent.variables, params, jax.random.PRNGKey(args.seed)))
    first = int(jnp.argmax(result.a_first))  # the game where the agent moved first
    actions = result.actions[: result.lengths[first], first]
    states = [game.init(jax.random.PRNGKey(0))]
    for action in actions:
        states.append(game.step(states[-1], jnp.int32(action)))
    render.gif(game, states, actions=actions, size=300).save(DOCS / "connect_four_vs_mcts.gif")
    outcome = {1.0: "won", 0.0: "drew", -1.0: "lost"}[float(result.outcomes[first])]
    print(f"agent (red) {outcome} against {args.opponent} in {len(actions)} plies")


if __name__ == "__main__":
    main()
