"""``jax.experimental``: here, ``multihost_utils`` (helpers for jobs of several processes)."""

from . import multihost_utils  # noqa: F401
