"""The remaining elementwise math primitives of ``lax``: the hyperbolic functions, the inverse
trigonometric and hyperbolic ones, the cube root and 2**x. Each is one NumPy call on the
host, with its derivative as a VJP rule; the JVP is that rule applied to the tangent.

NB: JAX defines them in ``jax/_src/lax/lax.py`` (``asin_p``, ``sinh_p``, ``cbrt_p``,
``exp2_p``...), each lowered to one StableHLO or CHLO operation.

Example:
    >>> from stage1_autodiff import lax
    >>> import numpy as np
    >>> lax.asinh(np.float32(0.0))
    Array(0., dtype=float32)
"""

from __future__ import annotations

import math

import numpy as np

from .core import ELEMENTWISE, Primitive, impl_rules, jvp_rules, vjp_rules
from .primitives import (
    _unary_elementwise_jvp,
    add,
    div,
    full_like,
    integer_pow,
    mul,
    neg,
    sqrt,
    sub,
)

__all__ = ["MORE_MATH", "acos", "acos_p", "acosh", "acosh_p", "asin", "asin_p", "asinh",
           "asinh_p", "atan", "atan_p", "atanh", "atanh_p", "cbrt", "cbrt_p", "cosh", "cosh_p",
           "exp2", "exp2_p", "sinh", "sinh_p"]


def _unary(name: str, numpy_function, slope) -> tuple[Primitive, object]:
    """A unary elementwise primitive: its NumPy implementation, and ``slope(x, out)``, the
    derivative at ``x`` (``out`` is the primitive's value there)."""
    prim = Primitive(name, kind=ELEMENTWISE)
    impl_rules[prim] = numpy_function

    def vjp(ct, x, *, out):
        return [mul(ct, slope(x, out))]
    vjp_rules[prim] = vjp
    jvp_rules[prim] = _unary_elementwise_jvp(prim)
    return prim, lambda x: prim.bind(x)


def _one(x):
    return full_like(x, 1)


sinh_p, sinh = _unary("sinh", np.sinh, lambda x, out: cosh(x))
cosh_p, cosh = _unary("cosh", np.cosh, lambda x, out: sinh(x))
asin_p, asin = _unary("asin", np.arcsin,
                      lambda x, out: div(_one(x), sqrt(sub(_one(x), mul(x, x)))))
acos_p, acos = _unary("acos", np.arccos,
                      lambda x, out: neg(div(_one(x), sqrt(sub(_one(x), mul(x, x))))))
atan_p, atan = _unary("atan", np.arctan, lambda x, out: div(_one(x), add(_one(x), mul(x, x))))
asinh_p, asinh = _unary("asinh", np.arcsinh,
                        lambda x, out: div(_one(x), sqrt(add(mul(x, x), _one(x)))))
# d acosh = 1 / sqrt((x - 1)(x + 1)), as two reciprocals: the product (x - 1)(x + 1)
# overflows beyond 1.8e19 in float32, and at x = 1 the derivative of sqrt(x - 1) * sqrt(x + 1)
# multiplies the infinite slope of sqrt(0) by ... 0 (a NaN second derivative).
acosh_p, acosh = _unary("acosh", np.arccosh, lambda x, out: mul(
    div(_one(x), sqrt(sub(x, _one(x)))), div(_one(x), sqrt(add(x, _one(x))))))
atanh_p, atanh = _unary("atanh", np.arctanh,
                        lambda x, out: div(_one(x), sub(_one(x), mul(x, x))))
# d cbrt = out^-2 / 3: through 1 / (3 out^2), the second derivative at 0 would take the
# slope of out^2 there, 2 * 0 * inf, a NaN (JAX's rule is out^-2 / 3 too: -inf at 0).
cbrt_p, cbrt = _unary("cbrt", np.cbrt,
                      lambda x, out: mul(full_like(x, 1 / 3), integer_pow(out, -2)))
exp2_p, exp2 = _unary("exp2", np.exp2, lambda x, out: mul(out, full_like(x, math.log(2))))

# This module's primitives, in the order they are made: each takes and gives a float.
MORE_MATH = (sinh_p, cosh_p, asin_p, acos_p, atan_p, asinh_p, acosh_p, atanh_p, cbrt_p, exp2_p)
