"""``jax.experimental``: here, ``multihost_utils`` (helpers for jobs of several processes) and
``io_callback`` (a Python function called for its effect, once per call of a program)."""

from stage2_jit.experimental import io_callback  # noqa: F401

from . import multihost_utils  # noqa: F401
