"""The special functions of ``lax`` that need more than ``math``: the regularized incomplete
gamma and beta functions (``igamma``, ``igammac``, ``igamma_grad_a``, ``betainc``), the Hurwitz
zeta function (``zeta``) and the exponentially scaled modified Bessel functions of orders 0
and 1 (``bessel_i0e``, ``bessel_i1e``), each an elementwise primitive on floats; and five of
``jax.scipy.special``'s that JAX writes as ``jax.numpy`` arithmetic (``erfcx``, ``dawsn``,
``expi``, ``expn``, ``spence``, ``sici``'s two, ``fresnel``'s two, ``owens_t``,
``hyp1f1``, ``hyp2f1``), here primitives too.

Each impl evaluates SciPy's function in float64 and rounds the result to the operands' dtype.
SciPy is imported when an impl first runs, not with stage 1: stage 1 itself depends on NumPy
only, and SciPy comes with stage 2 (and with JAX).

The derivatives are JAX's: d/dx igamma(a, x) = exp(-x) x^(a-1) / Gamma(a), d/da igamma is the
primitive ``igamma_grad_a``; betainc has a derivative in x only, zeta in q only (in JAX's
``lax``; ``jax.scipy.special.zeta`` differentiates a series in x too).

NB: JAX defines these in ``jax/_src/lax/special.py``, where XLA's own loops (a series, a
continued fraction, Chebyshev polynomials) compute them in the operands' dtype.

Example:
    >>> from stage1_autodiff import lax
    >>> import numpy as np
    >>> lax.igamma(np.float32(1.0), np.float32(2.0))  # 1 - exp(-2)
    Array(0.86466473, dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .core import (
    ELEMENTWISE,
    Primitive,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
    vjp_rules_take_needs,
)
from .primitives import (
    abs,  # noqa: A004 -- lax's name
    add,
    cos,
    defjvp,
    div,
    eq,
    exp,
    full_like,
    gt,
    log,
    log1p,
    mul,
    neg,
    select_n,
    sign,
    sin,
    sub,
)
from .special import _check_float, _differentiable_in_last, erf, lgamma

__all__ = ["SPECIAL_FUNCTIONS", "UNARY_SPECIAL_FUNCTIONS", "bessel_i0e", "bessel_i0e_p",
           "bessel_i1e", "bessel_i1e_p", "betainc", "ci", "ci_p", "dawsn", "dawsn_p",
           "erfcx", "erfcx_p", "expi", "expi_p", "expn", "expn_p", "fresnel_c",
           "fresnel_c_p", "fresnel_s", "fresnel_s_p", "hyp1f1", "hyp1f1_p", "hyp2f1",
           "hyp2f1_p", "igamma", "igamma_grad_a", "igamma_grad_a_p", "igamma_p",
           "igammac", "igammac_p", "owens_t", "owens_t_p", "random_gamma_grad",
           "random_gamma_grad_p", "regularized_incomplete_beta_p", "si", "si_p",
           "spence", "spence_p", "zeta", "zeta_p"]


def _scipy_special():
    try:
        from scipy import special
    except ImportError as error:  # stage 1 alone: NumPy only
        raise ImportError("lax's igamma, betainc, zeta and Bessel functions evaluate SciPy's "
                          "on the host: install scipy (it comes with stage2_jit).") from error
    return special


def _from_scipy(name: str, output: int | None = None):
    """SciPy's ufunc ``name`` on float64 operands (its result number ``output``, for a ufunc
    of several results), rounded to the first operand's dtype."""
    def impl(*operands):
        function = getattr(_scipy_special(), name)
        with np.errstate(all="ignore"):
            out = function(*(np.asarray(x, np.float64) for x in operands))
        out = out if output is None else out[output]
        return np.asarray(out).astype(operands[0].dtype)
    impl.__name__ = f"{name}_impl"
    return impl


def _no_derivative_rule(*args, **kwargs):
    raise NotImplementedError("Differentiation rule for 'igamma_grad_a' not implemented")


def _binary_primitive(name: str) -> Primitive:
    return Primitive(name, kind=ELEMENTWISE)


def _bind(prim: Primitive, *operands: Any) -> Any:
    _check_float(prim.name, *operands)
    return prim.bind(*operands)


# ------------------------------------------------------------------------------------------
# igamma, igammac and igamma_grad_a
# ------------------------------------------------------------------------------------------

igamma_p = _binary_primitive("igamma")
def igamma(a: Any, x: Any) -> Any:
    """P(a, x), the regularized lower incomplete gamma function (a CDF of Gamma(a))."""
    return _bind(igamma_p, a, x)
