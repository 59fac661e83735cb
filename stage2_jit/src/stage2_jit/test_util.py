"""``jax.test_util``: stage1_autodiff's, unchanged."""

from stage1_autodiff.test_util import check_grads, check_jvp, check_vjp, numerical_jvp

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
