"""The kernel's stop button: a `train` cell stops saved, the kernel lives, the run resumes.

A real Jupyter kernel (jupyter_client, as JupyterLab starts it) runs the cells; its
`interrupt_kernel` is what the stop button does (SIGINT to the kernel process).
"""

import json
import queue
import time

import pytest
from conftest import REPO

jupyter_client = pytest.importorskip("jupyter_client")

SETUP = f"""
import sys
sys.path.insert(0, {REPO + "/tests"!r})
from conftest import tiny_config
import azjax
config = tiny_config()
config.train.num_iterations = 1000
config.train.checkpoint_every = 1000
"""


def run_cell(client, code: str, timeout: float = 240) -> dict:
    """Executes `code` and returns the shell reply's content (status, ename, ...)."""
    return reply_to(client, client.execute(code), timeout)["content"]


def reply_to(client, message_id: str, timeout: float) -> dict:
    """The shell reply to `message_id` (skipping earlier replies, such as kernel_info's)."""
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == message_id:
            return reply


def wait_for_lines(path, count: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} did not reach {count} lines in {timeout} s")


@pytest.mark.slow
def test_stop_button_saves_and_the_same_cell_resumes(tmp_path):
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=REPO)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        assert run_cell(client, SETUP)["status"] == "ok"
        workdir = tmp_path / "run"
        cell = f"state = azjax.train(config, {str(workdir)!r}, progress='none')"
        message_id = client.execute(cell)
        wait_for_lines(workdir / "metrics.jsonl", 2)
        manager.interrupt_kernel()  # the stop button
        reply = reply_to(client, message_id, timeout=120)
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert manager.is_alive()

        saved = records(workdir)
        steps = sorted(int(p.name) for p in (workdir / "checkpoints").iterdir())
        assert steps == [saved[-1]["iteration"]] and len(saved) >= 2

        # The kernel kept its variables; the same call resumes from the saved iteration.
        wait_until_accepting(client)
        resume = f"config.train.num_iterations = {steps[-1] + 1}\n" + cell
        assert run_cell(client, resume)["status"] == "ok"
        drain(client)
        reply = run_cell(client, "print(int(state.iteration))")
        assert reply["status"] == "ok"
        assert stdout_of(client) == f"{steps[-1] + 1}\n"
        resumed = records(workdir)
        assert resumed[:-1] == saved and resumed[-1]["iteration"] == steps[-1] + 1
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def wait_until_accepting(client, attempts: int = 50) -> None:
    """Waits until the kernel runs cells again after an error.

    After a cell ends in an error, ipykernel (7.x) sets an "aborting" flag and answers every
    execute request it takes before its own "stop aborting" message with status `aborted`;
    that message is posted to the shell queue just after the error reply, so a request sent
    within milliseconds of the reply may be aborted (a person clicking Run again never is).
    This sends an empty cell until one runs (a bounded number of times).
    """
    for _ in range(attempts):
        status = run_cell(client, "pass", timeout=60)["status"]
        if status == "ok":
            return
        assert status == "aborted", status
        time.sleep(0.1)
    raise AssertionError(f"the kernel aborted {attempts} cells in a row after the interrupt")


def records(workdir) -> list[dict]:
    return [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]


def drain(client) -> None:
    """Discards the messages the kernel has broadcast so far."""
    while True:
        try:
            client.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            return


def stdout_of(client) -> str:
    """The stdout text the last executed cell printed (read until the kernel goes idle)."""
    text = ""
    while True:
        message = client.get_iopub_msg(timeout=30)
        kind, content = message["msg_type"], message["content"]
        if kind == "stream" and content["name"] == "stdout":
            text += content["text"]
        if kind == "status" and content["execution_state"] == "idle":
            return text