impl_rules[igamma_p] = _from_scipy("gammainc")
def _igamma_slope_x(a, x):  # the density of Gamma(a): exp(-x + (a - 1) log x - lgamma(a))
    return exp(sub(add(neg(x), mul(sub(a, full_like(a, 1)), log(x))), lgamma(a)))
def igamma_vjp(ct, a, x, *, out, needs):
    ct_a = mul(ct, igamma_grad_a(a, x)) if needs[0] else None
    return [ct_a, mul(ct, _igamma_slope_x(a, x))]
vjp_rules[igamma_p] = igamma_vjp
vjp_rules_take_needs.add(igamma_p)
_IGAMMA_TERMS = (lambda a_dot, a, x, *, out: mul(a_dot, igamma_grad_a(a, x)),
                 lambda x_dot, a, x, *, out: mul(x_dot, _igamma_slope_x(a, x)))
jvp_rules[igamma_p] = defjvp(igamma_p, *_IGAMMA_TERMS)

igammac_p = _binary_primitive("igammac")
def igammac(a: Any, x: Any) -> Any:
    """Q(a, x) = 1 - P(a, x), computed without the cancellation (a survival function)."""
    return _bind(igammac_p, a, x)
impl_rules[igammac_p] = _from_scipy("gammaincc")
def igammac_vjp(ct, a, x, *, out, needs):
    return [None if ct_ is None else neg(ct_) for ct_ in igamma_vjp(ct, a, x, out=out,
                                                                    needs=needs)]
vjp_rules[igammac_p] = igammac_vjp
vjp_rules_take_needs.add(igammac_p)
jvp_rules[igammac_p] = defjvp(igammac_p, *[  # Q = 1 - P: P's terms, negated
    lambda t, a, x, *, out, term=term: neg(term(t, a, x, out=out)) for term in _IGAMMA_TERMS])


def _igamma_grad_a_impl(a, x):
    """d/da P(a, x) = P d/da log P where P <= 1/2, and -Q d/da log Q (Q = 1 - P) above, so
    that neither tail cancels; each logarithm, nearly straight in a, differentiated by
    Richardson's extrapolation of central differences in float64 (h a thousandth of a).
    NB: XLA differentiates its series and continued fraction term by term instead."""
    special = _scipy_special()
    a64, x64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        lower = special.gammainc(a64, x64) <= 0.5
        h = np.minimum(1e-3 * np.maximum(np.abs(a64), 1e-2), 0.5 * a64)  # keep a - h > 0

        def log_tail(shape):
            return np.log(np.where(lower, special.gammainc(shape, x64),
                                   special.gammaincc(shape, x64)))

        def central(step):
            return (log_tail(a64 + step) - log_tail(a64 - step)) / (2 * step)
        slope = (4 * central(h / 2) - central(h)) / 3
        tail = np.exp(log_tail(a64))
        out = np.where(tail == 0, 0.0, np.where(lower, tail * slope, -tail * slope))
    return out.astype(a.dtype)


igamma_grad_a_p = _binary_primitive("igamma_grad_a")
def igamma_grad_a(a: Any, x: Any) -> Any:
    """d/da P(a, x), the derivative of igamma in its shape parameter."""
    return _bind(igamma_grad_a_p, a, x)
impl_rules[igamma_grad_a_p] = _igamma_grad_a_impl
vjp_rules[igamma_grad_a_p] = _no_derivative_rule  # as in JAX, which has none
jvp_rules[igamma_grad_a_p] = _no_derivative_rule

# ------------------------------------------------------------------------------------------
# betainc (regularized_incomplete_beta) and zeta
# ------------------------------------------------------------------------------------------

regularized_incomplete_beta_p = Primitive("regularized_incomplete_beta", kind=ELEMENTWISE)
def betainc(a: Any, b: Any, x: Any) -> Any:
    """I_x(a, b), the regularized incomplete beta function (a CDF of Beta(a, b))."""
    return _bind(regularized_incomplete_beta_p, a, b, x)
impl_rules[regularized_incomplete_beta_p] = _from_scipy("betainc")
def _betainc_slope_x(a, b, x):  # the density of Beta(a, b) at x
    one = full_like(a, 1)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    return exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))), log_beta))
_differentiable_in_last(regularized_incomplete_beta_p, _betainc_slope_x,
                        "Betainc gradient with respect to a and b not supported.")

