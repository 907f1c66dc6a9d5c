"""The frontier study's ratings and report (`azjax frontier`, see `apps/frontier`): every
trained point of every size against the anchors, calibrated once, on one Elo scale (with the
share of moves worse than perfect play where a solver knows the game), and `DIR/report.md`
with `DIR/frontier.png` from `frontier_fit`."""

import json
import math
import zlib
from pathlib import Path

import jax
import numpy as np

from azjax import compile_cache, interrupt
from azjax.apps import frontier_fit
from azjax.apps.frontier_plan import RATINGS, checkpoints, read_rows, size_config
from azjax.config import build, parse_opponent_spec
from azjax.matches import agent as agent_lib
from azjax.matches import arena
from azjax.matches import mistakes as mistakes_lib
from azjax.matches.ratings import anchors as anchors_lib
from azjax.paths import write_atomically
from azjax.training import evaluation

__all__ = ["anchor_ratings", "rate", "report"]


def anchor_ratings(directory: Path, settings: dict, *, quiet: bool = False) -> dict[str, float]:
    """The anchors' Elo from their round robin in `DIR/eval_anchors` (played once, then read)."""
    config = size_config(settings, settings["sizes"][0])
    specs = settings["anchors"]
    return evaluation.calibrate(
        directory,
        config.game,
        dict(config.game_kwargs),
        specs,
        anchor=anchors_lib.default_anchor(specs),
        games_per_pair=settings["games"],
        seed=settings["seed"],
        quiet=quiet,
    )


def rate(directory: Path, settings: dict, schedule: dict) -> list[dict]:
    """Rates every trained point of every size at each simulation count against the anchors
    (calibrated once); returns all rating rows (those of `DIR/ratings.jsonl` kept)."""
    config = size_config(settings, settings["sizes"][0])
    fixed = anchor_ratings(directory, settings)
    path = directory / RATINGS
    rows = read_rows(path)
    # Rows of checkpoints the schedule no longer holds (a study planned by an older azjax).
    kept = [r for r in rows if schedule[r["size"]]["points"].get(r["point"]) == r["iteration"]]
    if len(kept) < len(rows):
        write_atomically(path, "".join(json.dumps(r) + "\n" for r in kept).encode())
        rows = kept
    done = {(r["size"], r["point"], r["simulations"]) for r in rows}
    positions = None
    if settings["mistakes"]:
        positions = mistakes_lib.make_positions(
            settings["mistakes"], seed=settings["seed"], game=build.make_game(config)
        )
    for size in settings["sizes"]:
        workdir = directory / "runs" / size
        trained = set(checkpoints(workdir))
        metrics = {r["iteration"]: r for r in read_rows(workdir / "metrics.jsonl")}
        per_iteration = schedule[size]["iteration_flops"]
        for point, iteration in schedule[size]["points"].items():
            if iteration not in trained:
                continue
            for simulations in settings["simulations"]:
                if (size, point, simulations) in done:
                    continue
                if interrupt.requested():  # the rows so far are kept: rerunning resumes
                    raise KeyboardInterrupt
                agent = agent_lib.load_agent(workdir, step=iteration, num_simulations=simulations)
                row = _rating(agent, settings, fixed, size, point, simulations)
                record = metrics.get(iteration, {})
                row.update(
                    parameters=schedule[size]["parameters"],
                    iteration=iteration,
                    flops=record.get("total_train_flops", iteration * per_iteration),
                    positions=record.get("total_positions"),
                    minutes=record.get("wall_time", math.nan) / 60,
                )
                if positions is not None:
                    measured = mistakes_lib.measure(
                        agent, positions, simulations, name=size, seed=settings["seed"]
                    )
                    row.update(
                        mistakes=measured["rate"],
                        mistakes_low=measured["rate_low"],
                        mistakes_high=measured["rate_high"],
                    )
                print(_format(row), flush=True)
                with path.open("a") as file:
                    file.write(json.dumps(row) + "\n")
                rows.append(row)
        _MATCHES.clear()  # the next size's matches are programs of their own
        compile_cache.release()
    return rows


