"""``jax.experimental``: here, ``io_callback`` (a Python function called for its effect) and
``ode`` (``odeint``), registered as a submodule so that ``import jax.experimental.ode`` works."""

import sys

from . import ode
from .callback import io_callback  # noqa: F401

sys.modules[f"{__name__}.ode"] = ode
