"""The XLA flags azjax sets before jax starts: XLA:CPU's YNNPACK library fusions off.

jaxlib 0.8 to 0.10 hand XLA:CPU's dots, convolutions and elementwise ops to YNNPACK by
default; azjax turns that off (why, with the measurements: docs/results.md, "XLA:CPU's
library fusions"). XLA's own kernels compute the same functions, not the
same bits: a run's numbers differ from one made with the fusions in the last digits.

`import azjax` calls `apply` (it does not import jax). It adds the flag to `XLA_FLAGS`
unless `XLA_FLAGS` sets it already: a user who wants the fusions back names them there
(`XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT`).
A process that started jax before importing azjax keeps the flags it started with.
"""

import os

YNN_FUSIONS = "--xla_cpu_experimental_ynn_fusion_type"
DEFAULTS = (f"{YNN_FUSIONS}=",)  # an empty list of fusion types: none


def apply(environ=os.environ) -> None:
    """Adds each of `DEFAULTS` to `environ["XLA_FLAGS"]` that the variable does not set."""
    flags = environ.get("XLA_FLAGS", "")
    named = {flag.split("=", 1)[0] for flag in flags.split()}
    added = [flag for flag in DEFAULTS if flag.split("=", 1)[0] not in named]
    if added:
        environ["XLA_FLAGS"] = " ".join([flags, *added]).strip()
