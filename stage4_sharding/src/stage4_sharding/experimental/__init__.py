"""``jax.experimental``: here, ``multihost_utils`` (helpers for jobs of several processes),
``mesh_utils`` (an array of devices in a mesh's shape), ``io_callback`` (a Python function
called for its effect, once per call of a program), ``shard_map`` (the older home of
``jax.shard_map``) and ``ode`` (``odeint``, stage 2's)."""

from stage2_jit.experimental import io_callback  # noqa: F401

from . import mesh_utils, multihost_utils, ode, shard_map  # noqa: F401
