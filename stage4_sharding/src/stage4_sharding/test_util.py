"""``jax.test_util``: stage3_vmap's, unchanged."""

from stage3_vmap.test_util import check_grads, check_jvp, check_vjp, numerical_jvp

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