# Compiled matches by (the run's pipeline, simulations, anchor, games): a size's checkpoints
# differ only in their variables, so each size plays each anchor through one compilation.
_MATCHES: dict = {}


def _outcomes(agent, spec: str, games: int, key) -> list[float]:
    """The agent's outcomes in `games` games against the anchor `spec` (2 random opening
    plies, seeded by `key`); outside engines play host games."""
    if parse_opponent_spec(spec)[0] == "engine":
        results, _, _ = agent_lib.play_opponent(
            agent, spec, num_games=games, key=key, opening_plies=2
        )
        return [float(x) for x in results]
    signature = (agent.settings.pipeline_key, agent.num_simulations, spec, games)
    if signature not in _MATCHES:
        opponent, params = agent_lib.make_opponent(agent.game, spec)
        match = arena.make_match(
            agent.game, agent.player, opponent, num_games=games, opening_plies=2
        )
        _MATCHES[signature] = (jax.jit(match), params)
    match, params = _MATCHES[signature]
    return [float(x) for x in jax.device_get(match(agent.variables, params, key).outcomes)]


def _rating(agent, settings: dict, fixed: dict, size: str, point: int, simulations: int):
    """One checkpoint's games against each anchor and its Elo with the anchors fixed."""
    outcomes, scores = {}, {}
    for spec in settings["anchors"]:
        name = f"{size}/{point}/{simulations}/{spec}"
        key = jax.random.fold_in(jax.random.PRNGKey(settings["seed"]), zlib.crc32(name.encode()))
        outcomes[spec] = _outcomes(agent, spec, settings["games"], key)
        scores[spec] = float(np.mean([(x + 1) / 2 for x in outcomes[spec]]))
    elo = anchors_lib.estimate(outcomes, fixed)
    return {
        "size": size,
        "point": point,
        "simulations": simulations,
        "elo": elo["eval/elo"],
        "elo_low": elo["eval/elo_low"],
        "elo_high": elo["eval/elo_high"],
        "scores": scores,
    }


def _format(row: dict) -> str:
    text = (
        f"[{row['size']}] point {row['point']} ({row['flops']:.2e} FLOPs), "
        f"{row['simulations']} simulations: Elo {row['elo']:.0f} "
        f"({row['elo_low']:.0f} to {row['elo_high']:.0f})"
    )
    if "mistakes" in row:
        text += f", mistakes {100 * row['mistakes']:.1f}%"
    return text


def report(directory: Path, rows: list[dict], *, title: str, targets: tuple = ()) -> str:
    """Writes `DIR/report.md` (and `DIR/frontier.png` where matplotlib is installed);
    `targets` are (label, Elo) pairs whose compute the report predicts."""
    text = frontier_fit.report_markdown(rows, title=title, targets=targets)
    measured = [r for r in rows if "mistakes" in r]
    if measured:  # Connect Four against perfect play
        lines = ["", "Moves worse than perfect play (share of the seeded positions, 95%):", ""]
        lines += ["| size | point | flops | simulations | mistakes |", "|---|---:|---:|---:|---|"]
        for r in sorted(measured, key=lambda r: (r["parameters"], r["point"], r["simulations"])):
            lines.append(
                f"| {r['size']} | {r['point']} | {r['flops']:.1e} | {r['simulations']} | "
                f"{100 * r['mistakes']:.1f}% [{100 * r['mistakes_low']:.1f}, "
                f"{100 * r['mistakes_high']:.1f}] |"
            )
        text += "\n".join(lines) + "\n"
    (directory / "report.md").write_text(text + "\n")
    if rows:
        try:
            frontier_fit.plot_frontier(rows, directory / "frontier.png")
        except ModuleNotFoundError:  # the [plots] extra: the report stands without it
            pass
    return text
