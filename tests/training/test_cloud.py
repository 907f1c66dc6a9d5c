"""gs:// workdirs end to end, against a real Cloud Storage API: the `gcp-storage-emulator`
server (PyPI, the `gcs-emulator` extra; `python -m azjax.apps.gcs_emulator` adds the
generation headers that Cloud Storage sends and tensorstore reads) on 127.0.0.1, reached
through the variable that google-cloud-storage and gcsfs read (`STORAGE_EMULATOR_HOST`;
azjax hands it to tensorstore); the plain emulator, without those headers, is refused in one
line.

Every run is a child process, as on a pod's host: a bucket that stops answering mid-save,
for a while or for good, and `azjax train` with evaluations, Elo anchors and gating writing
to the bucket, resumed from the run alone once the bucket is back, equal to a straight run
(`-m deep` adds the same stopped by a scheduler's SIGTERM inside a save); then the commands
that load a run read it from the bucket; a tournament in the bucket between a bucket run's
checkpoints and the random player, resumed; and a sweep whose trials train in the bucket
while its study is in a database (a journal file there is refused). And
docs/scaling.md's commands for pods and buckets, run as written: its
emulator, a Go 9x9 run over 4 devices of 2 processes into the bucket, resumed by 2 processes
of one device that find each other as a SLURM job's do (`--distributed auto`)."""

import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import time

import psutil
import pytest
from conftest import (
    PYTHON,
    REPO,
    TESTS,
    free_port,
    require_program,
    slurm_environment,
    subprocess_env,
    tiny_experiment,
    with_test_xla_flags,
)

BUCKET = "azjax-test"

# Trains, sending itself SIGTERM when the `at_save`-th checkpoint save begins (as
# tests/test_recovery.py does on a local disk).
STOP_AT_SAVE = """
import os, signal, sys
from azjax.runs import checkpoint
from azjax.apps import cli

at_save = int(sys.argv[1])
real_save = checkpoint.Checkpointer.save
saves = []

def save(self, step, *args, **kwargs):
    saves.append(step)
    if len(saves) == at_save:
        os.kill(os.getpid(), signal.SIGTERM)
    return real_save(self, step, *args, **kwargs)

checkpoint.Checkpointer.save = save
sys.exit(cli.main(sys.argv[2:]))
"""

# Restores the newest network of each run named and prints whether they are equal.
COMPARE = """
import sys
sys.path.insert(0, sys.argv[1])
from conftest import assert_same_variables
import azjax

a, b = (azjax.load_agent(path) for path in sys.argv[2:4])
assert a.iteration == b.iteration, (a.iteration, b.iteration)
assert_same_variables(a.variables, b.variables)
print("same", a.iteration)
"""


def _serve(argv: list[str], folder, port: int) -> subprocess.Popen:
    """Starts an emulator (`argv`) keeping its bucket in `folder`; returns once it listens
    on `port` (its own socket: another test's emulator that took the port between
    `free_port` and this one's start would answer too)."""
    server = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while not _listens(server.pid, port):
        assert server.poll() is None, f"the emulator exited (port {port} taken?)"
        assert time.monotonic() < deadline, "no emulator"
        time.sleep(0.2)
    return server


def _listens(pid: int, port: int) -> bool:
    listening = psutil.Process(pid).net_connections(kind="tcp")
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in listening)


def _stop(server: subprocess.Popen) -> None:
    # The emulator's server may not stop on SIGINT while a client's connection stays open
    # (seen once in CI after the sweep test): it is a test server, killed if it must be.
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=30)


def _emulator_argv(port: int) -> list[str]:
    return [PYTHON, "-m", "azjax.apps.gcs_emulator", "start", "--host", "127.0.0.1",
            "--port", str(port), "--default-bucket", BUCKET, "--quiet"]  # fmt: skip


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """The emulator's address, serving one bucket kept on disk in a temporary folder."""
    require_program("gcp-storage-emulator", install="pip install -e '.[test]'")
    port = free_port()
    server = _serve(_emulator_argv(port), tmp_path_factory.mktemp("emulator"), port)
    yield f"http://127.0.0.1:{port}"
    _stop(server)


