"""Bad places and values get one line and a non-zero exit before anything is built or
written; game rule options are set from the command line.

Every case runs `azjax` in-process (`cli.main`) and checks: status 2, exactly one stderr line
starting with `azjax: error:`, the key or argument named, and no run directory created.
"""

import json
import os
import re
import shutil
import subprocess

import jax
import pytest
from conftest import PYTHON, subprocess_env, tiny_config

from azjax import config as config_lib
from azjax.apps import api, cli
from azjax.config import build, schema
from azjax.matches.agent import load_agent
from azjax.runs.directory import prepare_workdir
from azjax.training import compiled, evaluation, memory_check
from azjax.types import UserError


def assert_one_line_error(capsys, argv, *fragments, status=2):
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("azjax: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("train.keep_checkpoints=0", "'train.keep_checkpoints' must be in [1, inf)"),
        ("learner.updates_per_iteration=0", "'learner.updates_per_iteration'"),
        ("learner.updates_per_iteration=-3", "'learner.updates_per_iteration'"),
        ("network.value_hidden=0", "'network.value_hidden'"),
        ("search.max_num_considered_actions=0", "'search.max_num_considered_actions'"),
        ("search.num_simulations=0", "'search.num_simulations'"),
        ("search.dirichlet_fraction=1.5", "'search.dirichlet_fraction' must be in [0.0, 1.0]"),
        ("learner.learning_rate=nan", "'learner.learning_rate' must be a finite number"),
        ("learner.learning_rate=0", "'learner.learning_rate' must be in (0.0, 10.0]"),
        ("learner.learning_rate=1e38", "'learner.learning_rate' must be in (0.0, 10.0]"),
        ("learner.momentum=1.5", "'learner.momentum'"),
        ("eval.num_games=3", "'eval.num_games' must be even"),
        ("replay.min_size=100000", "'replay.min_size'"),
        ("learner.boundaries=(-1,)", "'learner.boundaries'"),
        ("search.algorithm=alphabeta", "'search.algorithm' must be one of puct, gumbel"),
        ("eval.opponents=('mcts:0',)", "mcts:N needs a positive number"),
        ("selfplay.batch_size=1.5", "'selfplay.batch_size' expects int"),
        ("game_kwargs.nope=1", "game 'connect_four' takes the options"),
        ("train.devices=-1", "unknown config key 'train.devices'"),
        ("seed=-1", "'seed' must be in [0, 4611686018427387904]"),
        ("seed=9223372036854775808", "'seed' must be in [0, 4611686018427387904]"),
        ("seed=4611686018427387905", "'seed' must be in [0, 4611686018427387904]"),
        ("eval.opponents=('mcts:99999999999999999999',)", "mcts:N needs a positive number"),
        ("eval.opponents=('ladder:²',)", "ladder:N needs a positive number"),
    ],
)
def test_bad_config_values(capsys, tmp_path, override, fragment):
    workdir = tmp_path / "run"
    assert_one_line_error(capsys, ["train", "--workdir", workdir, f"--config.{override}"], fragment)
    assert not workdir.exists()


def test_a_replay_too_big_for_memory_is_refused_before_it_is_allocated(capsys, tmp_path):
    """The replay of 2e9 positions (XLA's allocation of it waited at 0% CPU for good, deaf
    to signals): one line naming the state's size and the free memory, in seconds."""
    run = tmp_path / "run"
    argv = ["train", "--config", "tic_tac_toe", "--workdir", run, "--config.eval.every=0",
            "--config.train.num_iterations=1", "--config.replay.capacity=2000000000"]  # fmt: skip
    line = assert_one_line_error(capsys, argv, "the run's state needs", "lower replay.capacity")
    needed, free = (float(x) for x in re.findall(r"([\d.]+) GiB", line)[::2])
    assert needed > free > 0, line
    # Nothing written: the same folder takes the run with a replay that fits (a saved
    # config.json of the refused run would refuse it as a changed config).
    assert not run.exists()
    prepare_workdir(build.make_settings(tiny_config()), run, allow_config_change=False)


