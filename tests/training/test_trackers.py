"""The trackers besides metrics.jsonl hold the same records: TensorBoard (with the config as
text and HParams), Weights & Biases offline and MLflow on its local SQLite store, each resumed
into the same tracker run; and `train.profile` writes a trace a viewer reads."""

import gzip
import http.server
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import pytest
from conftest import free_port, subprocess_env, tiny_config

from azjax.apps import api
from azjax.config import to_json
from azjax.runs import trackers
from azjax.runs.metrics import read_metrics
from azjax.runs.trackers import TensorBoard, mlflow_key

FLOAT = 1e-5


def require_module(name: str) -> None:
    """Skips with a one-line reason where `name` is not installed, or fails where
    AZJAX_REQUIRE_EXTERNAL=1 (CI, whose test extra installs it)."""
    if importlib.util.find_spec(name) is not None:
        return
    reason = f"{name} is not installed (install it with: pip install -e '.[test]')"
    if os.environ.get("AZJAX_REQUIRE_EXTERNAL") == "1":
        pytest.fail(f"{reason}; AZJAX_REQUIRE_EXTERNAL=1 requires it", pytrace=False)
    pytest.skip(reason)


def _config(loggers, num_iterations=2):
    config = tiny_config()
    config.train.loggers = loggers
    config.train.num_iterations = num_iterations
    config.train.checkpoint_every = 1
    config.eval.every = 2
    config.eval.opponents = ("random",)
    return config


def _scalars(records):
    return {
        (r["iteration"], k): v
        for r in records
        for k, v in r.items()
        if k != "iteration" and isinstance(v, int | float)
    }


def _events(folder):
    from tensorboardX.proto.event_pb2 import Event  # noqa: PLC0415

    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            yield Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4


def _wandb_records(data: bytes):
    """The records of a W&B transaction log (`run-ID.wandb`): LevelDB's log format after a
    7-byte header (":W&B", magic, version), in 32 KiB blocks of chunks (checksum: 4 bytes,
    length: 2, type: 1 = whole, 2 = first, 3 = middle, 4 = last)."""
    assert data[:4] == b":W&B", data[:7]
    offset, parts = 7, []
    while offset + 7 <= len(data):
        left = 32768 - offset % 32768
        if left < 7:  # a block's tail too short for a chunk header is padding
            offset += left
            continue
        length, kind = struct.unpack("<HB", data[offset + 4 : offset + 7])
        if kind == 0 and length == 0:
            break  # zeros: the end of what was written
        parts.append(data[offset + 7 : offset + 7 + length])
        offset += 7 + length
        if kind in (1, 4):
            yield b"".join(parts)
            parts = []


def test_tensorboard_holds_the_records_the_config_as_text_and_hparams(tmp_path):
    workdir = tmp_path / "run"
    api.train(_config(("tensorboard",)), workdir, quiet=False, progress="none")
    logged, tags, plugins = {}, set(), set()
    for event in _events(workdir / "tensorboard"):
        for value in event.summary.value:
            tags.add(value.tag)
            plugins.add(value.metadata.plugin_data.plugin_name)
            if value.HasField("simple_value"):
                logged[(event.step, value.tag)] = value.simple_value
    expected = _scalars(read_metrics(workdir))
    assert set(logged) == set(expected)
    assert all(abs(logged[k] - expected[k]) <= FLOAT * max(1, abs(expected[k])) for k in logged)
    assert "config/text_summary" in tags and {"text", "hparams"} <= plugins


def test_hparams_go_into_the_runs_own_events_through_public_api(tmp_path, monkeypatch):
    """TensorBoard's HParams view finds the config and the metric to compare runs by in the
    run's own folder, beside the scalar it names; tensorboardX's private methods are its own."""
    from tensorboardX import SummaryWriter  # noqa: PLC0415
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData  # noqa: PLC0415

    private = SummaryWriter._get_file_writer

    def only_inside_tensorboardx(writer):
        caller = sys._getframe(1).f_globals["__name__"]
        assert caller.startswith("tensorboardX."), f"{caller} calls a private tensorboardX method"
        return private(writer)

    monkeypatch.setattr(SummaryWriter, "_get_file_writer", only_inside_tensorboardx)
    config = _config(("tensorboard",))
    tracker = TensorBoard(tmp_path, 0, to_json(config))
    tracker.log({"iteration": 1, "eval/elo": 12.5})
    tracker.close()
    hparams, scalars = {}, {}
    for event in _events(tmp_path / "tensorboard"):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name == "hparams":
                content = value.metadata.plugin_data.content
                hparams[value.tag] = HParamsPluginData.FromString(content)
            elif value.HasField("simple_value"):
                scalars[(event.step, value.tag)] = value.simple_value
    experiment = hparams["_hparams_/experiment"].experiment
    assert [m.name.tag for m in experiment.metric_infos] == ["eval/elo"]
    assert "learner.learning_rate" in {h.name for h in experiment.hparam_infos}
    settings = hparams["_hparams_/session_start_info"].session_start_info.hparams
    assert settings["learner.learning_rate"].number_value == config.learner.learning_rate
    assert settings["game"].string_value == config.game
    assert scalars == {(1, "eval/elo"): 12.5}


