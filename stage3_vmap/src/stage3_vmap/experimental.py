"""``jax.experimental``: here, stage 2's ``io_callback``, which ``vmap`` calls once per example."""

from stage2_jit.experimental import io_callback  # noqa: F401
