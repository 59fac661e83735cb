"""``jax.lax``: stage 1's primitive wrappers, plus structured control flow (``cond``,
``switch``, ``while_loop``, ``fori_loop``, ``scan``), which needs jaxprs."""

from stage1_autodiff.lax import *  # noqa: F403

from .control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
