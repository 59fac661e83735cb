"""Complex numbers: the four primitives that move between real and complex values, ``real``,
``imag``, ``conj`` and ``complex``. Arithmetic on complex arrays needs no new primitive: add,
mul, exp, log... take complex operands as NumPy does.

Derivatives follow JAX's convention. Each rule is the *transpose* of the linear map its JVP
applies, with no conjugation anywhere: for a holomorphic ``f``, ``vjp(f)(ct) = ct * f'(z)``.
So ``grad`` of a real-valued ``L(z)`` is ``dL/dx - i dL/dy`` (z = x + iy), the conjugate of
the steepest-ascent direction: ``grad(lambda z: abs(z) ** 2)(3 + 4j)`` is ``6 - 8j``. The
non-holomorphic maps here are real-linear, and their transposes say so: ``real`` maps ``z`` to
``x``, so its transpose maps a real ``ct`` to ``ct + 0i``; ``imag`` maps ``z`` to ``y``, whose
transpose maps ``ct`` to ``0 - ct i`` (the ``-`` is the convention's conjugate).

NB: JAX's primitives are ``real_p``, ``imag_p``, ``conj_p`` and ``complex_p`` in
``jax/_src/lax/lax.py``, with the same transposes (``ad.deflinear2``); the convention is
explained in JAX's FAQ ("Complex numbers and differentiation").

Example:
    >>> from stage1_autodiff import lax
    >>> import numpy as np
    >>> lax.complex(np.float32(3.0), np.float32(4.0))
    Array(3.+4.j, dtype=complex64)
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .core import (
    ELEMENTWISE,
    Primitive,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
    weak_when_operands_weak,
)
from .primitives import (
    abs_p,
    convert_element_type,
    div,
    eq,
    full_like,
    mul,
    neg,
    select_n,
    zeros_like,
)

__all__ = ["COMPLEX_PRIMITIVES", "complex", "complex_p", "conj", "conj_p",
           "imag", "imag_p", "real", "real_p"]


def _linear_jvp(prim: Primitive):
    """A linear primitive's JVP: the primitive applied to the tangents."""
    def jvp(primals, tangents, **params):
        return prim.bind(*primals, **params), prim.bind(*tangents, **params)
    return jvp


real_p = Primitive("real", kind=ELEMENTWISE)
def real(x): return real_p.bind(x)
impl_rules[real_p] = lambda x: np.real(x).copy()
def real_vjp(ct, x, *, out): return [complex(ct, zeros_like(ct))]
vjp_rules[real_p] = real_vjp
jvp_rules[real_p] = _linear_jvp(real_p)

imag_p = Primitive("imag", kind=ELEMENTWISE)
def imag(x): return imag_p.bind(x)
impl_rules[imag_p] = lambda x: np.imag(x).copy()
def imag_vjp(ct, x, *, out): return [complex(zeros_like(ct), neg(ct))]
vjp_rules[imag_p] = imag_vjp
jvp_rules[imag_p] = _linear_jvp(imag_p)

conj_p = Primitive("conj", kind=ELEMENTWISE)
def conj(x):
    """The complex conjugate; a real operand is made complex first, as JAX's ``lax.conj``
    gives a complex result for one."""
    aval = get_aval(x)
    if aval.dtype.kind != "c":
        x = convert_element_type(x, dtypes.complex_dtype(aval.dtype))
    return conj_p.bind(x)
impl_rules[conj_p] = np.conjugate
def conj_vjp(ct, x, *, out): return [conj(ct)]
vjp_rules[conj_p] = conj_vjp
jvp_rules[conj_p] = _linear_jvp(conj_p)

complex_p = Primitive("complex", kind=ELEMENTWISE)
def complex(x, y): return complex_p.bind(x, y)  # noqa: A001 -- lax's name
def complex_impl(x, y):
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtypes.complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return out
impl_rules[complex_p] = complex_impl
def complex_vjp(ct, x, y, *, out): return [real(ct), neg(imag(ct))]
vjp_rules[complex_p] = complex_vjp
jvp_rules[complex_p] = _linear_jvp(complex_p)

# real(z) of a weakly typed z is weak (a float32 from a Python complex), as in JAX; so is
# abs(z), whose dtype differs from z's too.
weak_when_operands_weak.update([real_p, imag_p, conj_p, complex_p, abs_p])


# --8<-- [start:abs_complex]
# |z| of a complex z: abs_p's rules (primitives.py) are for real x; these cover complex z.
_real_abs_vjp, _real_abs_jvp = vjp_rules[abs_p], jvp_rules[abs_p]


def abs_vjp(ct, x, *, out):
    """The transpose of :func:`abs_jvp`: ``ct + 0i`` times ``conj(z) / |z|``."""
    if not dtypes.is_complex(get_aval(x).dtype):
        return _real_abs_vjp(ct, x, out=out)
    return [mul(complex(ct, zeros_like(ct)), _conj_over_abs(x, out))]
vjp_rules[abs_p] = abs_vjp


def abs_jvp(primals, tangents):
    """d|z| = Re(conj(z) dz) / |z|, a real tangent from a complex one (at 0, where |z| has
    no derivative, it is taken as 0 over 1, as in JAX)."""
    (x,), (x_dot,) = primals, tangents
    if not dtypes.is_complex(get_aval(x).dtype):
        return _real_abs_jvp(primals, tangents)
    out = abs_p.bind(x)
    return out, real(mul(x_dot, _conj_over_abs(x, out)))
jvp_rules[abs_p] = abs_jvp


def _conj_over_abs(x, out):
    at_zero = eq(out, zeros_like(out))
    safe = select_n(at_zero, out, full_like(out, 1))
    return div(conj(x), complex(safe, zeros_like(safe)))
# --8<-- [end:abs_complex]

# This module's primitives, for the later stages' tables.
COMPLEX_PRIMITIVES = (real_p, imag_p, conj_p, complex_p)
