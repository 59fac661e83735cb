"""``jax.debug``: stage 2's ``print``, which batches (under ``vmap``, once per example)."""

from stage2_jit.debug import callback, print  # noqa: F401, A004
