"""``jax.experimental``: here, ``multihost_utils`` (helpers for jobs of several processes),
``mesh_utils`` (an array of devices in a mesh's shape) and ``io_callback`` (a Python function
called for its effect, once per call of a program)."""

from stage2_jit.experimental import io_callback  # noqa: F401

from . import mesh_utils, multihost_utils  # noqa: F401
