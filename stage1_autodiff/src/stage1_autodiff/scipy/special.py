"""``jax.scipy.special``: special functions, each NumPy-style (promoting integers to floats,
broadcasting) over the primitives of ``lax`` (``special.py``, ``special_functions.py``) or a
short composition.

The gamma family (``gamma``, ``beta``, ``comb``, ``poch``...) is composed from ``lgamma`` and
the sign of Gamma; ``gammainc``, ``betainc``, ``zeta`` and the Bessel functions bind JAX's lax
primitives; ``erfcx``, ``dawsn``, ``expi``, ``expn``, ``spence``, ``sici``, ``fresnel``,
``owens_t``, ``hyp1f1`` and ``hyp2f1``, which JAX writes as ``jax.numpy`` series under a
custom JVP, bind primitives of our own whose values come from SciPy; ``bessel_jn`` is
Miller's recurrence written out.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.special.logsumexp(jax.numpy.array([0.0, 0.0])))
    0.6931472

``logsumexp``, ``softmax`` and ``log_softmax`` are ``jax.nn``'s (written in ``nn.py``), as
in JAX (``softmax`` over every axis unless told).

NB: JAX's functions are in ``jax/_src/scipy/special.py``; ``logsumexp`` in
``jax/_src/ops/special.py``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import nn
from .. import numpy as jnp
from .. import prims as lax
from ..core import get_aval
from ..custom_derivatives import custom_jvp
from ..nn import logsumexp
from ..numpy.promotion import convert, promote_and_broadcast, promote_inexact

__all__ = ["bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb",
           "dawsn", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit",
           "expn", "factorial", "fresnel", "gamma", "gammainc", "gammaincc", "gammaln",
           "gammasgn", "hyp1f1", "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr",
           "log_softmax", "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "owens_t", "poch", "polygamma", "rel_entr", "sici", "softmax", "spence", "xlog1py",
           "xlogy", "zeta"]

def erf(x: Any) -> Any:
    """The error function, 2/sqrt(pi) times the integral of exp(-t**2) from 0 to x."""
    (x,) = promote_inexact(x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """1 - erf(x), without the cancellation for large x."""
    (x,) = promote_inexact(x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1); +-inf at +-1."""
    (x,) = promote_inexact(x)
    return lax.erf_inv(x)


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|; +inf at the poles (0 and the negative integers)."""
    (x,) = promote_inexact(x)
    return lax.lgamma(x)


def digamma(x: Any) -> Any:
    """psi(x), the derivative of gammaln; NaN at the poles."""
    (x,) = promote_inexact(x)
    return lax.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """psi^(n)(x), the n-th derivative of digamma; ``n`` must be an integer array or int.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.polygamma(1, 1.0))  # pi**2 / 6
        1.644934
    """
    if get_aval(n).dtype.kind not in "iu":
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{get_aval(n).dtype}.")
    n, x = promote_and_broadcast("polygamma", n, x, inexact=True, keep_scalars=False)
    return lax.polygamma(n, x)


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = promote_inexact(x)
    return lax.logistic(x)


@custom_jvp
def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of expit."""
    (x,) = promote_inexact(x)
    return jnp.log(x / (1 - x))


@logit.defjvp
def _logit_jvp(primals: tuple, tangents: tuple) -> tuple:
    """d logit = dx / (x (1 - x)), as JAX's rule: +inf at 0 and 1, where the chain rule
    through the quotient gives inf - inf, a NaN."""
    (x,), (x_dot,) = primals, tangents
    (x,) = promote_inexact(x)
    return logit(x), x_dot / (x * (1 - x))


