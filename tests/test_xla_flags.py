"""The XLA flags `import azjax` sets: YNNPACK's library fusions off, a user's own setting
kept."""

import subprocess
import sys

import pytest
from conftest import subprocess_env

from azjax import xla_flags

# A dot and a tanh compiled after `import azjax`: does XLA:CPU hand it to YNNPACK?
PROGRAM = """
import azjax, jax, jax.numpy as jnp
x = jnp.ones((8, 64))
print("__ynn" in jax.jit(lambda x: jnp.tanh(x @ x.T)).lower(x).compile().as_text())
"""


@pytest.mark.parametrize(
    "before, after",
    [
        ("", f"{xla_flags.YNN_FUSIONS}="),
        (
            "--xla_backend_optimization_level=0",
            f"--xla_backend_optimization_level=0 {xla_flags.YNN_FUSIONS}=",
        ),
        (
            f"{xla_flags.YNN_FUSIONS}=LIBRARY_FUSION_TYPE_DOT",
            f"{xla_flags.YNN_FUSIONS}=LIBRARY_FUSION_TYPE_DOT",
        ),
        (None, f"{xla_flags.YNN_FUSIONS}="),
    ],
)
def test_the_flag_is_added_unless_set(before, after):
    environ = {} if before is None else {"XLA_FLAGS": before}
    xla_flags.apply(environ)
    assert environ["XLA_FLAGS"] == after
    xla_flags.apply(environ)  # twice: the same
    assert environ["XLA_FLAGS"] == after


def _ynn_fused(xla_flags_value) -> bool:
    env = subprocess_env()
    env.pop("XLA_FLAGS", None)
    if xla_flags_value is not None:
        env["XLA_FLAGS"] = xla_flags_value
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1] == "True"


def test_xla_compiles_without_ynnpack_unless_asked():
    """The flag reaches XLA: no YNNPACK fusion in a program compiled after `import azjax`,
    and one where the user's `XLA_FLAGS` names the fusions (so the check can fail)."""
    assert not _ynn_fused(None)
    assert _ynn_fused(f"{xla_flags.YNN_FUSIONS}=LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT")