zeta_p = _binary_primitive("zeta")
def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function zeta(x, q) = sum over k >= 0 of (q + k)^-x."""
    return _bind(zeta_p, x, q)
impl_rules[zeta_p] = _from_scipy("zeta")
_differentiable_in_last(  # d/dq zeta(x, q) = -x zeta(x + 1, q)
    zeta_p, lambda x, q: neg(mul(x, zeta(add(x, full_like(x, 1)), q))),
    "zeta gradient with respect to x is not supported.")

# ------------------------------------------------------------------------------------------
# bessel_i0e and bessel_i1e
# ------------------------------------------------------------------------------------------


def _host_unary(name: str, scipy_name: str, slope, doc: str,
                output: int | None = None) -> tuple[Primitive, Any]:
    """A unary primitive whose impl is SciPy's ``scipy_name`` (its result ``output``) and
    whose derivative at x is ``slope(x, out)``; its wrapper checks for a float and has the
    docstring ``doc``."""
    prim = Primitive(name, kind=ELEMENTWISE)
    impl_rules[prim] = _from_scipy(scipy_name, output)

    def vjp(ct, x, *, out):
        return [mul(ct, slope(x, out))]
    vjp_rules[prim] = vjp

    def jvp(primals, tangents):
        out = prim.bind(primals[0])
        return out, mul(tangents[0], slope(primals[0], out))
    jvp_rules[prim] = jvp

    def apply(x: Any) -> Any:
        return _bind(prim, x)
    apply.__name__, apply.__doc__ = name, doc
    return prim, apply


def _i0e_slope(x, out):  # d i0e = i1e(x) - sign(x) i0e(x)
    return sub(bessel_i1e(x), mul(sign(x), out))


def _i1e_slope(x, out):
    """i0e(x) - i1e(x) (sign(x) + 1/x), and its limit 1/2 where |x| is below the dtype's
    epsilon (where 1/x would overflow the difference), as JAX's."""
    eps = float(np.finfo(get_aval(x).dtype).eps)
    not_tiny = gt(abs(x), full_like(x, eps))
    safe_x = select_n(not_tiny, full_like(x, eps), x)
    slope = sub(bessel_i0e(safe_x), mul(out, add(sign(safe_x), div(full_like(x, 1), safe_x))))
    return select_n(not_tiny, full_like(x, 0.5), slope)


bessel_i0e_p, bessel_i0e = _host_unary(
    "bessel_i0e", "i0e", _i0e_slope,
    "exp(-|x|) I0(x), the modified Bessel function of order 0 scaled to stay finite.")
bessel_i1e_p, bessel_i1e = _host_unary(
    "bessel_i1e", "i1e", _i1e_slope,
    "exp(-|x|) I1(x), the modified Bessel function of order 1 scaled to stay finite.")

# ------------------------------------------------------------------------------------------
# erfcx, dawsn, expi, spence, sici, fresnel, expn, owens_t: as primitives of our own
# ------------------------------------------------------------------------------------------
# NB: JAX has no such primitives: jax/_src/scipy/special.py writes each as jax.numpy
# arithmetic (rational approximations, series, continued fractions) under a custom_jvp. Here
# the values come from SciPy and the custom derivative is the primitive's rule.


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
# erfcx(x) = exp(x^2) erfc(x): d erfcx = 2 x erfcx(x) - 2 / sqrt(pi)
erfcx_p, erfcx = _host_unary("erfcx", "erfcx", lambda x, out: sub(
    mul(full_like(x, 2), mul(x, out)), full_like(x, _TWO_OVER_SQRT_PI)),
    "exp(x^2) erfc(x), the scaled complementary error function.")
# Dawson's integral D(x) = exp(-x^2) int_0^x exp(t^2) dt: D' = 1 - 2 x D(x)
dawsn_p, dawsn = _host_unary("dawsn", "dawsn", lambda x, out: sub(
    full_like(x, 1), mul(full_like(x, 2), mul(x, out))), "Dawson's integral D(x).")
# Ei(x) = int_-inf^x exp(t) / t dt: Ei' = exp(x) / x
expi_p, expi = _host_unary("expi", "expi", lambda x, out: div(exp(x), x),
                            "The exponential integral Ei(x).")


def _spence_slope(x, out):
    """spence(x) = int_1^x log(t) / (1 - t) dt, so its slope is log(x) / (1 - x), -1 at 1."""
    one = full_like(x, 1)
    at_one = eq(x, one)
    safe_x = select_n(at_one, x, full_like(x, 2))
    return select_n(at_one, div(log(safe_x), sub(one, safe_x)), neg(one))