def _env(emulator: str) -> dict:
    env = subprocess_env(STORAGE_EMULATOR_HOST=emulator)
    for name in ("TENSORSTORE_GCS_HTTP_URL", "GOOGLE_AUTH_TOKEN_FOR_TESTING"):
        env.pop(name, None)  # azjax sets them from STORAGE_EMULATOR_HOST
    return env


def _run(argv, env, *, check=True, script=None) -> subprocess.CompletedProcess:
    command = [PYTHON, "-c", script, *argv] if script else [PYTHON, "-m", "azjax.apps.cli", *argv]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert result.returncode == 0, f"{argv}:\n{result.stdout}\n{result.stderr}"
    return result


def _bucket(emulator: str):
    """The bucket, through google-cloud-storage (not azjax's code)."""
    from google.auth.credentials import AnonymousCredentials  # noqa: PLC0415
    from google.cloud import storage  # noqa: PLC0415

    client = storage.Client(
        project="test",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": emulator},
    )
    return client.bucket(BUCKET)


def _read(emulator: str, path: str) -> bytes:
    return _bucket(emulator).blob(path).download_as_bytes()


def _names(emulator: str, prefix: str) -> list[str]:
    return [blob.name for blob in _bucket(emulator).list_blobs(prefix=prefix)]


# Evaluations against two fixed opponents (so the Elo anchors' tournament runs) and gating.
OVERRIDES = [
    "--config.eval.every=2",
    "--config.eval.opponents=('random', 'mcts:4')",
    "--config.train.gating=true",
    "--config.train.gating_every=2",
    "--config.train.gating_games=4",
]


def _read_records(emulator: str, name: str) -> list[dict]:
    """The metrics of the 4-iteration run `name` in the bucket."""
    records = [json.loads(line) for line in _read(emulator, f"{name}/metrics.jsonl").splitlines()]
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    return records


def _read_rated_run(emulator: str, name: str) -> list[dict]:
    """`_read_records` of a run trained with `OVERRIDES`, checked for what they write in the
    bucket: evaluations, Elo anchors, gating, TensorBoard."""
    records = _read_records(emulator, name)
    assert "eval/elo" in records[-1] and "gating/best_iteration" in records[-1]
    files = _names(emulator, f"{name}/")
    assert f"{name}/config.json" in files
    assert f"{name}/eval_anchors/ratings.csv" in files
    assert any(f.startswith(f"{name}/gating/best_") for f in files), files
    assert any(f.startswith(f"{name}/tensorboard/events.out.tfevents") for f in files)
    return records


def _assert_same_records(expected: list[dict], records: list[dict]) -> None:
    """Two runs' metrics agree but for their times."""
    ignored = ("wall_time", "seconds", "per_second", "pos/s", "minutes")

    def timeless(record: dict) -> dict:
        return {k: v for k, v in record.items() if not any(w in k for w in ignored)}

    for a, b in zip(expected, records, strict=True):
        assert timeless(a) == timeless(b)


# CI runs the same in the bucket-outage test below (a gs run stopped inside a save, resumed
# from the bucket alone, equal to a straight run, with evaluations, Elo anchors and gating).
@pytest.mark.deep
def test_a_gs_run_stopped_and_resumed_equals_a_straight_run(emulator, tmp_path):
    env = _env(emulator)
    experiment = tiny_experiment(tmp_path, num_iterations=4, checkpoint_every=1)
    straight, resumed = f"gs://{BUCKET}/straight", f"gs://{BUCKET}/resumed"
    train = ["train", "--config", str(experiment)]
    _run([*train, "--workdir", straight, *OVERRIDES], env)

    stopped = _run(["2", *train, "--workdir", resumed, *OVERRIDES], env, script=STOP_AT_SAVE,
                   check=False)  # fmt: skip
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    assert "interrupted: saved iteration 2" in stopped.stdout
    # Resumed from the run alone: its config.json is in the bucket.
    again = _run(["train", "--workdir", resumed], env)
    assert "resum" in again.stdout + again.stderr

    records = {}
    for name in ("straight", "resumed"):
        records[name] = _read_rated_run(emulator, name)
        files = _names(emulator, f"{name}/")
        assert any(f.startswith(f"{name}/checkpoints/4/") for f in files), files
    _assert_same_records(records["straight"], records["resumed"])
    compared = _run([TESTS, straight, resumed], env, script=COMPARE)
    assert compared.stdout.strip() == "same 4"


