"""`azjax bench --search-options`: tree reuse and playout caps off and on, each row measured
in the same run; a fresh search carries nothing over, a reusing one carries part of the root."""

import pytest
from conftest import tiny_config, untrained_run

from azjax.apps import cli

SETTINGS = (
    "self-play, fresh trees",
    "self-play, tree reuse",
    "arena, fresh trees",
    "arena, tree reuse",
    "playout cap, full plies",
    "playout cap, cheap plies",
)


@pytest.mark.deep  # CI: the bench's other tests
@pytest.mark.slow  # six programs to compile: about a minute
def test_search_options_bench_of_a_run(tmp_path, capsys):
    config = tiny_config()
    config.search.num_simulations = 8
    config.selfplay.cheap_simulations = 2
    run = untrained_run(tmp_path / "run", config)
    assert cli.main(["bench", "--search-options", "--workdir", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("setting"))) + 1 :]
    rows = {}
    for line in table:
        setting, numbers = line[:28].strip(), line[28:].split()
        rows[setting] = (float(numbers[0]), float(numbers[-1]))  # ms, visits carried
    assert tuple(rows) == SETTINGS
    assert all(ms > 0 for ms, _ in rows.values())
    assert rows["self-play, fresh trees"][1] == 0 and rows["arena, fresh trees"][1] == 0
    # 8 simulations per move: a carried root adds its visits to the next search's 8.
    for setting in ("self-play, tree reuse", "arena, tree reuse"):
        assert 0 < rows[setting][1] < 1, setting


def test_search_options_bench_takes_a_config_or_a_run(tmp_path, capsys):
    argv = ["bench", "--search-options", "--config", "tic_tac_toe", "--workdir", str(tmp_path)]
    assert cli.main(argv) == 2
    assert "not both" in capsys.readouterr().err
    assert cli.main(["bench", "--search-options", "--workdir", str(tmp_path / "none")]) == 2
