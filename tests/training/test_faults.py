"""How library failures are read: every message orbax or tensorstore raises when a checkpoint's
files vanish under a save counts as a lost path (the save is repeated), a full disk as a full
disk, storage that stopped answering as unreachable, and nothing else as any of them (a bug
shows as itself)."""

import errno
import logging

import pytest

from azjax import faults

# Messages seen when `checkpoints/` was deleted under a save in flight (the last is the check
# orbax makes after the write, ocdbt_utils: the files it wrote are no longer listed).
LOST = [
    FileNotFoundError(errno.ENOENT, "No such file or directory", "/run/checkpoints/2"),
    ValueError("NOT_FOUND: Error opening file"),
    ValueError("Checkpoint path /run/checkpoints/2 does not exist."),
    ValueError("No ArrayMetadata found for process_index=0"),
    ValueError("Save failed: 1/1 params are missing .zarray in checkpoint:\niteration."),
    ValueError("Save failed: 2/3 params are missing in checkpoint:\na \nb."),
]


@pytest.mark.parametrize("error", LOST, ids=lambda e: str(e)[:30])
def test_a_lost_file_is_read_as_missing_also_when_wrapped(error):
    wrapper = RuntimeError("background save failed")
    wrapper.__cause__ = error
    assert faults.is_missing_path(error) and faults.is_missing_path(wrapper)
    assert not faults.is_disk_full(wrapper)


def test_a_full_disk_and_a_bug_are_told_apart():
    full = OSError(errno.ENOSPC, "No space left on device")
    assert faults.is_disk_full(full) and not faults.is_missing_path(full)
    bug = ValueError("Save failed: shapes do not match")
    assert not faults.is_missing_path(bug) and not faults.is_disk_full(bug)
    # XLA's out of memory says RESOURCE_EXHAUSTED too, as tensorstore's full disk does.
    memory = RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 4199999999958 bytes.")
    assert faults.is_out_of_memory(memory) and not faults.is_disk_full(memory)
    assert faults.is_out_of_memory(MemoryError()) and not faults.is_out_of_memory(full)
    assert faults.is_disk_full(ValueError("RESOURCE_EXHAUSTED: Failed to write: No space left"))
    assert faults.first_line(ValueError("one\ntwo")) == "one"
    assert faults.first_line(KeyError()) == "KeyError"


# What clients said once their retries gave up on an emulator that was killed (tensorstore's
# message is the one seen in this project; the others are the libraries' own types).
UNREACHABLE = [
    ValueError(
        "ABORTED: All 3 retry attempts failed: CURL error Could not connect to server: Failed "
        "to connect to 127.0.0.1 port 1 after 0 ms: Could not connect to server [curl_code='7']"
    ),
    ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
    type("ClientConnectorError", (type("ClientConnectionError", (Exception,), {}),), {})(
        "Cannot connect to host 127.0.0.1:9023"
    ),
    TimeoutError(),  # gcsfs's request past `train.storage_timeout_s` / 6 (aiohttp's timeout)
]


@pytest.mark.parametrize("error", UNREACHABLE, ids=lambda e: type(e).__name__)
def test_storage_that_does_not_answer_is_read_as_unreachable_also_when_wrapped(error):
    wrapper = RuntimeError("background save failed")
    wrapper.__cause__ = error
    assert faults.is_unreachable(error) and faults.is_unreachable(wrapper)
    assert not faults.is_disk_full(wrapper) and not faults.is_missing_path(wrapper)
    for other in (*LOST, OSError(errno.ENOSPC, "No space left on device"), KeyError("x")):
        assert not faults.is_unreachable(other)


def test_asyncio_records_of_abandoned_failed_writes_are_dropped_and_others_kept(caplog):
    """After the first failed write orbax stops waiting for the others; asyncio logs their
    same errors at exit ("... exception was never retrieved"), which would follow the
    one-line error with a traceback each."""
    faults.silence_orbax()
    full = ValueError("RESOURCE_EXHAUSTED: Failed to write: No space left on device")
    missing = ValueError('NOT_FOUND: Error writing "w/0" in OCDBT database at local file')
    # A plain gcp-storage-emulator: the save's other writes, after the run's one line.
    no_generation = ValueError(
        'Error opening "zarr" driver: Error reading "w/.zarray" in OCDBT database at '
        "gs://b/run/checkpoints/1/params/: Malformed StorageGeneration"
    )
    bug = ValueError("shapes do not match")
    asyncio_logger = logging.getLogger("asyncio")
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for message, error in [
            ("Task exception was never retrieved", full),
            ("Future exception was never retrieved", full),
            # orbax's writes gathered: seen at exit after a checkpoints folder was deleted
            ("_GatheringFuture exception was never retrieved", missing),
            ("Task exception was never retrieved", no_generation),
            ("Task exception was never retrieved", bug),
            ("Unclosed client session", None),
        ]:
            asyncio_logger.error(message, exc_info=(type(error), error, None) if error else None)
    assert [r.getMessage() for r in caplog.records] == [
        "Task exception was never retrieved",
        "Unclosed client session",
    ]
    assert caplog.records[0].exc_info[1] is bug