spence_p, spence = _host_unary("spence", "spence", _spence_slope,
                                "Spence's function, the dilogarithm of 1 - x.")


def _sinc_slope(x, out):  # Si' = sin(x) / x, 1 at 0
    zero = eq(x, full_like(x, 0))
    safe_x = select_n(zero, x, full_like(x, 1))
    return select_n(zero, div(sin(safe_x), safe_x), full_like(x, 1))


si_p, si = _host_unary("si", "sici", _sinc_slope, "The sine integral Si(x).", output=0)
ci_p, ci = _host_unary("ci", "sici", lambda x, out: div(cos(x), x),
                       "The cosine integral Ci(x) (of |x| below 0).", output=1)


def _half_pi_x2(x):
    return mul(full_like(x, math.pi / 2), mul(x, x))


fresnel_s_p, fresnel_s = _host_unary(
    "fresnel_s", "fresnel", lambda x, out: sin(_half_pi_x2(x)),
    "The Fresnel integral S(x), of sin(pi t^2 / 2) from 0 to x.", output=0)
fresnel_c_p, fresnel_c = _host_unary(
    "fresnel_c", "fresnel", lambda x, out: cos(_half_pi_x2(x)),
    "The Fresnel integral C(x), of cos(pi t^2 / 2) from 0 to x.", output=1)

expn_p = _binary_primitive("expn")
def expn(n: Any, x: Any) -> Any:
    """E_n(x) = the integral over t > 1 of exp(-x t) / t^n; ``n`` a float holding an integer."""
    return _bind(expn_p, n, x)
impl_rules[expn_p] = _from_scipy("expn")
def _expn_slope(n, x):
    """d/dx E_n(x) = -E_(n-1)(x); at n = 0, where SciPy has no E_-1, the derivative of
    E_0(x) = exp(-x) / x, which is -exp(-x) (x + 1) / x^2."""
    one = full_like(n, 1)
    lower = neg(expn(select_n(eq(n, full_like(n, 0)), sub(n, one), one), x))
    e0_slope = neg(div(mul(exp(neg(x)), add(x, one)), mul(x, x)))
    return select_n(eq(n, full_like(n, 0)), lower, e0_slope)
_differentiable_in_last(expn_p, _expn_slope,
                        "expn gradient with respect to n is not supported.")

owens_t_p = _binary_primitive("owens_t")
def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function, the integral of exp(-h^2 (1 + t^2) / 2) / (2 pi (1 + t^2)) over
    t from 0 to a."""
    return _bind(owens_t_p, h, a)
impl_rules[owens_t_p] = _from_scipy("owens_t")
def _owens_t_slope_h(h, a):
    """dT/dh = -exp(-h^2 / 2) erf(a h / sqrt 2) / (2 sqrt(2 pi))."""
    return mul(full_like(h, -0.5 / math.sqrt(2 * math.pi)),
               mul(exp(neg(_half_square(h))),
                   erf(mul(full_like(h, 1 / math.sqrt(2)), mul(a, h)))))
def _owens_t_slope_a(h, a):
    """dT/da, the integrand at a: exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))."""
    one_a2 = add(full_like(h, 1), mul(a, a))
    return div(exp(neg(mul(_half_square(h), one_a2))), mul(full_like(h, 2 * math.pi), one_a2))
def _half_square(h): return mul(full_like(h, 0.5), mul(h, h))
def owens_t_vjp(ct, h, a, *, out):
    return [mul(ct, _owens_t_slope_h(h, a)), mul(ct, _owens_t_slope_a(h, a))]
vjp_rules[owens_t_p] = owens_t_vjp
jvp_rules[owens_t_p] = defjvp(
    owens_t_p, lambda h_dot, h, a, *, out: mul(h_dot, _owens_t_slope_h(h, a)),
    lambda a_dot, h, a, *, out: mul(a_dot, _owens_t_slope_a(h, a)))



def _hypergeometric(name: str, doc: str) -> tuple[Primitive, Any]:
    """pFq(a..., x) with SciPy's values. Its derivative in x shifts every parameter by 1:
    d/dx 1F1(a; b; x) = a/b 1F1(a+1; b+1; x), d/dx 2F1(a, b; c; x) = ab/c 2F1(a+1, b+1;
    c+1; x). In the parameters it has none here.
    NB: JAX sums the series with jax.numpy, which differentiates in the parameters too."""
    prim = Primitive(name, kind=ELEMENTWISE)
    impl_rules[prim] = _from_scipy(name)

    def slope_x(*operands):
        *params, x = operands
        shifted = [add(p, full_like(p, 1)) for p in params]
        top = params[0] if len(params) == 2 else mul(params[0], params[1])
        return mul(div(top, params[-1]), prim.bind(*shifted, x))

    _differentiable_in_last(prim, slope_x, f"{name} gradient with respect to its parameters "
                                           "is not supported, only with respect to x.")

    def apply(*operands: Any) -> Any:
        return _bind(prim, *operands)
    apply.__name__, apply.__doc__ = name, doc
    return prim, apply


hyp1f1_p, hyp1f1 = _hypergeometric(
    "hyp1f1", "Kummer's confluent hypergeometric function 1F1(a; b; x).")
hyp2f1_p, hyp2f1 = _hypergeometric(
    "hyp2f1", "Gauss's hypergeometric function 2F1(a, b; c; x).")

random_gamma_grad_p = Primitive("random_gamma_grad", kind=ELEMENTWISE)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """d x / d a for a Gamma(a) sample x, holding its CDF value fixed."""
    return random_gamma_grad_p.bind(a, x)


def _digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) for x > 0: the recurrence up to x >= 6, then the asymptotic series."""
    shift = np.zeros_like(x)
    while (x < 6).any():
        small = x < 6
        shift = shift - np.where(small, 1 / np.where(small, x, 1), 0)
        x = np.where(small, x + 1, x)
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240))))
    return shift + np.log(x) - 0.5 / x - series