def _times_safe_log(x: Any, y: Any, log_y: Any) -> Any:
    """x * log_y, taken as 0 where x is 0 even if log_y is inf or NaN (y = 0, y < 0), but
    NaN for a NaN y, as JAX's. The derivative in x stays log_y where it is finite; in y,
    x / y (NaN only at (0, 0))."""
    zero_times_any = (x == 0) & ~jnp.isfinite(log_y) & ~jnp.isnan(y)
    return x * jnp.where(zero_times_any, jnp.zeros_like(log_y), log_y)


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), and 0 where x is 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.xlogy(0.0, 0.0))
        0.0
    """
    x, y = promote_inexact(x, y)
    return _times_safe_log(x, y, jnp.log(y))


def xlog1py(x: Any, y: Any) -> Any:
    """x * log(1 + y), and 0 where x is 0."""
    x, y = promote_inexact(x, y)
    return _times_safe_log(x, y, jnp.log1p(y))


def entr(x: Any) -> Any:
    """-x log x for x > 0, 0 at 0, -inf below 0 (the summand of an entropy)."""
    (x,) = promote_inexact(x)
    return jnp.where(x < 0, -np.inf, -_x_log_x(x))


@custom_jvp
def _x_log_x(x: Any) -> Any:
    """x log x, 0 at 0, with the derivative log x + 1 (+-inf at 0 and at inf, as JAX's): the
    chain rule through ``xlogy(x, x)`` adds the slope in each argument, and at 0 that in y
    is 0 / 0, a NaN."""
    return xlogy(x, x)


@_x_log_x.defjvp
def _x_log_x_jvp(primals: tuple, tangents: tuple) -> tuple:
    (x,), (x_dot,) = primals, tangents
    return _x_log_x(x), x_dot * (jnp.log(x) + 1)


# ------------------------------------------------------------------------------------------
# The standard normal's CDF and its inverse (jax.scipy.stats.norm builds on these)
# ------------------------------------------------------------------------------------------


def _strong(x: Any) -> Any:
    """ndtr, ndtri, log_ndtr and spence give a strongly typed result even for a Python float, as
    JAX's (whose constants are arrays of the input's dtype)."""
    return convert(x, x.dtype, weak_type=False)


def ndtr(x: Any) -> Any:
    """The standard normal CDF, erfc(-x / sqrt(2)) / 2 (no cancellation in the left tail)."""
    (x,) = promote_inexact(x)
    return _strong(0.5 * lax.erfc(-x * (1 / math.sqrt(2))))


@custom_jvp
def ndtri(p: Any) -> Any:
    """The inverse of ndtr; -inf at 0, +inf at 1. On the lower half (the upper one by
    symmetry, 1 - p being exact there) a first guess sqrt(2) erfinv(2p - 1), which loses
    precision in the tail where 2p - 1 rounds, then three Newton steps on
    log_ndtr(x) = log(p), a nearly straight line in the tail.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.ndtri(0.975))
        1.9599645

    NB: JAX evaluates Cephes' rational approximations instead."""
    (p,) = promote_inexact(p)
    upper = p > 0.5
    q = jnp.where(upper, 1 - p, p)
    solvable = q > 0  # and not NaN
    q = jnp.where(solvable, q, 0.5)
    guess = math.sqrt(2) * lax.erf_inv(2 * q - 1)  # -inf once 2q - 1 rounds to -1:
    x = jnp.where(jnp.isfinite(guess), guess, -jnp.sqrt(-2 * jnp.log(q)))  # then the tail's
    for _ in range(3):
        log_cdf = log_ndtr(x)
        log_pdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
        x = x - (log_cdf - jnp.log(q)) * jnp.exp(log_cdf - log_pdf)
    x = jnp.where(solvable, x, jnp.where(p == 0, -np.inf, jnp.where(p == 1, -np.inf, np.nan)))
    return _strong(jnp.where(upper, -x, x))


@ndtri.defjvp
def _ndtri_jvp(primals: tuple, tangents: tuple) -> tuple:
    """d ndtri(p) = dp / phi(x) = sqrt(2 pi) exp(x^2 / 2) dp at x = ndtri(p), the inverse
    function's rule, as JAX's. Differentiated through the Newton steps and the selects, the
    slope was 0 outside [0, 1], where ndtri is NaN, and NaN at p = 1e-30."""
    (p,), (p_dot,) = primals, tangents
    x = ndtri(p)
    return x, p_dot * (math.sqrt(2 * math.pi) * jnp.exp(0.5 * x * x))


