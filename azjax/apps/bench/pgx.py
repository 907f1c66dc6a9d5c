"""pgx for the bench's comparisons: its environments for random play, and a plain pgx + mctx +
Flax self-play step for compile times (`compile_time`). pgx is imported when asked for, so
azjax works without it (it is a test dependency)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import mctx

from azjax.apps.bench.measure import Environment

# azjax game name -> pgx environment id, for games both implement with the same rules.
PGX_NAMES = {
    "connect_four": "connect_four",
    "tic_tac_toe": "tic_tac_toe",
    "othello": "othello",
    "go_9x9": "go_9x9",
    "go_19x19": "go_19x19",
}
PGX_MISSING = "pgx not installed"
NO_PGX_GAME = "no pgx game"


def pgx_environment(game_name: str) -> Environment | str:
    """The pgx environment with the same rules as `game_name`, or why there is none
    (`NO_PGX_GAME`, `PGX_MISSING`)."""
    if game_name not in PGX_NAMES:
        return NO_PGX_GAME
    try:
        import pgx  # noqa: PLC0415  (optional)
    except ImportError:
        return PGX_MISSING
    env = pgx.make(PGX_NAMES[game_name])
    return Environment(
        init=env.init,
        step=lambda state, action: env.step(state, action),
        done=lambda state: state.terminated | state.truncated,
        observe=lambda state: state.observation,  # pgx computes it inside step
    )


def plain_play_step(config):
    """`config`'s self-play step written without azjax: pgx's game, a Flax ResNet of the
    same size and mctx's search of the same kind and budget, `selfplay.num_steps` plies of
    `selfplay.batch_size` games under one `lax.scan`, finished games reset. Returns the
    jitted step and its arguments (the network's variables, the games, a key), or why there
    is none (`NO_PGX_GAME`, `PGX_MISSING`)."""
    if config.game not in PGX_NAMES or dict(config.game_kwargs):
        return NO_PGX_GAME
    try:
        import pgx  # noqa: PLC0415  (optional)
    except ImportError:
        return PGX_MISSING

    env = pgx.make(PGX_NAMES[config.game])
    net, search = config.network, config.search
    batch = config.selfplay.batch_size

    def norm(x):
        return nn.BatchNorm(use_running_average=True)(x)

    class ResNet(nn.Module):  # AlphaZero's: a conv stem, residual blocks, two heads
        @nn.compact
        def __call__(self, x):
            x = nn.relu(norm(nn.Conv(net.channels, (3, 3))(x.astype(jnp.float32))))
            for _ in range(net.num_blocks):
                y = nn.relu(norm(nn.Conv(net.channels, (3, 3))(x)))
                x = nn.relu(x + norm(nn.Conv(net.channels, (3, 3))(y)))
            policy = nn.relu(norm(nn.Conv(2, (1, 1))(x))).reshape(x.shape[0], -1)
            value = nn.relu(norm(nn.Conv(1, (1, 1))(x))).reshape(x.shape[0], -1)
            value = nn.Dense(1)(nn.relu(nn.Dense(net.value_hidden)(value)))
            return nn.Dense(env.num_actions)(policy), jnp.tanh(value[:, 0])

    model = ResNet()
    step, init = jax.vmap(env.step), jax.jit(jax.vmap(env.init))

    def evaluate(variables, state):
        logits, value = model.apply(variables, state.observation)
        return jnp.where(state.legal_action_mask, logits, jnp.finfo(logits.dtype).min), value

    def recurrent_fn(variables, key, action, state):
        del key
        mover = state.current_player
        state = step(state, action)
        logits, value = evaluate(variables, state)
        output = mctx.RecurrentFnOutput(
            reward=state.rewards[jnp.arange(batch), mover],
            discount=jnp.where(state.terminated, 0.0, -1.0),
            prior_logits=logits,
            value=jnp.where(state.terminated, 0.0, value),
        )
        return output, state

    def ply(carry, key):
        variables, state = carry
        search_key, reset_key = jax.random.split(key)
        logits, value = evaluate(variables, state)
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
        common = dict(
            params=variables,
            rng_key=search_key,
            root=root,
            recurrent_fn=recurrent_fn,
            num_simulations=search.num_simulations,
            invalid_actions=~state.legal_action_mask,
        )
        if search.algorithm == "gumbel":
            output = mctx.gumbel_muzero_policy(
                **common, max_num_considered_actions=search.max_num_considered_actions
            )
        else:
            output = mctx.muzero_policy(
                **common,
                dirichlet_alpha=search.dirichlet_alpha,
                dirichlet_fraction=search.dirichlet_fraction,
            )
        state = step(state, output.action)
        fresh = init(jax.random.split(reset_key, batch))
        state = jax.tree.map(
            lambda new, old: jnp.where(
                state.terminated.reshape((-1,) + (1,) * (old.ndim - 1)), new, old
            ),
            fresh,
            state,
        )
        return (variables, state), (state.observation, output.action_weights)

    def play(variables, state, key):
        return jax.lax.scan(
            ply, (variables, state), jax.random.split(key, config.selfplay.num_steps)
        )

    key = jax.random.PRNGKey(config.seed)
    state = init(jax.random.split(key, batch))
    variables = model.init(key, jnp.zeros((1, *env.observation_shape)))
    return jax.jit(play), (variables, state, key)