# Trains; the emulator (process `pid`) stops answering as the 2nd checkpoint save begins and
# answers again 5 s later (a pause), then stops as the 3rd begins, for good (a server that
# hangs: a connection is accepted and never answered, which tensorstore's retries do not
# bound). The run's `train.storage_timeout_s` bounds the checkpoint save and each write of
# its files (gcsfs's own 6 tries and pauses of up to 32 s go on behind it).
# The time the bucket stopped for good is written to the file named second.
OUTAGES_AT_SAVES = """
import os, signal, sys, threading, time
from azjax.runs import checkpoint
from azjax.apps import cli

pid, stopped_at = int(sys.argv[1]), sys.argv[2]
real_save = checkpoint.Checkpointer.save
saves = []

def save(self, step, *args, **kwargs):
    saves.append(step)
    if len(saves) in (2, 3):
        os.kill(pid, signal.SIGSTOP)
    if len(saves) == 2:
        threading.Timer(5, os.kill, (pid, signal.SIGCONT)).start()
    if len(saves) == 3:
        with open(stopped_at, "w") as file:
            file.write(repr(time.time()))
    return real_save(self, step, *args, **kwargs)

checkpoint.Checkpointer.save = save
sys.exit(cli.main(sys.argv[3:]))
"""

BUDGET = 10  # seconds: the run's train.storage_timeout_s


@pytest.mark.slow
def test_a_bucket_that_stops_answering_mid_save_loses_nothing(tmp_path):
    """The bucket stops answering while iteration 2 is saved and is back 5 s later, within
    the run's storage budget (`train.storage_timeout_s`): the run goes on to iteration 3. It
    stops again while iteration 3 is saved, for good: the run stops with one line within the
    budget instead of waiting for answers that never come, naming the last good checkpoint,
    2, when the checkpoint's wait runs out before a file's write;
    once the bucket is back the same command resumes from the bucket alone (its config.json
    there) from iteration 2 or later, with evaluations, Elo anchors and gating writing to the
    bucket. The run ends as a straight one does."""
    require_program("gcp-storage-emulator", install="pip install -e '.[test]'")
    port, folder = free_port(), tmp_path / "bucket"
    folder.mkdir()
    server = _serve(_emulator_argv(port), folder, port)
    emulator = f"http://127.0.0.1:{port}"
    env = _env(emulator)
    experiment = tiny_experiment(tmp_path, num_iterations=4, checkpoint_every=1)
    train = ["train", "--config", str(experiment), *OVERRIDES]
    straight, run = str(tmp_path / "straight"), f"gs://{BUCKET}/outage"
    stopped_at = tmp_path / "stopped_at"
    try:
        _run([*train, "--workdir", straight], env)
        budget = f"--config.train.storage_timeout_s={BUDGET}"
        first = _run([str(server.pid), str(stopped_at), *train, budget, "--workdir", run], env,
                     script=OUTAGES_AT_SAVES, check=False)  # fmt: skip
        waited = time.time() - float(stopped_at.read_text())
        assert "Traceback" not in first.stderr, first.stderr
        assert first.returncode == 1, first.stdout + first.stderr
        said = [line for line in first.stderr.splitlines() if line.startswith("azjax")]
        assert len(said) == 1, first.stderr
        assert "run the same command again" in said[0], said[0]
        if "the last good checkpoint is" in said[0]:  # or a file's write gave up first
            assert "the last good checkpoint is iteration 2" in said[0], said[0]
        # The budget and an iteration (tensorstore alone would wait for a quarter of an hour,
        # gcsfs for its 6 tries of up to 5 minutes each).
        assert "no answer within 10 s (train.storage_timeout_s)" in said[0], said[0]
        assert waited < 2 * BUDGET + 15, (waited, said[0])
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        server = _serve(_emulator_argv(port), folder, port)  # back, with what it kept
        again = _run(["train", "--workdir", run], env)
        resumed = re.search(r"resuming \S+ from iteration (\d+)", again.stdout + again.stderr)
        assert resumed and int(resumed[1]) >= 2, again.stdout + again.stderr  # the paused save
        records = _read_rated_run(emulator, "outage")
        with open(os.path.join(straight, "metrics.jsonl")) as file:
            _assert_same_records([json.loads(line) for line in file], records)
        compared = _run([TESTS, straight, run], env, script=COMPARE)
        assert compared.stdout.strip() == "same 4"
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGCONT)
            _stop(server)


