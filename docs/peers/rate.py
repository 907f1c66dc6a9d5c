"""Rates azjax agents and peer codebases' agents side by side: on one ladder (azjax's seeded
pure MCTS), head to head, and at fixed wall-clock minutes of their runs. The results and
commands are in docs/results.md, "Peers side by side".

Agents, each with its own network and its own search at --simulations (0: the raw network's
most likely legal move):
  azjax:RUN[@STEP]   an azjax run's checkpoint (its search: PUCT with tree reuse)
  pgx:CKPT           a checkpoint of pgx's AlphaZero example: its network (Haiku, imported
                     from --pgx-example, the checkout's examples/alphazero) and its search
                     (mctx Gumbel MuZero, completed-Q mix value, 16 considered actions)
                     over azjax's rules, whose observation equals pgx's
  agz:MODEL          an AlphaZero_Gomoku model (agz_train.py's PyTorch `.pt`, or the
                     repository's own Theano `.model` files) in its PyTorch network (from
                     --agz-dir), with its PUCT (c_puct 5, no log term)
  os:RUN/checkpoint-N  a network of OpenSpiel's AlphaZero (os_train.py's OUT; its Flax
                     linen model from the installed `open-spiel`) with its MCTSBot's PUCT
                     (UCT c from its config.json, no log term), over azjax's rules

usage:
  python rate.py timeline RUN_OR_OUT... --minutes 5,10,15,20,30
  python rate.py ladder --game G AGENT... --opponents mcts:200,mcts:800 --games 100 \
      --simulations 32 --out FILE
  python rate.py h2h --game G AGENT_A AGENT_B --games 200 --simulations 32 --out FILE
  python rate.py mistakes --game connect_four AGENT... --positions 1000 --simulations 32

Runs outside azjax's repository in an environment with azjax, plus dm-haiku for pgx's
agents, torch for AlphaZero_Gomoku's and open-spiel for OpenSpiel's.
"""

import argparse
import glob
import json
import os
import pickle
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from azjax.config import build, load_config
from azjax.core.evaluators import network_evaluator
from azjax.core.search import SearchParams, make_search
from azjax.matches import agent as agent_lib
from azjax.matches import arena


def checkpoints(path):
    """(minutes since the run's start, agent specs) of the checkpoints of an azjax run, or of
    pgx_train.py's, agz_train.py's or os_train.py's OUT folder."""
    kept = glob.glob(os.path.join(path, "checkpoint-*[0-9]"))
    if kept:  # os_train.py's OUT: checkpoint-N for each learner step (-1 is the latest)
        with open(os.path.join(path, "start.json")) as f:
            start = json.load(f)["start"]
        kept = sorted((p for p in kept if not p.endswith("--1")), key=os.path.getmtime)
        return [(os.path.getmtime(p) - start) / 60 for p in kept], [f"os:{p}" for p in kept]
    models = sorted(glob.glob(os.path.join(path, "models", "*.pt")))
    if models:  # agz_train.py's OUT: each model is named by its minutes
        return [float(os.path.basename(p)[:-3]) for p in models], [f"agz:{p}" for p in models]
    if os.path.exists(os.path.join(path, "start.json")):  # pgx_train.py's OUT
        with open(os.path.join(path, "start.json")) as f:
            start = json.load(f)["start"]
        files = sorted(glob.glob(os.path.join(path, "checkpoints", "*", "*.ckpt")))
        return [(os.path.getmtime(p) - start) / 60 for p in files], [f"pgx:{p}" for p in files]
    start = os.path.getmtime(os.path.join(path, "config.json"))
    steps = sorted(int(s) for s in os.listdir(os.path.join(path, "checkpoints")) if s.isdigit())
    times = [os.path.getmtime(os.path.join(path, "checkpoints", str(s))) for s in steps]
    return [(t - start) / 60 for t in times], [f"azjax:{path}@{s}" for s in steps]


def at_minutes(path, minutes):
    """The newest checkpoint written within each budget of minutes."""
    times, specs = checkpoints(path)
    chosen = []
    for budget in minutes:
        within = [i for i, t in enumerate(times) if t <= budget]
        if within:
            chosen.append((budget, round(times[within[-1]], 2), specs[within[-1]]))
    return chosen


class _Anything:
    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.__dict__["state"] = state


class _PgxUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # train.py's pydantic Config lives in its __main__
        return _Anything if module == "__main__" else super().find_class(module, name)


def _pgx_network(game, example, ckpt):
    import haiku as hk  # noqa: PLC0415

    sys.path.insert(0, example)
    from network import AZNet  # noqa: PLC0415

    with open(ckpt, "rb") as f:
        saved = _PgxUnpickler(f).load()
    config = saved["config"].__dict__["state"]["__dict__"]

    def forward_fn(x):
        net = AZNet(
            num_actions=game.num_actions,
            num_channels=config["num_channels"],
            num_blocks=config["num_layers"],
            resnet_v2=config["resnet_v2"],
        )
        return net(x, is_training=False, test_local_stats=False)

    forward = hk.without_apply_rng(hk.transform_with_state(forward_fn))

    def evaluate(variables, states, key):
        del key
        (logits, value), _ = forward.apply(*variables, jax.vmap(game.observe)(states))
        return logits, value

    return evaluate, saved["model"]