def log_ndtr(x: Any) -> Any:
    """log(ndtr(x)), accurate in both tails: log1p(-ndtr(-x)) on the right, and on the far
    left (below -20 in float64, -10 in float32, where ndtr underflows) the asymptotic
    series log(phi(x) / -x * (1 - 1/x^2 + 3/x^4 - 15/x^6)).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.log_ndtr(-40.0))
        -804.60846
    """
    (x,) = promote_inexact(x)
    lower = -20.0 if x.dtype == np.float64 else -10.0
    far_left, right = x < lower, x > 6
    x_left = jnp.where(far_left, x, lower)  # each branch sees only inputs of its own side
    x_mid = jnp.where(far_left | right, 0.0, x)
    x_right = jnp.where(right, x, 6.0)
    inv_x2 = 1 / (x_left * x_left)
    series = 1 + inv_x2 * (-1 + inv_x2 * (3 + inv_x2 * -15))
    log_left = (-0.5 * x_left * x_left - jnp.log(-x_left) - 0.5 * math.log(2 * math.pi)
                + jnp.log(series))
    return _strong(jnp.where(far_left, log_left, jnp.where(
        right, jnp.log1p(-ndtr(-x_right)), jnp.log(ndtr(x_mid)))))


# ------------------------------------------------------------------------------------------
# softmax and log_softmax: jax.nn's, over every axis unless told
# ------------------------------------------------------------------------------------------


