"""Shared types and the shape legend used across azjax.

Shape legend (used in comments next to array fields):
  B  batch of games or samples     T  time (plies in a scan)
  A  number of actions             S  number of board symmetries
  H, W  board height and width     C  observation planes
  N  replay-buffer capacity        D  devices
"""

import jax

Array = jax.Array
PRNGKey = jax.Array


class UserError(Exception):
    """A mistake a user can fix (bad game name, config key, checkpoint): one-line message."""