def _agz_network(game, agz_dir, model):
    import torch  # noqa: PLC0415

    sys.path.insert(0, agz_dir)
    from policy_value_net_pytorch import Net  # noqa: PLC0415

    width, height = game.width, game.height
    net = Net(width, height)
    if model.endswith(".pt"):  # agz_train.py's PyTorch state dict
        net.load_state_dict(torch.load(model, map_location="cpu"))
    else:  # the repository's own models: Theano parameters, pickled (`policy_value_net_numpy`)
        with open(model, "rb") as f:
            params = [np.asarray(p, np.float32) for p in pickle.load(f, encoding="bytes")]
        # Theano's convolutions flip their filters; its dense layers compute x @ W.
        layers = ("conv1", "conv2", "conv3", "act_conv1", "act_fc1", "val_conv1", "val_fc1")
        state = {}
        for name, weight, bias in zip(
            (*layers, "val_fc2"), params[0::2], params[1::2], strict=True
        ):
            weight = weight[:, :, ::-1, ::-1] if weight.ndim == 4 else weight.T
            state[f"{name}.weight"] = torch.from_numpy(weight.copy())
            state[f"{name}.bias"] = torch.from_numpy(bias)
        net.load_state_dict(state)
    net.eval()
    # Its move m is the point m // W rows up from the bottom; its input planes (flipped by
    # `current_state`) and azjax's board both run top row first.
    point = np.arange(width * height)
    move_of_point = (height - 1 - point // width) * width + point % width

    def host_eval(planes):
        with torch.no_grad():
            log_p, v = net(torch.from_numpy(np.asarray(planes)))
        return log_p.numpy()[:, move_of_point].astype(np.float32), v.numpy()[:, 0]

    def evaluate(variables, states, key):
        del variables, key
        planes = jax.vmap(_agz_planes)(states).reshape(-1, 4, height, width)
        shapes = (
            jax.ShapeDtypeStruct((planes.shape[0], game.num_actions), jnp.float32),
            jax.ShapeDtypeStruct((planes.shape[0],), jnp.float32),
        )
        return jax.pure_callback(host_eval, shapes, planes, vmap_method="sequential")

    return evaluate, None


def _openspiel_network(game, checkpoint):
    from open_spiel.python.algorithms.alpha_zero import model_linen  # noqa: PLC0415

    run, step = checkpoint.rsplit("/checkpoint-", 1)
    run = os.path.abspath(run)  # orbax restores from absolute paths only
    with open(os.path.join(run, "config.json")) as f:
        c = json.load(f)
    model = model_linen.Model.build_model(
        c["nn_model"], c["observation_shape"], c["output_size"], c["nn_width"], c["nn_depth"],
        c["weight_decay"], c["learning_rate"], run,
    )  # fmt: skip
    model.load_checkpoint(step)
    variables = {"params": model._state.params, "batch_stats": model._state.batch_stats}
    apply = model._state.apply_fn

    def evaluate(variables, states, key):
        del key
        # Its network takes one unbatched observation at a time (as its `inference` and
        # its per-example loss do) and values positions for player 0, as its learner's
        # targets are player 0's returns; azjax's search wants the mover's value.
        logits, value = jax.vmap(lambda o: apply(variables, o, training=False))(
            jax.vmap(_openspiel_planes)(states)
        )
        return logits, jnp.where(states.current_player == 0, value, -value)

    return evaluate, variables, c["uct_c"]


def _openspiel_planes(state):
    """OpenSpiel's Connect Four observation [3, 6, 7]: player 0's discs, player 1's, the
    empty cells, bottom row first (azjax's board is top row first, player 0's discs +1)."""
    board = state.board.reshape(6, 7)[::-1]
    return jnp.stack([board == 1, board == -1, board == 0]).astype(jnp.float32)


def _agz_planes(state):
    """AlphaZero_Gomoku's input [4, H, W] (`Board.current_state`): the mover's stones, the
    opponent's, the last move, and ones when the first player is to move."""
    shape = (state.board.shape[0],)
    mover = (1 - 2 * state.current_player).astype(state.board.dtype)
    last = jnp.zeros(shape, jnp.bool_).at[jnp.maximum(state.last_move, 0)].set(state.last_move >= 0)
    flat = jnp.stack(
        [
            state.board == mover,
            state.board == -mover,
            last,
            jnp.full(shape, state.current_player == 0),
        ]
    ).astype(jnp.float32)
    return flat  # reshaped to [4, H, W] by the caller


def player(game, spec, simulations, args):
    """(player, params) of an agent spec; the player is built once per kind and simulations,
    so checkpoints of one run share its compiled match."""
    kind, _, path = spec.partition(":")
    if kind == "azjax":
        run, _, step = path.partition("@")
        agent = agent_lib.load_agent(
            run, num_simulations=max(simulations, 1), step=int(step) if step else None
        )
        if simulations:
            return agent.player, agent.variables
        evaluate = network_evaluator(game, agent.network)
        return _raw(evaluate), agent.variables
    if kind == "pgx":
        evaluate, variables = _pgx_network(game, args.pgx_example, path)
        search_params = SearchParams(gumbel_scale=0.0)
        algorithm = "gumbel"
    elif kind == "agz":
        evaluate, variables = _agz_network(game, args.agz_dir, path)
        search_params = SearchParams(dirichlet_fraction=0.0, pb_c_init=5.0, pb_c_base=1e12)
        algorithm = "puct"
    elif kind == "os":
        evaluate, variables, uct_c = _openspiel_network(game, path)
        search_params = SearchParams(dirichlet_fraction=0.0, pb_c_init=uct_c, pb_c_base=1e12)
        algorithm = "puct"
    else:
        raise SystemExit(f"unknown agent {spec!r}")
    if not simulations:
        return _raw(evaluate), variables
    search = make_search(
        game, evaluate, num_simulations=simulations, algorithm=algorithm, params=search_params
    )
    return arena.search_player(search), variables


def _compiled_as(spec: str) -> str:
    """Which agents share one compiled match: those of one kind, whose networks are the
    params passed in; an AlphaZero_Gomoku model is inside its callback, so each is its own."""
    kind = spec.split(":")[0]
    return spec if kind == "agz" else kind


def _raw(evaluate):
    def play(params, states, key):
        logits, _ = evaluate(params, states, key)
        return jnp.argmax(jnp.where(states.legal_action_mask, logits, -jnp.inf), axis=-1)

    return play


def _record(out, row):
    print(json.dumps(row), flush=True)
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")


def _game(experiment):
    return build.make_game(load_config(experiment))


def ladder(args):
    game = _game(args.game)
    for opponent_spec in args.opponents.split(","):
        opponent, opponent_params = agent_lib.make_opponent(game, opponent_spec)
        matches = {}
        for spec in args.agents:
            a, params = player(game, spec, args.simulations, args)
            shared = _compiled_as(spec)
            if shared not in matches:
                matches[shared] = jax.jit(arena.make_match(game, a, opponent, num_games=args.games))
            match = matches[shared]
            start = time.time()
            result = match(params, opponent_params, jax.random.PRNGKey(args.seed))
            summary = arena.summarize(jax.device_get(result.outcomes))
            _record(
                args.out,
                {
                    "agent": spec,
                    "simulations": args.simulations,
                    "opponent": opponent_spec,
                    **summary._asdict(),
                    "seconds": round(time.time() - start, 1),
                },
            )


def head_to_head(args):
    game = _game(args.game)
    (a, params_a), (b, params_b) = (player(game, s, args.simulations, args) for s in args.agents)
    match = jax.jit(
        arena.make_match(game, a, b, num_games=args.games, opening_plies=args.opening_plies)
    )
    result = match(params_a, params_b, jax.random.PRNGKey(args.seed))
    summary = arena.summarize(jax.device_get(result.outcomes))
    _record(
        args.out,
        {
            "agent": args.agents[0],
            "opponent": args.agents[1],
            "simulations": args.simulations,
            "opening_plies": args.opening_plies,
            **summary._asdict(),
        },
    )


def mistakes(args):
    from azjax.matches import mistakes as mistakes_lib  # noqa: PLC0415

    game = _game(args.game)
    positions = mistakes_lib.make_positions(args.positions, seed=args.seed)
    states = positions.states(game)
    players = {}
    for spec in args.agents:
        a, params = player(game, spec, args.simulations, args)
        play = players.setdefault(_compiled_as(spec), jax.jit(a))
        key = jax.random.fold_in(jax.random.PRNGKey(args.seed), args.simulations)
        actions = np.asarray(play(params, states, key))
        row = mistakes_lib.record(
            positions, actions, name=spec, simulations=args.simulations, seed=args.seed
        )
        _record(args.out, row)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    timeline = sub.add_parser("timeline")
    timeline.add_argument("runs", nargs="+")
    timeline.add_argument("--minutes", default="5,10,15,20,30")
    for name in ("ladder", "h2h", "mistakes"):
        p = sub.add_parser(name)
        p.add_argument("agents", nargs="+")
        p.add_argument("--game", required=True, help="an azjax experiment: connect_four")
        p.add_argument("--games", type=int, default=200)
        p.add_argument("--simulations", type=int, default=32)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", default="")
        p.add_argument("--pgx-example", default="")
        p.add_argument("--agz-dir", default="")
    sub.choices["ladder"].add_argument("--opponents", default="mcts:200,mcts:800")
    sub.choices["h2h"].add_argument("--opening-plies", type=int, default=2)
    sub.choices["mistakes"].add_argument("--positions", type=int, default=1000)
    args = parser.parse_args()
    if args.command == "timeline":
        minutes = [float(m) for m in args.minutes.split(",")]
        for run in args.runs:
            for budget, at, spec in at_minutes(run, minutes):
                print(f"{budget:g}\t{at}\t{spec}")
    else:
        {"ladder": ladder, "h2h": head_to_head, "mistakes": mistakes}[args.command](args)


if __name__ == "__main__":
    main()