def softmax(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Any:
    """exp(x) normalized to sum to 1 over ``axis`` (all axes by default, as SciPy's).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.softmax(jax.numpy.array([[0.0, 0.0], [0.0, 0.0]])))
        [[0.25 0.25]
         [0.25 0.25]]
    """
    return nn.softmax(x, axis=axis)


def log_softmax(x: Any, /, *, axis: int | tuple[int, ...] | None = None) -> Any:
    """x minus its logsumexp over ``axis`` (all axes by default)."""
    return nn.log_softmax(x, axis=axis)


# ------------------------------------------------------------------------------------------
# The gamma function and its relatives, from lgamma and the sign of Gamma
# ------------------------------------------------------------------------------------------


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x): -1 on the intervals (-2k-1, -2k) and at -0, else +1; NaN at the
    negative integers (the poles, where the sign depends on the side), -inf and NaN."""
    (x,) = promote_inexact(x)
    negative = x < 0
    floor_x = lax.floor(x)
    undefined = (negative & (x == floor_x)) | jnp.isnan(x)
    minus = (negative & (jnp.remainder(floor_x, 2) != 0)) | ((x == 0) & jnp.signbit(x))
    one = _strong(jnp.ones_like(x))  # a strongly typed result, as JAX's
    return jnp.where(undefined, np.nan * one, jnp.where(minus, -one, one))


def gamma(x: Any) -> Any:
    """Gamma(x), as gammasgn(x) exp(gammaln(x)); NaN at the poles 0 > x in the integers.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.gamma(5.0))
        24.0
    """
    (x,) = promote_inexact(x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


def loggamma(x: Any) -> Any:
    """log Gamma(x) for real x > 0; NaN elsewhere (the principal branch is complex there)."""
    (x,) = promote_inexact(x)
    return jnp.where(x > 0, lax.lgamma(x), np.nan)


def betaln(a: Any, b: Any) -> Any:
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).

    NB: JAX (``jax/_src/third_party/scipy/betaln.py``) corrects for the cancellation when
    a or b is large; this direct sum loses digits there."""
    a, b = promote_inexact(a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


def beta(a: Any, b: Any) -> Any:
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), its sign from gammasgn."""
    a, b = promote_inexact(a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(betaln(a, b))


def factorial(n: Any, exact: bool = False) -> Any:
    """n! = Gamma(n + 1) as a float (0 for n < 0); ``exact=True`` is not supported, as in JAX.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.factorial(4))
        24.0
    """
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_inexact(n)
    return jnp.where(n < 0, 0, jnp.exp(lax.lgamma(n + 1)))


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:  # noqa: N803 -- SciPy's name
    """N choose k, exp(gammaln(N + 1) - gammaln(k + 1) - gammaln(N - k + 1)): 0 where k < 0,
    N < 0 or k > N; with ``repetition``, (N + k - 1) choose k (1 at k = 0 for N >= 0)."""
    N, k = promote_inexact(N, k)  # noqa: N806
    if repetition:
        return jnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    defined = (k <= N) & (N >= 0) & (k >= 0)
    safe_n, safe_k = jnp.where(defined, N, 0.0), jnp.where(defined, k, 0.0)
    log_comb = (lax.lgamma(safe_n + 1) - lax.lgamma(safe_k + 1)
                - lax.lgamma(safe_n + 1 - safe_k))
    return jnp.where(defined, jnp.exp(log_comb), 0.0)


@custom_jvp
def poch(z: Any, m: Any) -> Any:
    """The rising factorial (z)_m = Gamma(z + m) / Gamma(z); 1 where m = 0."""
    z, m = promote_inexact(z, m)
    return jnp.where(m == 0, jnp.ones_like(z), gamma(z + m) / gamma(z))  # strong, as JAX's


@poch.defjvp
def _poch_jvp(primals: tuple, tangents: tuple) -> tuple:
    """d/dz (z)_m = (psi(z + m) - psi(z)) (z)_m and d/dm (z)_m = psi(z + m) (z)_m."""
    (z, m), (z_dot, m_dot) = primals, tangents
    out = poch(z, m)
    z, m = promote_inexact(z, m)
    psi_sum = lax.digamma(z + m)
    return out, ((psi_sum - lax.digamma(z)) * z_dot + psi_sum * m_dot) * out


def multigammaln(a: Any, d: int) -> Any:
    """log Gamma_d(a) = d (d - 1) / 4 log(pi) + sum_{i<d} gammaln(a - i / 2); ``d`` a
    concrete integer."""
    d = int(d)  # truncated, as JAX's; a traced d raises a ConcretizationTypeError
    a, d_ = promote_inexact(a, d)
    constant = 0.25 * d_ * (d_ - 1) * math.log(math.pi)
    halves = jnp.arange(d, dtype=d_.dtype) / 2
    return jnp.sum(lax.lgamma(jnp.expand_dims(a, -1) - halves), axis=-1) + constant



# ------------------------------------------------------------------------------------------
# Entropies and the Box-Cox transforms
# ------------------------------------------------------------------------------------------


def rel_entr(p: Any, q: Any) -> Any:
    """p log(p / q) where p, q > 0; 0 where p = 0 and q >= 0; +inf elsewhere.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.rel_entr(0.0, 2.0))
        0.0
    """
    p, q = promote_inexact(p, q)
    positive = (p > 0) & (q > 0)
    safe_p, safe_q = jnp.where(positive, p, 1), jnp.where(positive, q, 1)
    log_ratio = _x_log_x(safe_p) - xlogy(safe_p, safe_q)  # (xlogy(p, p)'s slope at inf: NaN)
    zero = jnp.zeros_like(p)
    return jnp.where(positive, log_ratio, jnp.where((p == 0) & (q >= 0), zero, np.inf))


def kl_div(p: Any, q: Any) -> Any:
    """rel_entr(p, q) - p + q, the summand of a Kullback-Leibler divergence."""
    p, q = promote_inexact(p, q)
    return rel_entr(p, q) - p + q


def _boxcox(log_x: Any, lmbda: Any) -> Any:
    """(exp(lmbda log_x) - 1) / lmbda, its limit log_x where lmbda is 0."""
    zero = lmbda == 0
    safe_lmbda = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    return jnp.where(zero, log_x, jnp.expm1(safe_lmbda * log_x) / safe_lmbda)


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda = 0; NaN for x < 0."""
    x, lmbda = promote_inexact(x, lmbda)
    return _boxcox(jnp.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """boxcox(1 + x, lmbda), without the rounding of 1 + x for small x."""
    x, lmbda = promote_inexact(x, lmbda)
    return _boxcox(jnp.log1p(x), lmbda)


# ------------------------------------------------------------------------------------------
# lax's special_functions.py: incomplete gamma and beta, Hurwitz zeta, Bessel functions
# ------------------------------------------------------------------------------------------


def _binary(name: str, x: Any, y: Any) -> list[Any]:
    return promote_and_broadcast(name, x, y, inexact=True, keep_scalars=False)


def gammainc(a: Any, x: Any) -> Any:
    """P(a, x), the regularized lower incomplete gamma function.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.gammainc(1.0, 2.0))  # 1 - exp(-2)
        0.86466473
    """
    return lax.igamma(*_binary("gammainc", a, x))


def gammaincc(a: Any, x: Any) -> Any:
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function."""
    return lax.igammac(*_binary("gammaincc", a, x))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """I_x(a, b), the regularized incomplete beta function; differentiable in x only.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.betainc(1.0, 1.0, 0.25))
        0.25
    """
    a, b, x = promote_and_broadcast("betainc", a, b, x, inexact=True, keep_scalars=False)
    return lax.betainc(a, b, x)


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function, the sum over k >= 0 of (q + k)^-x; ``q`` is required (the
    Riemann zeta function, q = 1, is not implemented, as in JAX)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    return lax.zeta(*_binary("zeta", x, q))


def i0e(x: Any) -> Any:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
    (x,) = promote_inexact(x)
    return lax.bessel_i0e(x)


@custom_jvp
def i0(x: Any) -> Any:
    """I0(x), the modified Bessel function of the first kind of order 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.i0(0.0))
        1.0
    """
    (x,) = promote_inexact(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


@i0.defjvp
def _i0_jvp(primals: tuple, tangents: tuple) -> tuple:
    """d I0 = I1 dx. The product rule through ``exp(|x|) * i0e(x)`` gives the same slope as
    exp(|x|) (i1e(x) - sign(x) i0e(x)) + sign(x) exp(|x|) i0e(x), whose two terms are inf and
    -inf where exp(|x|) overflows (x > 89 in float32): a NaN. NB: JAX's i0 is that product,
    and its slope is inf there only because its i1e rounds one ulp above its i0e."""
    (x,), (x_dot,) = primals, tangents
    (x,) = promote_inexact(x)
    return i0(x), x_dot * i1(x)


def i1e(x: Any) -> Any:
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1."""
    (x,) = promote_inexact(x)
    return lax.bessel_i1e(x)


