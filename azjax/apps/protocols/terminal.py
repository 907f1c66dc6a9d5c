"""A game against a trained agent in the terminal: the board as text, moves typed by hand.

    azjax play --workdir runs/c4 --simulations 200

The human types moves in the game's notation (`azjax.games.notation`); a line that names no
legal move, or is not valid text, gets a one-line message and the question again.
"""

import sys
from typing import TYPE_CHECKING, TextIO

import jax
import jax.numpy as jnp

from azjax.games import notation
from azjax.types import UserError

if TYPE_CHECKING:
    from azjax.matches.agent import Agent


def play_in_terminal(
    agent: "Agent",
    *,
    human_first: bool,
    seed: int,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Plays one game between a human and `agent`, the board drawn after every move.

    Args:
      agent: the agent (`agent.load_agent`); only its `game` and `act` are used.
      human_first: whether the human plays the first move.
      seed: seeds the start position and the agent's search.
      stdin: where the human's moves are read, one a line (default: `sys.stdin`).
      stdout: where the boards and messages go (default: `sys.stdout`).

    Returns:
      0, once the game is over or the input has ended.
    """
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    game, text = agent.game, notation.of(agent.game)
    step = jax.jit(game.step)
    key = jax.random.PRNGKey(seed)
    state = game.init(key)
    agent_player = 1 if human_first else 0
    while not bool(state.terminated):
        print(text.render(state), file=stdout)
        if int(state.current_player) == agent_player:
            key, act_key = jax.random.split(key)
            batched = jax.tree.map(lambda x: x[None], state)
            output = agent.act(batched, act_key)
            action = int(output.action[0])
            name = text.action_to_string(action, state)
            print(f"agent plays {name} (value {float(output.value[0]):+.2f})", file=stdout)
        else:
            print("your move: ", end="", file=stdout, flush=True)
            try:
                line = _read_line(stdin)
            except UnicodeDecodeError as error:
                print(f"unreadable input: the line is not valid {error.encoding} text", file=stdout)
                continue
            if line is None:
                print(file=stdout)
                return 0
            try:
                action = text.parse_action(line, state)
            except UserError as error:
                print(f"illegal move: {error}", file=stdout)
                continue
        state = step(state, jnp.int32(action))
    print(text.render(state), file=stdout)
    human_reward = float(state.rewards[1 - agent_player])
    outcome = "you win" if human_reward > 0 else "you lose" if human_reward < 0 else "draw"
    print(outcome, file=stdout)
    return 0


def _read_line(stdin: TextIO) -> str | None:
    """The next line of `stdin` without its end, or None at the end of input.

    A text stream over bytes (such as `sys.stdin`) is read a byte line at a time and decoded
    here, so that a line that is not valid text loses only itself.

    Raises:
      UnicodeDecodeError: the line is not valid in the stream's encoding (UTF-8 if unset).
    """
    binary = getattr(stdin, "buffer", None)
    if binary is None:
        line = stdin.readline()
    else:
        line = binary.readline().decode(getattr(stdin, "encoding", None) or "utf-8")
    return line.rstrip("\r\n") if line else None