# A state that fits the host's free memory, not what `ulimit -v` leaves the process: XLA's
# allocation failed without a word and reading the state waited for good, deaf to signals.
ULIMITED = """
import resource, sys
_, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (int(6.5 * 2**30), hard))
if sys.argv[1] == "unchecked":  # the plan passes: the failed allocation itself must say so
    from azjax.training import memory_check
    memory_check.host_available = lambda: None
from azjax.apps.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _train_limited(tmp_path, check: str, capacity: int) -> tuple[int, list[str]]:
    """`azjax train` of tic_tac_toe under a 6.5 GiB `ulimit -v`: (status, stderr lines); a
    hang fails the test at its timeout."""
    argv = ["train", "--config", "tic_tac_toe", "--workdir", str(tmp_path / "run"),
            "--config.eval.every=0", "--config.train.num_iterations=1",
            f"--config.replay.capacity={capacity}"]  # fmt: skip
    result = subprocess.run([PYTHON, "-c", ULIMITED, check, *argv], capture_output=True,
                            text=True, env=subprocess_env(), timeout=300)  # fmt: skip
    return result.returncode, result.stderr.strip().splitlines()


def test_the_memory_check_counts_the_address_space_ulimit_leaves(tmp_path):
    """A replay of 8.4 GiB under a 6.5 GiB `ulimit -v`: one line before anything is written
    (the host's free memory took it, and the allocation hung)."""
    status, said = _train_limited(tmp_path, "checked", 200_000_000)
    assert status == 2 and len(said) == 1, said
    assert said[0].startswith("azjax: error: the run's state needs 8.4 GiB"), said
    assert "free to this process on this host" in said[0]
    assert not (tmp_path / "run").exists()


def test_an_allocation_that_fails_all_the_same_is_one_line_not_a_hang(tmp_path):
    """The memory plan passed (patched), and XLA's allocation of an 8.4 GiB replay fails:
    one line naming out of memory, status 1 (it waited for good, deaf to signals)."""
    status, said = _train_limited(tmp_path, "unchecked", 200_000_000)
    assert status == 1 and len(said) == 1, said
    assert said[0].startswith("azjax: error: out of memory (RESOURCE_EXHAUSTED"), said
    assert "lower the batch sizes or replay.capacity" in said[0]


def test_the_memory_check_reads_a_containers_limit(tmp_path):
    """A cgroup's limit less its use (v2 and v1), which `/proc/meminfo` does not show; no
    limit: None."""
    root = tmp_path / "cgroup"
    (root / "pod").mkdir(parents=True)
    (root / "pod" / "memory.max").write_text(f"{8 * 2**30}\n")
    (root / "pod" / "memory.current").write_text(f"{3 * 2**30}\n")
    v2 = tmp_path / "v2"
    v2.write_text("0::/pod\n")
    assert memory_check._cgroup_available(str(v2), str(root)) == 5 * 2**30
    (root / "pod" / "memory.max").write_text("max\n")
    assert memory_check._cgroup_available(str(v2), str(root)) is None
    (root / "memory" / "job").mkdir(parents=True)
    (root / "memory" / "job" / "memory.limit_in_bytes").write_text(f"{4 * 2**30}\n")
    (root / "memory" / "job" / "memory.usage_in_bytes").write_text(f"{2**30}\n")
    v1 = tmp_path / "v1"
    v1.write_text("5:cpu:/\n4:memory:/job\n")
    assert memory_check._cgroup_available(str(v1), str(root)) == 3 * 2**30
    (root / "memory" / "job" / "memory.limit_in_bytes").write_text(f"{2**63 - 4096}\n")
    assert memory_check._cgroup_available(str(v1), str(root)) is None


def test_the_memory_check_counts_the_devices_share(monkeypatch):
    """A state that fits in the memory it is given passes; half that memory refuses it."""
    run = compiled.compile_run(build.make_settings(tiny_config()), compiled.make_mesh(1))
    key = jax.random.PRNGKey(0)
    state = jax.eval_shape(run.init, key)
    size = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state))
    monkeypatch.setattr(memory_check, "host_available", lambda: size)
    memory_check.check_state(run.init, key)
    monkeypatch.setattr(memory_check, "host_available", lambda: size // 2)
    with pytest.raises(UserError, match="the run's state needs"):
        memory_check.check_state(run.init, key)


def test_game_rule_options_from_the_command_line():
    config = config_lib.load_config("go_9x9")
    config_lib.apply_overrides(config, {"game_kwargs.komi": "6.5", "game_kwargs.superko": "0"})
    assert config.game_kwargs.komi == 6.5 and config.game_kwargs.superko is False
    game = build.make_game(config)
    assert game.komi == 6.5 and not game.superko
    config = config_lib.load_config("gomoku_6x6_k4")
    config_lib.apply_overrides(config, {"game_kwargs.rule": "standard"})
    assert build.make_game(config).rule == "standard"


def test_selfplay_rule_options_change_selfplay_alone():
    """`selfplay.game_kwargs`: self-play plays its own rules; evaluations play `game_kwargs`."""
    config = config_lib.load_config("xiangqi")
    overrides = {
        "selfplay.game_kwargs.no_capture_limit": "None",
        "selfplay.game_kwargs.repetition_limit": "None",
    }
    config_lib.apply_overrides(config, overrides)
    assert dict(config.game_kwargs) == {}
    pipeline = build.make_pipeline(config)
    assert pipeline.game.no_capture_limit is None and pipeline.game.repetition_limit is None
    assert pipeline.eval_game.no_capture_limit == 120 and pipeline.eval_game.repetition_limit == 3
    assert (
        evaluation.evaluation_for(build.make_settings(config), pipeline).game is pipeline.eval_game
    )
    assert build.make_game(config).repetition_limit == 3  # agents and checkpoints: the rules
    # Saved and read back, and a config saved before the key gets none.
    data = json.loads(config_lib.to_json(config))
    assert config_lib.from_dict(data, source="x").selfplay.game_kwargs.to_dict() == {
        "no_capture_limit": None,
        "repetition_limit": None,
    }
    del data["selfplay"]["game_kwargs"]
    assert dict(config_lib.from_dict(data, source="x").selfplay.game_kwargs) == {}
    # Without the key self-play and evaluations play one game object.
    plain = build.make_pipeline(config_lib.load_config("xiangqi"))
    assert plain.eval_game is plain.game and plain.game.repetition_limit == 3
    # The CPU experiment plays self-play without the draw rules.
    cpu = build.make_pipeline(config_lib.load_config("xiangqi:cpu"))
    assert cpu.game.repetition_limit is None and cpu.eval_game.repetition_limit == 3


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("game_kwargs.komi=nan_ish", "komi"),
        ("game_kwargs.size=40", "bad options for game 'go_9x9'"),
        ("game_kwargs.komy=6.5", "did you mean 'game_kwargs.komi'?"),
        ("selfplay.game_kwargs.komy=6.5", "did you mean 'selfplay.game_kwargs.komi'?"),
        ("selfplay.game_kwargs.size=7", "'selfplay.game_kwargs' changes the observation's shape"),
        ("selfplay.game_kwargs.size=40", "bad options for game 'go_9x9'"),
    ],
)
def test_bad_game_rule_options(capsys, tmp_path, override, fragment):
    argv = ["train", "--config", "go_9x9", "--workdir", tmp_path / "run", f"--config.{override}"]
    assert_one_line_error(capsys, argv, fragment)