def i1(x: Any) -> Any:
    """I1(x), the modified Bessel function of the first kind of order 1."""
    (x,) = promote_inexact(x)
    return jnp.exp(jnp.abs(x)) * lax.bessel_i1e(x)


# ------------------------------------------------------------------------------------------
# Bernoulli numbers
# ------------------------------------------------------------------------------------------


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2), in the default float dtype: the even
    ones from B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) / (2 pi)^(2k), zeta summed to 50 terms.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.bernoulli(4))
        [ 1.         -0.5         0.16666667  0.         -0.03333325]
    """
    n = operator.index(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    first = np.array([1.0, -0.5, 1 / 6])[:n + 1]
    m = np.arange(4, n + 1, 2, dtype=np.float64)
    ratio = np.cumprod(-(m - 1) * m / (4 * np.pi ** 2)) / np.pi ** 2  # 2 (2k)! / (2 pi)^2k
    k = np.arange(2, 50, dtype=np.float64)
    zeta_of_m = 1 + np.sum(k[:, None] ** -m[None, :], axis=0)
    numbers = np.zeros(n + 1)
    numbers[:first.size] = first
    numbers[4::2] = ratio * zeta_of_m
    return jnp.asarray(numbers, dtype=jnp.result_type(float))


# ------------------------------------------------------------------------------------------
# erfcx, dawsn and the exponential integrals; spence
# ------------------------------------------------------------------------------------------


def erfcx(x: Any) -> Any:
    """exp(x^2) erfc(x), the scaled complementary error function (no overflow for large x).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.erfcx(0.0))
        1.0
    """
    (x,) = promote_inexact(x)
    return _strong(lax.erfcx(x))


def dawsn(x: Any) -> Any:
    """Dawson's integral exp(-x^2) times the integral of exp(t^2) from 0 to x."""
    (x,) = promote_inexact(x)
    return _strong(lax.dawsn(x))


def expi(x: Any) -> Any:
    """Ei(x), the principal value of the integral of exp(t) / t from -inf to x; NaN at 0 and
    at +-inf (where Ei tends to -inf, +inf and 0), as JAX's."""
    (x,) = promote_inexact(x)
    return _strong(jnp.where((x == 0) | jnp.isinf(x), np.nan, lax.expi(x)))


def expn(n: Any, x: Any) -> Any:
    """E_n(x), the integral over t > 1 of exp(-x t) / t^n; NaN for n < 0 or x < 0, and at
    x = +inf (where it tends to 0), as JAX's.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.expn(0, 1.0))  # exp(-1)
        0.36787945
    """
    n, x = _binary("expn", n, x)
    return _strong(jnp.where(x == np.inf, np.nan, lax.expn(n, x)))


