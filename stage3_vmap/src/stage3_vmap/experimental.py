"""``jax.experimental``: here, stage 2's ``io_callback``, which ``vmap`` calls once per example,
and its ``ode`` (``odeint``: its loops and ``custom_vjp`` carry this stage's rules)."""

import sys

from stage2_jit.experimental import io_callback, ode  # noqa: F401

sys.modules[f"{__name__}.ode"] = ode
