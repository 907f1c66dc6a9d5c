"""The errors azjax reports in one line, in a module that loads no jax: a program (or a
parser) can catch `UserError` without importing the numerical stack.

`azjax.types` holds them too, as before.
"""


class UserError(Exception):
    """A mistake a user can fix (bad game name, config key, checkpoint): one-line message.

    The command line prints the message on one line and exits with `exit_code`.
    """

    exit_code = 2


class RunError(UserError):
    """A run cannot go on for a reason outside the user's input (a full disk, a file system
    that refuses writes): one line, exit status 1."""

    exit_code = 1


class StorageLost(RunError):
    """A run's storage stopped answering (`train.storage_timeout_s`): one line, status 1, and
    the command exits at once, leaving behind the threads still retrying it."""