def test_schema_knows_every_default_key():
    schema.validate(config_lib.base_config())
    schema.validate(config_lib.accelerator_config())
    config = config_lib.base_config()
    with config.unlocked():
        config.search.typo = 3
    with pytest.raises(UserError, match="unknown config key 'search.typo'"):
        schema.validate(config)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("validation") / "run"
    config = tiny_config()
    config.train.num_iterations = 2
    api.train(config, workdir, quiet=True)
    return workdir


def test_workdir_that_is_a_file_or_under_a_file(capsys, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("not a directory")
    for workdir in (a_file, a_file / "run"):
        assert_one_line_error(
            capsys, ["train", "--workdir", workdir], "cannot use", "as a run directory"
        )
    assert a_file.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only tmpfs")
def test_workdir_on_a_read_only_file_system(capsys, tmp_path):
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount_point)])
    try:
        assert_one_line_error(
            capsys, ["train", "--workdir", mount_point / "run"], "Read-only file system"
        )
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("[1, 2, 3]", "not an azjax config"),
        ("{}", "not an azjax config"),
        ('{"game": "connect_four"}', "config misses the key"),
        ("{not json", "is corrupt"),
        (b"\xff\xfe\x00garbage", "is corrupt"),
        ("[" * 100_000, "is corrupt: nested too deeply"),
        ('{"seed": 1' + "0" * 5000 + "}", "is corrupt: Exceeds the limit (4300 digits)"),
        ('{"a": ' * 900 + "1" + "}" * 900, "not a valid azjax config"),
    ],
)
def test_damaged_config_json(capsys, run_dir, tmp_path, content, fragment):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    path = copy / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    for argv in (
        ["evaluate", "--workdir", copy, "--opponent", "random", "--games", "2"],
        ["train", "--workdir", copy],
    ):
        assert_one_line_error(capsys, argv, str(path), fragment)
    for load in (load_agent, config_lib.load_run_config):
        with pytest.raises(UserError, match=re.escape(fragment)) as raised:
            load(copy)
        assert "\n" not in str(raised.value)