def test_a_plain_emulator_is_refused_in_one_line(tmp_path):
    """`gcp-storage-emulator` as PyPI ships it, which omits the generation headers: the run is
    refused before it trains, with one line naming the server and the launcher that adds them
    (status 2), and nothing follows it. (Whether a save reads orbax's manifest back by
    generation depends on how tensorstore batches its writes: a loaded machine once finished
    10 saves without one, so the refusal cannot wait for a save.)"""
    plain = require_program("gcp-storage-emulator", install="pip install -e '.[test]'")
    port = free_port()
    argv = [plain, "start", "--host", "127.0.0.1", "--port", str(port),
            "--default-bucket", BUCKET, "--quiet"]  # fmt: skip
    server = _serve(argv, tmp_path, port)
    try:
        experiment = tiny_experiment(tmp_path, num_iterations=2, checkpoint_every=1)
        run = f"gs://{BUCKET}/plain"
        argv = ["train", "--config", str(experiment), *OVERRIDES, "--workdir", run]
        refused = _run(argv, _env(f"http://127.0.0.1:{port}"), check=False)
    finally:
        _stop(server)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    (said,) = [line for line in refused.stderr.splitlines() if line.startswith("azjax")]
    assert said.startswith(f"azjax: error: http://127.0.0.1:{port} sends no object generations")
    assert "python -m azjax.apps.gcs_emulator start" in said, said


@pytest.fixture(scope="module")
def small_run(emulator, tmp_path_factory) -> str:
    """A tiny run of 2 iterations in the bucket, checkpointed at both."""
    experiment = tiny_experiment(
        tmp_path_factory.mktemp("small_run"), num_iterations=2, checkpoint_every=1
    )
    run = f"gs://{BUCKET}/loaded"
    _run(["train", "--config", str(experiment), "--workdir", run], _env(emulator))
    return run


# `azjax evaluate` of a run, then the run loaded as an agent and served, in one process.
LOAD = """
import sys
from azjax.apps import cli, serve
from azjax import load_agent

run = sys.argv[1]
assert cli.main(["evaluate", "--workdir", run, "--opponent", "random", "--games", "2"]) == 0
print("loaded", load_agent(run).iteration, type(serve.make_server(run)).__name__)
"""


@pytest.mark.slow
def test_the_commands_that_load_a_run_read_it_from_the_bucket(emulator, small_run):
    loaded = _run([small_run], _env(emulator), script=LOAD)
    assert "iteration 2" in loaded.stdout, loaded.stdout
    assert loaded.stdout.splitlines()[-1] == "loaded 2 Server", loaded.stdout


