"""``jax.lax``: stage 1's primitive wrappers (structured control flow comes with issue 7)."""

from stage1_autodiff.lax import *  # noqa: F403