def random_gamma_grad_impl(a, x):
    """With P(a, x) = sum_n exp(-x + (a + n) log x - lgamma(a + n + 1)), dP/da sums each
    term times (log x - psi(a + n + 1)); dP/dx is the density. Both in float64, the terms
    scaled by their largest so that none overflows."""
    dtype = np.result_type(a, x)
    a64, x64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    safe_x = np.where(x64 > 0, x64, 1.0)
    lgamma = np.frompyfunc(math.lgamma, 1, 1)
    n = np.arange(int(np.max(safe_x, initial=0) + 12 * np.sqrt(np.max(safe_x, initial=0))) + 40)
    a_n = a64[..., None] + n  # a + n, for n = 0, 1, ...
    log_terms = (-safe_x[..., None] + a_n * np.log(safe_x)[..., None]
                 - np.asarray(lgamma(a64 + 1), np.float64)[..., None]
                 - np.concatenate([np.zeros_like(a_n[..., :1]),
                                   np.cumsum(np.log(a_n[..., 1:]), -1)], -1))
    psi = _digamma(a64 + 1)[..., None] + np.concatenate(
        [np.zeros_like(a_n[..., :1]), np.cumsum(1 / a_n[..., 1:], -1)], -1)
    top = log_terms.max(-1, keepdims=True)
    weighted = (np.exp(log_terms - top) * (np.log(safe_x)[..., None] - psi)).sum(-1)
    log_density = -safe_x + (a64 - 1) * np.log(safe_x) - np.asarray(lgamma(a64), np.float64)
    grad = -weighted * np.exp(top[..., 0] - log_density)
    return np.where(x64 > 0, grad, 0.0).astype(dtype)
impl_rules[random_gamma_grad_p] = random_gamma_grad_impl


def random_gamma_grad_vjp(ct, a, x, *, out):
    raise NotImplementedError(
        "random_gamma_grad has no derivative (as in JAX): the gradient of a gamma sample "
        "with respect to its shape `a` can be taken once, not twice.")
vjp_rules[random_gamma_grad_p] = random_gamma_grad_vjp


def random_gamma_grad_jvp(primals, tangents):
    return random_gamma_grad_vjp(None, *primals, out=None)
jvp_rules[random_gamma_grad_p] = random_gamma_grad_jvp


# This module's primitives, all on floats: unary or binary, but for betainc and hyp1f1 (three
# operands) and hyp2f1 (four).
SPECIAL_FUNCTIONS = (igamma_p, igammac_p, igamma_grad_a_p, regularized_incomplete_beta_p,
                     zeta_p, bessel_i0e_p, bessel_i1e_p, erfcx_p, dawsn_p, expi_p, spence_p,
                     si_p, ci_p, fresnel_s_p, fresnel_c_p, expn_p, owens_t_p, hyp1f1_p,
                     hyp2f1_p)
# Those of one operand (stage 2's abstract evaluation tells them from the binary ones).
UNARY_SPECIAL_FUNCTIONS = (bessel_i0e_p, bessel_i1e_p, erfcx_p, dawsn_p, expi_p, spence_p,
                           si_p, ci_p, fresnel_s_p, fresnel_c_p)
