"""Throughput of every stage, from a board move to a gradient step: `azjax bench`.

    azjax bench --game connect_four                # full table, a few minutes on a laptop CPU
    azjax bench --game tic_tac_toe --quick         # tiny sizes, a smoke test

`harness.py` reads the config, runs the measurements and tabulates; `timing.py` holds the
settings, table rows and timing they share; `measure.py` the measurements (random play,
legal-move masks, search, self-play, learner); `pgx.py` pgx's environments for the
comparison. The other flags have a module each: `memory_report.py` (`--memory`),
`population.py` (`--population`), `search_options.py` (`--search-options`) and
`compile_time.py` (`--compile`).
"""

from azjax.apps.bench.harness import main, run

__all__ = ["main", "run"]
