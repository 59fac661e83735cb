"""``jax.debug``: stage 2's ``print`` and ``log``, batched (once per example)."""

from stage2_jit.debug import callback, log, print  # noqa: F401, A004