def test_wandb_offline_holds_the_records_and_a_resume_logs_on(tmp_path, monkeypatch):
    require_module("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    workdir = tmp_path / "run"
    api.train(_config(("wandb",), 2), workdir, quiet=False, progress="none")
    api.train(_config(("wandb",), 4), workdir, quiet=False, progress="none")
    (run_id,) = {json.loads((workdir / "trackers.json").read_text())["wandb"]}
    expected = _scalars(read_metrics(workdir))
    # W&B's service process writes the log on its own: on a loaded machine the last
    # session's records reached the file a moment after `finish` returned.
    deadline = time.monotonic() + 30
    logged = _wandb_history(workdir, run_id)
    while logged.keys() != expected.keys() and time.monotonic() < deadline:
        time.sleep(0.5)
        logged = _wandb_history(workdir, run_id)
    assert {k for k in logged} == set(expected)
    assert all(abs(logged[k] - expected[k]) <= FLOAT * max(1, abs(expected[k])) for k in logged)


def _wandb_history(workdir, run_id) -> dict:
    """{(step, key): value} of the history records of each session's W&B log."""
    from wandb.proto import wandb_internal_pb2  # noqa: PLC0415

    files = sorted(workdir.glob(f"wandb/offline-run-*-{run_id}/run-{run_id}.wandb"))
    assert len(files) == 2, files  # one per session, the same W&B run
    logged = {}
    for path in files:
        for data in _wandb_records(path.read_bytes()):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(data)
            if record.WhichOneof("record_type") == "history":
                items = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                         for i in record.history.item}  # fmt: skip
                step = items.pop("_step")
                for key, value in items.items():
                    if not key.startswith("_"):
                        logged[(step, key)] = value
    return logged


