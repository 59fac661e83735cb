"""``jax.test_util``: stage2_jit's, unchanged."""

from stage2_jit.test_util import check_grads, check_jvp, check_vjp, numerical_jvp

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