def exp1(x: Any) -> Any:
    """E_1(x) = expn(1, x), the exponential integral."""
    (x,) = promote_inexact(x)
    return expn(1, x)


def spence(x: Any) -> Any:
    """Spence's function, the integral of log(t) / (1 - t) from 1 to x; NaN for x < 0.
    Only float32 and float64 operands are accepted (no promotion), as in JAX."""
    x = jnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported "
                        "types.")
    return _strong(lax.spence(x))  # strong even of a Python float, as JAX's


# ------------------------------------------------------------------------------------------
# sici, fresnel and owens_t
# ------------------------------------------------------------------------------------------


def sici(x: Any) -> tuple[Any, Any]:
    """The sine and cosine integrals (Si(x), Ci(x)); Ci of |x| for x < 0 (its real part).

    Example:
        >>> import stage1_autodiff as jax
        >>> si, ci = jax.scipy.special.sici(1.0)
        >>> print(si, ci)
        0.94608307 0.33740392
    """
    (x,) = promote_inexact(x)
    return _strong(lax.si(x)), _strong(lax.ci(x))


def fresnel(x: Any) -> tuple[Any, Any]:
    """The Fresnel integrals (S(x), C(x)) of sin(pi t^2 / 2) and cos(pi t^2 / 2) from 0 to x."""
    (x,) = promote_inexact(x)
    return _strong(lax.fresnel_s(x)), _strong(lax.fresnel_c(x))


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function T(h, a), a bivariate normal probability.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.owens_t(0.0, 1.0))  # arctan(1) / (2 pi)
        0.125
    """
    return _strong(lax.owens_t(*_binary("owens_t", h, a)))


# ------------------------------------------------------------------------------------------
# bessel_jn: Miller's backward recurrence, in the operand's dtype
# ------------------------------------------------------------------------------------------


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """J_0(z) ... J_v(z), the Bessel functions of the first kind of integer orders, stacked on
    a new leading axis. Miller's algorithm: from order ``n_iter`` down, the recurrence
    J_(k-1) = 2k/z J_k - J_(k+1) from an arbitrary tiny start, then the normalization
    J_0 + 2 (J_2 + J_4 + ...) = 1. As in JAX, in the operand's dtype: in float32 the
    unnormalized values overflow for small |z| (NaN), and ``n_iter`` must grow with |z|.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.bessel_jn(jax.numpy.float32(30.0), v=1))
        [-0.08636799 -0.11875113]
    """
    (z,) = promote_inexact(jnp.asarray(z))
    v, n_iter = operator.index(v), int(n_iter)
    later, current = jnp.zeros_like(z), jnp.full_like(z, 1e-16)  # f_(k+2), f_(k+1)
    even_sum, values = jnp.zeros_like(z), []
    for k in range(n_iter, -1, -1):
        value = 2.0 * (k + 1.0) * current / z - later
        if k % 2 == 0:
            even_sum = even_sum + 2.0 * value
        values.append(value)
        later, current = current, value
    orders = jnp.stack(values[::-1][:v + 1])
    return _strong(orders / (even_sum - values[-1]))


# ------------------------------------------------------------------------------------------
# The hypergeometric functions
# ------------------------------------------------------------------------------------------


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Kummer's 1F1(a; b; x), the sum over n of (a)_n / (b)_n x^n / n!; differentiable in x
    only (JAX's is in a and b too).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.hyp1f1(1.0, 1.0, 1.0))  # exp(1)
        2.7182817
    """
    a, b, x = promote_and_broadcast("hyp1f1", a, b, x, inexact=True, keep_scalars=False)
    return _strong(lax.hyp1f1(a, b, x))


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """Gauss's 2F1(a, b; c; x), the sum over n of (a)_n (b)_n / (c)_n x^n / n!, continued
    beyond |x| < 1; differentiable in x only (JAX's is in a, b and c too)."""
    a, b, c, x = promote_and_broadcast("hyp2f1", a, b, c, x, inexact=True,
                                       keep_scalars=False)
    return _strong(lax.hyp2f1(a, b, c, x))