# Reads a tournament's ratings back from the bucket as `azjax.load_ratings` and training's
# anchors (`tournament.read_elo`) do.
RATINGS = """
import json, sys
import azjax
from azjax.matches import tournament

table = azjax.load_ratings(sys.argv[1])
elo = tournament.read_elo(sys.argv[1] + "/ratings.csv")
assert set(elo) == set(table.player) and elo["random"] == 0.0, elo
steps = sorted(int(step) for step in table.step.dropna())
print(json.dumps({"players": sorted(table.player), "games": int(table.games.sum()),
                  "steps": steps}))
"""


def _games(emulator: str, prefix: str) -> list[dict]:
    lines = _read(emulator, f"{prefix}/games.jsonl").decode().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.deep  # CI: test_tournament's kill and resume, and the bucket's own tests here
@pytest.mark.slow
def test_a_tournament_in_the_bucket_plays_rates_and_resumes(emulator, small_run):
    env = _env(emulator)
    directory = f"gs://{BUCKET}/tournament"
    command = ["tournament", "--dir", directory, "--players", f"{small_run}@every:1", "random",
               "--games", "2"]  # fmt: skip
    first = _run(command, env)
    players = [f"{small_run}@1", f"{small_run}@2", "random"]
    assert all(player in first.stdout for player in players), first.stdout
    games = _games(emulator, "tournament")
    assert len(games) == 3 * 2  # 3 players: 3 pairs of 2 games
    settings = json.loads(_read(emulator, "tournament/tournament.json"))
    assert sorted(settings["players"]) == sorted(players)
    assert settings["players"][f"{small_run}@2"]["run"] == small_run  # not gs:/azjax-test/...
    assert settings["game"]["name"] == "tic_tac_toe"
    assert _read(emulator, "tournament/ratings.png")[:4] == b"\x89PNG"
    csv_text = _read(emulator, "tournament/ratings.csv")

    again = _run(command, env)  # resumed: nothing left to play
    assert " vs " not in again.stderr, again.stderr
    assert _games(emulator, "tournament") == games
    assert _read(emulator, "tournament/ratings.csv") == csv_text

    more = _run([*command[:-1], "4"], env)  # plays only the 2 more games of each pair
    grown = _games(emulator, "tournament")
    assert len(grown) == 3 * 4 and grown[:6] == games, more.stderr
    pairs = {frozenset((g["a"], g["b"])) for g in grown}
    assert all(sum(frozenset((g["a"], g["b"])) == p for g in grown) == 4 for p in pairs)

    read = json.loads(_run([directory], env, script=RATINGS).stdout)
    # Each game counts for both of its players.
    assert read == {"players": sorted(players), "games": 2 * len(grown), "steps": [1, 2]}