def test_a_saved_seed_out_of_range_is_one_line(capsys, run_dir, tmp_path):
    """A run directory whose config.json holds a seed of 2**63 (a run made before the seed's
    range was checked): one line on every retry, not an OverflowError."""
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    config = json.loads((copy / "config.json").read_text())
    config["seed"] = 2**63
    (copy / "config.json").write_text(json.dumps(config))
    assert_one_line_error(capsys, ["train", "--workdir", copy], "'seed' must be in [0, ")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--simulations", "-3"], "--simulations"),
        (["--simulations", "0"], "--simulations"),
        (["--games", "3"], "--games"),
        (["--games", "0"], "--games"),
        (["--opening-plies", "-1"], "--opening-plies"),
        (["--opening-plies", "9"], "--opening-plies must be below the longest game"),
        (["--opening-plies", "٣"], "--opening-plies"),
        (["--opponent", "mcts:-5"], "mcts:N needs a positive number"),
        (["--opponent", "nobody"], "bad opponent 'nobody'"),
    ],
)
def test_bad_evaluate_arguments(capsys, run_dir, argv, fragment):
    assert_one_line_error(capsys, ["evaluate", "--workdir", run_dir, *argv], fragment)


@pytest.mark.parametrize("devices", ["0", "-1", "999"])
def test_bad_device_counts(capsys, tmp_path, devices):
    workdir = tmp_path / "run"
    assert_one_line_error(capsys, ["train", "--workdir", workdir, "--devices", devices], "devices")
    assert not workdir.exists()


def test_config_json_written_by_a_run_reads_back(run_dir):
    config = config_lib.read_config_file(run_dir / "config.json")
    assert json.loads(config_lib.to_json(config)) == json.loads(
        (run_dir / "config.json").read_text()
    )


def test_every_key_is_defined_once_with_its_doc_range_and_kind():
    from azjax.config.keys import KEYS  # noqa: PLC0415

    flat = schema.flatten(config_lib.base_config().to_dict(), keep_tuples=True)
    for name, key in KEYS.items():
        assert key.doc and key.change in ("fixed", "resume", "gating", "tunable"), name
        default = flat.get(name, {})  # an empty group of game options flattens to nothing
        assert default == key.default, name
        if isinstance(default, int | float) and not isinstance(default, bool):
            assert key.low is not None and key.low <= default, name
            assert key.high is None or default <= key.high, name
        if key.choices:
            assert default in key.choices, name
    # Each tunable key reaches the step functions' Hyperparams record.
    base = jax.tree.leaves(build.make_hyperparams(config_lib.base_config()))
    for name in config_lib.TUNABLE_KEYS:
        config = config_lib.base_config()
        group, field = name.split(".")
        config[group][field] = config[group][field] * 2 + 1
        changed = jax.tree.leaves(build.make_hyperparams(config))
        assert any(a != b for a, b in zip(base, changed, strict=True)), name


def test_a_config_saved_before_every_added_key_loads_as_older_runs_computed():
    from azjax.config.keys import KEYS  # noqa: PLC0415

    saved = json.loads(config_lib.to_json(config_lib.base_config()))
    for name in config_lib.ADDED_KEYS:
        group, field = name.split(".")
        del saved[group][field]
    assert saved["records"] == {}
    del saved["records"]  # a group added whole is absent from older files
    loaded = config_lib.from_dict(saved, source="old/config.json")
    flat = schema.flatten(loaded.to_dict(), keep_tuples=True)
    for name in config_lib.ADDED_KEYS:
        want = config_lib.OLD_VALUES.get(name, KEYS[name].default)
        assert flat.get(name, {}) == want, name
    assert loaded.search.tree_reuse is False and loaded.learner.value_target_mix == 0.0
