"""The commands that write game records: `azjax records` (outside engines, see
`matches.engine_records`), `azjax selfplay` (a run's self-play, with its search policies)
and the records of `azjax evaluate --records DIR` (any opponent, outside engines too)."""

import errno
import os
from pathlib import Path

import jax

from azjax import interrupt
from azjax.apps.protocols import sgf
from azjax.games.records.sgf import check_go
from azjax.matches import agent as agent_lib
from azjax.matches import engine_records, recording
from azjax.matches.engines import EngineError
from azjax.types import UserError


def records(args) -> int:
    """`azjax records`: plays and writes the games `--out` still lacks."""
    try:
        engine_records.run(
            args.out,
            args.game,
            args.players,
            num_games=args.games,
            jobs=args.jobs,
            opening_plies=args.opening_plies,
            seed=args.seed,
            fmt=args.format,
            timeout=args.timeout,
            should_stop=interrupt.requested,
        )
    except EngineError as error:
        raise UserError(f"{error} (the games written are kept: the same command resumes)") from None
    return 0


def make_folders(args) -> None:
    """Makes the folders `--records` and `--sgf` name, before any game: one that cannot be
    written is one line (status 2) now, not after the games (status 1).

    Raises:
      UserError: a folder that cannot be made or written (a file, a name too long, no
        permission).
    """
    for option in ("records", "sgf"):
        folder = getattr(args, option, None)
        if not folder:
            continue
        try:
            if Path(folder).is_file():
                raise UserError(f"cannot write --{option} {folder}: it is a file, not a folder")
            Path(folder).mkdir(parents=True, exist_ok=True)
            if not os.access(folder, os.W_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        except OSError as error:
            raise UserError(
                f"cannot write --{option} {folder}: {error.strerror or error}"
            ) from None


def selfplay(args) -> int:
    """`azjax selfplay`: games as in training, as SGF (`--sgf`, Go) and records (`--records`,
    any game, with the search policies in JSONL)."""
    if not args.sgf and not args.records:
        raise UserError("say where the games go: --sgf DIR (go) or --records DIR (any game)")
    make_folders(args)
    agent = agent_lib.load_agent(args.workdir)
    if args.sgf:
        check_go(agent.game)
    fmt = recording.check_format(agent.game, args.records_format or "jsonl")
    key = jax.random.PRNGKey(args.seed)
    result, policies = recording.selfplay_match(agent, num_games=args.games, key=key)
    name = f"azjax-{agent.iteration}"
    if args.sgf:
        paths = sgf.write_records(
            args.sgf, "selfplay", sgf.match_records(agent.game, result, name, name)
        )
        print(f"wrote {len(paths)} self-play games to {args.sgf}")
    if args.records:
        info = {"workdir": args.workdir, "iteration": agent.iteration, "seed": args.seed}
        info["simulations"] = int(agent.settings.agent.search.num_simulations)
        made = recording.match_records(agent.game, result, name, name, policies=policies, info=info)
        recording.write_records(args.records, agent.game, made, "selfplay", fmt)
        print(f"wrote {len(made)} self-play records to {args.records}")
    return 0


def evaluate_recorder(args, agent, kind: str):
    """(the format of `--records`, a `Recorder` of host games or None); a bad format is a
    one-line error before any game."""
    if not args.records:
        return None, None
    fmt = recording.check_format(agent.game, args.records_format)
    return fmt, recording.Recorder() if kind == "engine" else None


def write_evaluate_records(args, agent, fmt, recorder, result, outcomes, opening) -> None:
    """Writes `azjax evaluate`'s games to `--records`: a batched match's `result`, or the
    host games `recorder` watched (the agent first in the even ones; `outcomes` its)."""
    name = f"azjax-{agent.iteration}"
    info = {"workdir": args.workdir, "seed": args.seed, "opening_plies": opening}
    info["simulations"] = agent.num_simulations
    if recorder is None:
        made = recording.match_records(agent.game, result, name, args.opponent, info=info)
    else:
        step = jax.jit(agent.game.step)
        made = []
        for index, watched in enumerate(recorder.games):
            first = index % 2 == 0
            made.append(
                recording.make_record(
                    agent.game,
                    watched.start,
                    watched.actions,
                    outcomes[index] if first else -outcomes[index],
                    final=watched.final(step),
                    source=f"game {index}",
                    players=(name, args.opponent) if first else (args.opponent, name),
                    info=info,
                )
            )
    recording.write_records(args.records, agent.game, made, "arena", fmt)
    print(f"wrote {len(made)} records to {args.records}")