@pytest.mark.deep  # CI: test_sweep_workers (PostgreSQL) and the bucket's tests here
@pytest.mark.slow
def test_a_sweep_in_the_bucket_keeps_its_study_in_a_database(emulator, tmp_path):
    env = _env(emulator)
    experiment = tiny_experiment(tmp_path, num_iterations=2, checkpoint_every=2)
    workdir = f"gs://{BUCKET}/sweep"
    start = ["sweep", "--config", str(experiment), "--space", "tic_tac_toe", "--trials", "2",
             "--workdir", workdir, "--config.eval.every=2",
             "--config.eval.opponents=('random', 'mcts:4')"]  # fmt: skip

    refused = _run(start, env, check=False)  # the journal file cannot live in a bucket
    assert refused.returncode == 2, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "--storage" in refused.stderr
    assert _names(emulator, "sweep/") == []

    database = tmp_path / "study.db"
    storage = ["--storage", f"sqlite:///{database}"]
    swept = _run([*start, *storage], env)
    assert "history.png" in swept.stdout, swept.stdout
    files = _names(emulator, "sweep/")
    for name in ("sweep.json", "space.py", "anchor_ratings.csv", "eval_anchors/ratings.csv",
                 "report/history.png"):  # fmt: skip
        assert f"sweep/{name}" in files, files
    assert any(f.startswith("sweep/tensorboard/trial_0001/") for f in files), files
    with sqlite3.connect(database) as connection:
        trials = connection.execute(
            "SELECT number, state, value FROM trials JOIN trial_values USING (trial_id) "
            "ORDER BY number"
        ).fetchall()
    assert [(number, state) for number, state, _ in trials] == [(0, "COMPLETE"), (1, "COMPLETE")]
    for number, _, value in trials:
        trial = f"sweep/trial_{number:04d}"
        assert any(f.startswith(f"{trial}/checkpoints/2/") for f in files), files
        lines = _read(emulator, f"{trial}/metrics.jsonl").decode().splitlines()
        records = [json.loads(line) for line in lines]
        assert [r["iteration"] for r in records] == [1, 2]
        assert value == records[-1]["eval/elo"]  # the default objective: rated
        config = json.loads(_read(emulator, f"{trial}/config.json"))
        assert config["eval"]["elo_ratings"] == f"{workdir}/anchor_ratings.csv"

    # Resumed from the bucket alone (its config and space file): the study is done.
    again = _run(["sweep", "--workdir", workdir, "--trials", "2", *storage], env)
    assert "trial 2" not in again.stdout and "2 complete" in again.stdout, again.stdout
    report = _run(["sweep", "--workdir", workdir, "--report"], env)  # storage: sweep.json's
    assert "eval/elo" in report.stdout and "history.png" in report.stdout


# docs/scaling.md's commands, as written, plus these overrides: the pod commands train the
# accelerator-sized Go 9x9 experiment until it ends; here one or two iterations of it on a
# network and search small enough for this test, over 4 CPU devices.
SCALING = os.path.join(REPO, "docs", "scaling.md")
SMALL_GO = [
    "--config.network.channels=8",
    "--config.network.num_blocks=1",
    "--config.network.value_hidden=8",
    "--config.search.num_simulations=2",
    "--config.search.max_num_considered_actions=2",
    "--config.selfplay.batch_size=4",
    "--config.selfplay.num_steps=2",
    "--config.replay.capacity=4096",
    "--config.replay.min_size=4",
    "--config.learner.batch_size=4",
    "--config.learner.updates_per_iteration=1",
    "--config.train.checkpoint_every=1",
    "--config.eval.every=0",
]


def _bash_block(heading: str) -> list[str]:
    """The commands of the first bash block under `heading` in docs/scaling.md, one a line
    (continuation lines joined, comments dropped)."""
    with open(SCALING) as page:
        text = page.read()
    section = text[text.index(f"\n{heading}\n") :]
    block = section[section.index("```bash\n") + len("```bash\n") :]
    block = block[: block.index("```")].replace("\\\n", " ")
    lines = (line.split(" #", 1)[0].strip() for line in block.splitlines())
    return [" ".join(line.split()) for line in lines if line and not line.startswith("#")]


def _azjax(command: str, env: dict) -> tuple[list[str], dict]:
    """A documented `VAR=value azjax ...` line as argv for this Python, and its environment."""
    words = shlex.split(command)
    env = dict(env)
    while "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    assert words[0] == "azjax", command
    return [PYTHON, "-m", "azjax.apps.cli", *words[1:]], env


@pytest.mark.deep  # CI: commands reading a run from the bucket, a bucket that stops
@pytest.mark.slow
def test_the_scaling_page_runs_as_written_with_its_bucket_on_an_emulator(tmp_path):
    require_program("gcp-storage-emulator", install="pip install -e '.[test]'")
    # Its emulator, as the page starts it (on a free port, not 9023).
    install, serve, try_out = _bash_block("## Cloud storage")
    assert install == "pip install -e '.[gcs-emulator]'"  # what CI installed (the test extra)
    port = str(free_port())
    serve_argv = [
        {"python": PYTHON, "9023": port}.get(word, word)
        for word in shlex.split(serve.removesuffix("&"))
    ]
    server = _serve(serve_argv, tmp_path, int(port))
    try:
        emulator = f"http://127.0.0.1:{port}"
        base = {**_env(emulator), "PYTHONUNBUFFERED": "1"}
        del base["STORAGE_EMULATOR_HOST"]  # the documented lines set it themselves
        _run_scaling_commands(try_out.replace("9023", port), base, emulator)
    finally:
        _stop(server)


