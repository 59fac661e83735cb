"""``jax.custom_derivatives``: the functions with rules of their own, in one namespace as in
JAX (``custom_jvp``, ``custom_vjp`` and ``custom_gradient`` from stage 1, and
``closure_convert``, which needs a jaxpr)."""

from stage1_autodiff.custom_derivatives import custom_gradient, custom_jvp, custom_vjp

from .everyday import closure_convert

__all__ = ["closure_convert", "custom_gradient", "custom_jvp", "custom_vjp"]
