"""`azjax zoo --export RUN --name NAME`: rates a run's newest checkpoint against fixed
opponents and outside engines (95% intervals) and writes it into the zoo
(`azjax/matches/zoo/agents/NAME/`); `azjax zoo --rate NAME` rates a shipped agent against more, by
playing or (`--from-tournament DIR`) from the games of a tournament it played."""

import dataclasses
import math
import platform
import re
from pathlib import Path

import jax

from azjax.config.opponents import parse_opponent_spec
from azjax.matches import arena, zoo
from azjax.matches.agent import load_agent, play_opponent
from azjax.matches.tournament.log import GameLog, read_settings, score_of
from azjax.paths import workdir_path
from azjax.runs.metrics import read_metrics
from azjax.types import UserError

_NAME = re.compile(r"[a-z0-9][a-z0-9_]{0,47}")


def cpu_model() -> str:
    """The processor's model name (Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _finite(elo: float) -> float | None:
    """An Elo for JSON: None where a perfect or null score makes it infinite."""
    return round(elo, 1) if math.isfinite(elo) else None


def _elo(value: float | None, sign: int) -> str:
    return f"{value + 0.0:+.0f}" if value is not None else ("+inf" if sign > 0 else "-inf")


def rate(agent, opponents: list[str], games: int, seed: int, engine_games=None) -> list[dict]:
    """The agent's score and Elo (95% Wilson intervals) against each opponent, half the
    games with each colour: `games` batched games against azjax's own opponents, and
    `engine_games` (default `games`) host games one at a time against an outside engine
    (`gtp:"COMMAND"`, `uci:"COMMAND"`) or the solver (`agent.play_opponent`), whose games
    that did not end by the rules (the engine failed, resigned or played an illegal move:
    it lost) are counted as `forfeits`.

    Raises:
      UserError: a bad opponent, or an engine that cannot play the agent's game.
    """
    ratings = []
    for index, spec in enumerate(opponents):
        engine = parse_opponent_spec(spec)[0] == "engine"
        outcomes, reasons, _ = play_opponent(
            agent,
            spec,
            num_games=(engine_games or games) if engine else games,
            key=jax.random.PRNGKey(seed + index),
            seed=seed,
        )
        ratings.append(_rating(spec, outcomes, {"forfeits": len(reasons)} if engine else {}))
    return ratings


def _rating(opponent: str, outcomes, extra: dict) -> dict:
    """A card's rating row: the agent's outcomes (+1, 0, -1 per game) against `opponent`."""
    summary = arena.summarize(outcomes)
    return {
        "opponent": opponent,
        "games": summary.games,
        "wins": summary.wins,
        "draws": summary.draws,
        "losses": summary.losses,
        "score": round(summary.score, 4),
        "low": round(summary.score_low, 4),
        "high": round(summary.score_high, 4),
        "elo": _finite(summary.elo),
        "elo_low": _finite(summary.elo_low),
        "elo_high": _finite(summary.elo_high),
        **extra,
    }


def export(
    workdir: str,
    name: str,
    *,
    command: str,
    opponents: list[str],
    games: int,
    seed: int = 0,
    engine_games: int | None = None,
    notes: str = "",
    into: Path | None = None,
) -> zoo.Card:
    """Rates `workdir`'s newest checkpoint and writes it as the zoo agent `name`.

    Raises:
      UserError: a bad name, no run or checkpoint, a bad opponent.
    """
    if not _NAME.fullmatch(name):
        raise UserError(f"a zoo name is lower-case letters, digits and _, got {name!r}")
    agent = load_agent(workdir)
    logged = (workdir_path(workdir) / "metrics.jsonl").exists()
    records = (
        [r for r in read_metrics(workdir) if r["iteration"] <= agent.iteration] if logged else []
    )
    minutes = records[-1]["wall_time"] / 60 if records else 0.0
    card = zoo.Card(
        name=name,
        game=agent.settings.run.game,
        iteration=agent.iteration,
        train_minutes=round(minutes, 1),
        command=command,
        cpu=cpu_model(),
        ratings=tuple(rate(agent, opponents, games, seed, engine_games)),
        notes=notes,
    )
    zoo.save((into or zoo.AGENTS) / name, agent.settings, agent.variables, card)
    return card


def rerate(
    name: str,
    opponents: list[str],
    *,
    games: int,
    seed: int = 0,
    engine_games: int | None = None,
) -> zoo.Card:
    """Rates the shipped agent `name` against `opponents` and writes the ratings into its
    card, each in place of an earlier rating against the same opponent (the network and
    config are untouched).

    Raises:
      UserError: no such agent, a bad opponent.
    """
    agent = load_agent(zoo.PREFIX + name.removeprefix(zoo.PREFIX))
    return _write_ratings(zoo.card(name), rate(agent, opponents, games, seed, engine_games))


def rate_from_tournament(name: str, directory: str, opponents: list[str] | None = None):
    """Writes into the card of the shipped agent `name` its ratings from the games it played
    in the tournament at `directory` (`azjax tournament --players zoo:NAME ...`): one per
    opponent it met there (or each of `opponents`), each in place of an earlier rating
    against the same opponent. A rating of hundreds of slow games is best played as a
    tournament, which saves every batch and resumes after a stop; this puts it on the card.
    Games an outside engine lost without the rules ending them are counted as `forfeits`.

    Raises:
      UserError: no such agent or tournament; the agent played there at other simulations
        than its own (`--simulations`: its card rates it as it plays by default) or another
        checkpoint; an opponent it played no game against.
    """
    player = zoo.PREFIX + name.removeprefix(zoo.PREFIX)
    card = zoo.card(player)
    settings = read_settings(directory)
    if not settings:
        raise UserError(f"{directory} holds no tournament (no tournament.json)")
    info = settings["players"].get(player)
    if info is None:
        raise UserError(f"{player} played no game in the tournament at {directory}")
    own = zoo.read_settings(player).agent.simulations
    if (info.get("simulations"), info.get("step")) != (own, card.iteration):
        raise UserError(
            f"{player} played at {info.get('simulations')} simulations (iteration "
            f"{info.get('step')}) in {directory}; its card rates it at its own {own} "
            f"(iteration {card.iteration})"
        )
    log = GameLog(directory)
    met = log.opponents(player)
    for spec in opponents or ():
        if spec not in met:
            said = ", ".join(met) or "no one"
            raise UserError(f"{player} played no game against {spec} in {directory} (met: {said})")
    ratings = []
    for other in opponents or met:
        games = log.between(player, other)
        extra = {}
        if settings["players"].get(other, {}).get("kind") == "engine":
            extra["forfeits"] = sum(bool(game["reason"]) for game in games)
        ratings.append(_rating(other, [2 * score_of(g, player) - 1 for g in games], extra))
    return _write_ratings(card, ratings)


def _write_ratings(before: zoo.Card, ratings: list[dict]) -> zoo.Card:
    """`before` with `ratings`, each in place of one against the same opponent, written."""
    new = {r["opponent"]: r for r in ratings}
    kept = [new.pop(r["opponent"], r) for r in before.ratings]
    card = dataclasses.replace(before, ratings=(*kept, *new.values()))
    zoo.write_card(zoo.agent_folder(before.name), card)
    return card


def format_table(cards: list[zoo.Card | zoo.Damaged]) -> str:
    """`azjax zoo`'s table: name, game, training, each rating with its interval, command;
    one line for a damaged agent (`zoo.cards`)."""
    lines = []
    for card in cards:
        if isinstance(card, zoo.Damaged):
            lines.append(f"{card.name}  (damaged: {card.reason})")
            continue
        lines.append(
            f"{card.name}  ({card.game}, iteration {card.iteration}, "
            f"{card.train_minutes:g} min on {card.cpu})"
        )
        for r in card.ratings:
            forfeits = f", {r['forfeits']} forfeited" if r.get("forfeits") else ""
            lines.append(
                f"    vs {r['opponent']:<10} {r['score']:.3f} ({r['low']:.3f}-{r['high']:.3f}) "
                f"in {r['games']} games{forfeits}, Elo {_elo(r['elo'], 1)} "
                f"({_elo(r['elo_low'], -1)} to {_elo(r['elo_high'], 1)})"
            )
        lines.append(f"    trained by: {card.command}")
        if card.notes:
            lines.append(f"    note: {card.notes}")
    return "\n".join(lines)
