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