def _run_scaling_commands(try_out: str, base: dict, emulator: str) -> None:
    # The try-out: Tic-tac-toe into gs://my-bucket/runs/ttt, two iterations of it.
    argv, env = _azjax(try_out, base)
    done = subprocess.run([*argv, "--config.train.num_iterations=2", "--config.eval.every=0"],
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    client = _bucket(emulator).client.bucket("my-bucket")
    files = [blob.name for blob in client.list_blobs(prefix="runs/ttt/")]
    assert any(f.startswith("runs/ttt/checkpoints/2/") for f in files), files

    # A pod: the explicit command, with the coordinator on this machine and each host's
    # --process-id. The page's 4 hosts are 2 here (processes of 2 CPU devices each, 4 devices
    # in all): every host compiles the run's programs, so fewer hosts cost less.
    explicit, auto = _bash_block("## Devices and hosts")
    assert "--process-id 0" in explicit and "10.0.0.1:1234" in explicit
    assert "--num-processes 4" in explicit
    two_devices = with_test_xla_flags("--xla_force_host_platform_device_count=2")
    env = {**base, "STORAGE_EMULATOR_HOST": emulator, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": two_devices}  # fmt: skip
    coordinator = f"127.0.0.1:{free_port()}"
    pod = explicit.replace("10.0.0.1:1234", coordinator)
    pod = pod.replace("--num-processes 4", "--num-processes 2")
    hosts = []
    for index in range(2):
        argv, _ = _azjax(pod.replace("--process-id 0", f"--process-id {index}"), env)
        argv += [*SMALL_GO, "--config.train.num_iterations=1"]
        hosts.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=env))  # fmt: skip
    outputs = [host.communicate(timeout=600)[0] for host in hosts]
    for host, output in zip(hosts, outputs, strict=True):
        assert host.returncode == 0, output[-4000:]
    assert "on 4 cpu device(s)" in outputs[0] and "done: 1 iterations" in outputs[0], outputs[0]

    # Preempted, the job comes back as a SLURM job of 2 tasks of one device each: the page's
    # `--distributed auto` command (the one every TPU worker runs, too) resumes the run from
    # the bucket on 2 devices.
    tpu_worker = _bash_block("## A Cloud TPU pod slice")[-1]  # inside gcloud's --command
    assert tpu_worker.endswith(f"&& {auto}'"), (tpu_worker, auto)
    one_device = with_test_xla_flags("--xla_force_host_platform_device_count=1")
    env = {**env, "XLA_FLAGS": one_device}
    argv, _ = _azjax(auto, env)
    argv += [*SMALL_GO, "--config.train.num_iterations=2"]
    slurm = {**env, **slurm_environment(2)}
    tasks = [
        subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**slurm, "SLURM_PROCID": str(index)},
        )  # fmt: skip
        for index in range(2)
    ]
    outputs = [task.communicate(timeout=600)[0] for task in tasks]
    for task, output in zip(tasks, outputs, strict=True):
        assert task.returncode == 0, output[-4000:]
    assert "resum" in outputs[0] and "on 2 cpu device(s)" in outputs[0], outputs[0]
    records = [
        json.loads(line)
        for line in client.blob("runs/go_9x9/metrics.jsonl").download_as_text().splitlines()
    ]
    assert [r["iteration"] for r in records] == [1, 2]
    files = [blob.name for blob in client.list_blobs(prefix="runs/go_9x9/")]
    assert any(f.startswith("runs/go_9x9/checkpoints/2/") for f in files), files
