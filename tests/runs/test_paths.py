"""Run directories' paths: a bucket name Cloud Storage refuses is one line before anything
runs (it failed after training had started, with a traceback)."""

import pytest
from conftest import assert_user_error

from azjax.paths import workdir_path
from azjax.types import UserError

BAD = ["b", "ab", "Runs", "-runs", "runs-", "ru ns", "r" * 64, "a..b", ("x" * 64) + ".com"]


@pytest.mark.parametrize("bucket", BAD)
def test_a_bucket_name_cloud_storage_refuses_is_one_line(bucket):
    with pytest.raises(UserError, match="is not a Cloud Storage bucket name"):
        workdir_path(f"gs://{bucket}/run")


@pytest.mark.parametrize("bucket", ["abc", "azjax-test", "my_runs.example.com", "r" * 63])
def test_bucket_names_cloud_storage_takes_pass(bucket):
    assert str(workdir_path(f"gs://{bucket}/run")) == f"gs://{bucket}/run"


def test_train_refuses_the_bucket_before_it_compiles(capsys):
    argv = ["train", "--config", "tic_tac_toe", "--workdir", "gs://b/run"]
    assert_user_error(capsys, argv, "gs://b/run: 'b' is not a Cloud Storage bucket name")


@pytest.mark.parametrize(
    "argv",
    [
        ["records", "--game", "go_9x9", "--players", "gtp:gnugo", "--games", "2", "--out", "U"],
        ["evaluate", "--agent", "tic_tac_toe", "--opponent", "random", "--records", "U"],
        ["evaluate", "--agent", "go_9x9", "--opponent", "random", "--sgf", "U"],
        ["selfplay", "--agent", "tic_tac_toe", "--records", "U"],
        ["selfplay", "--agent", "go_9x9", "--sgf", "U"],
        ["gtp", "--agent", "go_9x9", "--sgf-dir", "U"],
        ["mistakes", "--agent", "connect_four", "--out", "U"],
        ["plot", "--workdir", "runs/c4", "--out", "U"],
        ["frontier", "--config", "tic_tac_toe", "--dir", "U", "--sizes", "2x1", "--budget", "1e9"],
        ["ablation", "--config", "tic_tac_toe", "--workdir", "U"],
    ],
    ids=lambda argv: f"{argv[0]} {argv[argv.index('U') - 1]}",
)
def test_a_cloud_path_where_azjax_writes_only_locally_is_one_line(
    capsys, tmp_path, monkeypatch, argv
):
    """Options that write on the local file system only, given gs://: one line before
    anything runs (records, evaluate and selfplay wrote a local folder named 'gs:', and
    frontier and ablation trained into one)."""
    monkeypatch.chdir(tmp_path)
    option = argv[argv.index("U") - 1]
    argv = [a.replace("U", "gs://runs/x") if a == "U" else a for a in argv]
    assert_user_error(capsys, argv, f"{option} gs://runs/x: azjax {argv[0]} writes there on the")
    assert not list(tmp_path.iterdir())