def test_mlflow_local_store_holds_the_records_and_a_resume_logs_on(tmp_path):
    require_module("mlflow")
    from mlflow.tracking import MlflowClient  # noqa: PLC0415

    workdir = tmp_path / "run"
    api.train(_config(("mlflow",), 2), workdir, quiet=False, progress="none")
    api.train(_config(("mlflow",), 4), workdir, quiet=False, progress="none")
    run_id = json.loads((workdir / "trackers.json").read_text())["mlflow"]
    client = MlflowClient(tracking_uri=f"sqlite:///{workdir / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.data.params["learner.learning_rate"] == str(_config(()).learner.learning_rate)
    expected = _scalars(read_metrics(workdir))
    logged = {
        (m.step, key): m.value
        for key in {k for _, k in expected}
        for m in client.get_metric_history(run_id, mlflow_key(key))
    }
    assert set(logged) == set(expected)
    assert all(abs(logged[k] - expected[k]) <= FLOAT * max(1, abs(expected[k])) for k in logged)


def _refused(argv: list[str], env: dict) -> str:
    """`azjax train ARGV` in a child process: its one error line (status 2)."""
    result = subprocess.run([sys.executable, "-m", "azjax.apps.cli", "train", *argv], env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)  # fmt: skip
    said = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(said) == 1, result.stderr
    return said[0]


def _tracked(tmp_path, logger: str) -> list[str]:
    return ["--config", "tic_tac_toe", "--workdir", str(tmp_path / "run"),
            "--config.train.num_iterations=1", "--config.eval.every=0",
            f"--config.train.loggers=('{logger}',)"]  # fmt: skip


def test_wandb_without_a_login_is_one_line_before_the_first_iteration(tmp_path):
    require_module("wandb")
    env = subprocess_env(HOME=str(tmp_path), WANDB_CONFIG_DIR=str(tmp_path / "wandb"))
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_SILENT"):
        env.pop(name, None)
    line = _refused(_tracked(tmp_path, "wandb"), env)
    assert line.startswith("azjax: error: train.loggers 'wandb' could not start a W&B run")
    assert "wandb login" in line and "WANDB_MODE=offline" in line


@pytest.mark.parametrize("uri", ["file:///proc/no-store", "http://127.0.0.1:PORT"])
def test_an_mlflow_store_it_cannot_use_is_one_line_within_seconds(tmp_path, uri):
    """A `file:` store (MLflow refuses it now) or a server that is not there (MLflow's own
    retries gave up after 252 s): one line, within the tracker timeout."""
    require_module("mlflow")
    uri = uri.replace("PORT", str(free_port()))
    start = time.monotonic()
    line = _refused([*_tracked(tmp_path, "mlflow"), f"--config.train.mlflow_uri={uri}"],
                    subprocess_env())  # fmt: skip
    assert line.startswith(f"azjax: error: train.loggers 'mlflow' cannot use the tracking "
                           f"store {uri} (")  # fmt: skip
    # Not a speed claim: MLflow's own retries take 252 s; bounded, the line comes in seconds.
    assert time.monotonic() - start < 200, trackers.TRACKER_TIMEOUT_S


class _StalledMlflow(http.server.BaseHTTPRequestHandler):
    """An MLflow tracking server that answers a run's start (the experiment, the run, its
    params) and then takes `STALL_S` seconds to answer each record's metrics: one that
    stopped answering mid-run."""

    STALL_S = 20.0

    def log_message(self, *args):
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._reply({"experiment": {"experiment_id": "1", "name": "tiny_tic_tac_toe"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or "{}")
        if self.path.endswith("/runs/create"):
            self._reply({"run": {"info": {"run_id": "r1", "experiment_id": "1"}, "data": {}}})
            return
        if self.path.endswith("/runs/log-batch") and body.get("metrics"):
            time.sleep(self.STALL_S)
        self._reply({})


def test_an_mlflow_server_that_stops_answering_mid_run_is_one_warning(
    tmp_path, monkeypatch, caplog
):
    """Each record waited for MLflow's own timeouts and retries (minutes a record, up to
    16); now one request waits `TRACKER_TIMEOUT_S` at most, and the run goes on without the
    tracker after one warning."""
    require_module("mlflow")
    monkeypatch.setattr(trackers, "TRACKER_TIMEOUT_S", 2)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StalledMlflow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = _config(("mlflow",), 3)
    config.eval.every = 0
    config.train.mlflow_uri = f"http://127.0.0.1:{server.server_address[1]}"
    start = time.monotonic()
    try:
        api.train(config, tmp_path / "run", quiet=False, progress="none")
    finally:
        server.shutdown()
    said = [r.getMessage() for r in caplog.records if "stopped answering" in r.getMessage()]
    assert len(said) == 1 and "the run goes on without it" in said[0], said
    assert [r["iteration"] for r in read_metrics(tmp_path / "run")] == [1, 2, 3]
    assert time.monotonic() - start < 3 * _StalledMlflow.STALL_S, said


def _get_json(url: str, timeout: float = 60):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data = response.read()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


@pytest.mark.deep  # CI: TensorBoard holds the records
@pytest.mark.slow  # 20 s
def test_profile_opens_in_tensorboards_profile_tab(tmp_path):
    """`train.profile` writes into the run's TensorBoard folder, where TensorBoard's Profile
    tab (the `profile` extra: xprof) finds the trace, and its trace viewer (which streams the
    XPlane file at the zoom's resolution) shows each traced iteration as a step."""
    require_module("xprof")
    config = _config(("tensorboard",), 3)
    config.train.profile = (2, 3)
    workdir = tmp_path / "run"
    api.train(config, workdir, quiet=True)
    assert not (workdir / "profile").exists()
    (trace,) = (workdir / "tensorboard").glob("plugins/profile/*/*.xplane.pb")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(workdir / "tensorboard"),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/data/plugin/profile"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                runs = _get_json(f"{base}/runs")
                if runs:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "no profile runs"
            time.sleep(1)
        (run,) = runs
        tools = _get_json(f"{base}/run_tools?run={urllib.parse.quote(run)}")
        assert "trace_viewer@" in tools and "overview_page" in tools, tools
        query = urllib.parse.urlencode(
            {"run": run, "tag": "trace_viewer@", "host": trace.name.split(".")[0]}
        )
        events = _get_json(f"{base}/data?{query}", timeout=300)["traceEvents"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    # Each traced iteration is a step of its own (`StepTraceAnnotation`), named by its number.
    steps = [e["name"] for e in events if re.fullmatch(r"iteration \d+", str(e.get("name")))]
    assert steps == ["iteration 2", "iteration 3"], steps
