"""AlphaGo Zero's gating: self-play plays the best network so far, not the newest one.

With `train.gating` the learner trains the current network as usual, but `compiled.iterate`
self-plays with the best one. Every `train.gating_every` iterations the current network plays
the best for `train.gating_games` games (the evaluation search: no noise,
`eval.num_simulations`; 2 random opening plies, since both sides are deterministic; half the
games with each colour) and replaces it when it scores at least `train.gating_threshold`,
draws counting half. AlphaZero dropped the gate; it is off by default.

The best network lives outside the checkpoints (whose format is unchanged), in
`WORKDIR/gating/`: `best_<I>.msgpack` (`flax.serialization`) is the network of iteration I
(0: the initial one), written when it becomes the best, and `best.json` names the current
best. Every gated iteration's metrics record holds `gating/best_iteration`, so a checkpoint's
history says which best network its self-play continues with: a resumed run loads that file
and equals a straight run, even where the best changed after the newest checkpoint. Files
that neither the current best nor a kept checkpoint needs are deleted after each save.
"""

import dataclasses
import json
import time
from pathlib import Path

import flax.serialization
import jax

from azjax.config.settings import Settings
from azjax.core.steps import Pipeline
from azjax.matches import arena
from azjax.paths import workdir_path, write_atomically
from azjax.types import UserError

_MATCHES: dict = {}


def make_gate(settings: Settings, pipeline: Pipeline, workdir: Path, *, sharding, log) -> "Gate":
    """The gate of a gated run (`RunSettings.gating` of `settings`) in `workdir`; the compiled match
    is shared by runs of this process with the same agent search and number of games.

    Args:
      sharding: the `NamedSharding` tree of the learner's variables (`CompiledRun.shardings`),
        given to the best network so that the compiled self-play is reused.
      log: prints one line per gating match.
    """
    gating, agent = settings.run.gating, settings.agent
    search = dataclasses.astuple(agent.search.params_for(explore=False))
    key = (settings.pipeline_key, search, agent.simulations, gating.games)
    if key not in _MATCHES:
        searcher = agent.searcher(pipeline.eval_game, pipeline.network)
        player = arena.search_player(searcher)
        match = arena.make_match(
            pipeline.eval_game,
            player,
            player,
            num_games=gating.games,
            opening_plies=2,
        )
        _MATCHES[key] = jax.jit(match)
    return Gate(
        _MATCHES[key],
        workdir_path(workdir) / "gating",
        every=gating.every,
        threshold=gating.threshold,
        seed=settings.run.seed,
        sharding=sharding,
        log=log,
    )


class Gate:
    """The best network of a gated run, its files, and the match that challenges it.

    Attributes:
      variables: the best network, with the learner's sharding (None before `begin`).
      iteration: the iteration that trained it (0: the initial network).
    """

    def __init__(self, match, directory: Path, *, every, threshold, seed, sharding, log):
        self._match = match  # match(current, best, key) -> arena.MatchResult
        self.directory = directory
        self.every, self.threshold, self.seed = every, threshold, seed
        self._sharding, self._log = sharding, log
        self.variables, self.iteration = None, 0

    def path(self, iteration: int) -> Path:
        """The file of the best network of `iteration`."""
        return self.directory / f"best_{iteration}.msgpack"

    def begin(self, variables, iteration: int, records: list[dict]) -> None:
        """Restores the best network a run resumed at `iteration` plays with.

        That is the one its last metrics record names, read from its file; where the record
        names none (a new run, or a run gated from now on), the network `variables` of
        `iteration` becomes the best, and is saved.

        Raises:
          UserError: the file of the named best network is missing or unreadable.
        """
        last = records[-1] if records and records[-1]["iteration"] == iteration else {}
        if "gating/best_iteration" not in last:
            self._replace(variables, iteration)
            return
        best = int(last["gating/best_iteration"])
        path = self.path(best)
        template = jax.device_get(variables)
        try:
            restored = flax.serialization.from_bytes(template, path.read_bytes())
        except FileNotFoundError:
            raise UserError(
                f"{path} is missing: the best network (iteration {best}) of this gated run "
                "cannot be restored"
            ) from None
        except Exception as error:
            raise UserError(f"{path} is damaged: {str(error)[:200]}") from None
        self.variables, self.iteration = jax.device_put(restored, self._sharding), best

    def __call__(self, variables, iteration: int) -> dict:
        """After iteration `iteration`: plays the gating match when it is due and keeps the
        better network. Returns the record's gating metrics."""
        if iteration % self.every:
            return {"gating/best_iteration": self.iteration}
        started = time.perf_counter()
        key = jax.random.fold_in(jax.random.PRNGKey(self.seed + 2), iteration)
        outcomes = jax.device_get(self._match(variables, self.variables, key).outcomes)
        summary = arena.summarize(outcomes)
        accepted = summary.score >= self.threshold
        self._log(
            f"gating at iteration {iteration}: score {summary.score:.3f} in {summary.games} "
            f"games against the best network (iteration {self.iteration}): "
            + ("accepted, self-play plays it from now on" if accepted else "the best stays")
        )
        if accepted:
            self._replace(variables, iteration)
        return {
            "gating/score": summary.score,
            "gating/accepted": int(accepted),
            "gating/best_iteration": self.iteration,
            "gating_seconds": time.perf_counter() - started,
        }

    def _replace(self, variables, iteration: int) -> None:
        """Makes `variables` the best network and writes its file, then `best.json`."""
        self.variables, self.iteration = variables, iteration
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path(iteration), flax.serialization.to_bytes(variables), sync=True)
        pointer = {"iteration": iteration, "file": self.path(iteration).name}
        write_atomically(self.directory / "best.json", json.dumps(pointer).encode(), sync=True)

    def prune(self, checkpoint_steps: list[int], records: list[dict]) -> None:
        """Deletes the files of best networks that neither the current best nor a kept
        checkpoint (`checkpoint_steps`, resumed with `records`) plays with."""
        steps = set(checkpoint_steps)
        keep = {self.iteration} | {
            int(r["gating/best_iteration"])
            for r in records
            if r["iteration"] in steps and "gating/best_iteration" in r
        }
        for path in self.directory.glob("best_*.msgpack"):
            number = path.stem.removeprefix("best_")
            if number.isdigit() and int(number) not in keep:
                path.unlink(missing_ok=True)
