"""``jax.random``'s distributions beyond uniform and normal, with JAX's algorithms.

Most samplers are a line or two over ``uniform`` or ``normal`` (the inverse of a CDF, a
ratio, a sign). Three need loops whose number of steps depends on the random numbers drawn:
the gamma sampler (Marsaglia and Tsang's rejection method, one loop per element), its
gradient (the implicit reparameterization of the gamma CDF), and the Poisson sampler
(Knuth's product of uniforms for a small rate, Hormann's transformed rejection for a large
one). Each is a primitive whose implementation runs those loops in NumPy, drawing exactly the
threefry bits JAX draws: the same key gives the same sample.

NB: JAX has ``random_gamma_p`` too (jax/_src/random/core.py), lowered by tracing its loops
with ``lax.while_loop``; its Poisson sampler is a ``while_loop`` under ``jit``, not a
primitive. Stage 1 has no loops that can be traced, so here both run on the host.

The binomial sampler's two loops (inversion and BTRS, which ``multinomial`` calls once per
outcome) are written in our array operations, as JAX writes them, but run eagerly: they work
outside ``jit`` and ``vmap`` only (see the section at the end).

Example:
    >>> import stage1_autodiff as jax
    >>> x = jax.random.gamma(jax.random.key(0), 2.0, (3,))
    >>> x.shape, str(x.dtype)
    ((3,), 'float32')
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from . import dtypes
from . import numpy as jnp
from . import prims as lax
from .core import ELEMENTWISE, Primitive, Tracer, get_aval, impl_rules, jvp_rules, vjp_rules
from .cumulative import cumsum
from .errors import ConcretizationTypeError
from .extension import while_loop_eager_or_traced
from .numpy.promotion import as_value, broadcast_shapes, canonicalize_axis, convert, promote_inexact
from .primitives import _zero_jvp, _zero_vjp
from .random import (
    Shape,
    _check_shape,
    _key_data_and_kind,
    _shape,
    _single_key,
    bernoulli,
    gumbel,
    normal,
    permutation,
    randint,
    split,
    uniform,
)
from .special_functions import random_gamma_grad, random_gamma_grad_p

__all__ = ["ball", "beta", "binomial", "cauchy", "chisquare", "choice", "dirichlet",
           "double_sided_maxwell", "exponential", "f", "gamma", "generalized_normal", "geometric",
           "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
           "multivariate_normal", "orthogonal", "pareto", "poisson", "rademacher",
           "random_gamma_p", "rayleigh", "t", "triangular", "truncated_normal", "wald",
           "weibull_min"]

_threefry = impl_rules[lax.threefry2x32_p]


# ------------------------------------------------------------------------------------------
# The samplers of random.py, on NumPy arrays of key words (one key per element)
# ------------------------------------------------------------------------------------------


def _np_split(k1: np.ndarray, k2: np.ndarray, num: int) -> list[tuple[np.ndarray, ...]]:
    """``split(key, num)`` of every key in (k1, k2): ``num`` new (k1, k2) pairs."""
    k1, k2, zero = np.asarray(k1), np.asarray(k2), np.zeros((), np.uint32)
    with np.errstate(over="ignore"):  # on 0-d keys NumPy warns of the intended wrap-around
        return [tuple(_threefry(k1, k2, zero, np.asarray(i, np.uint32))) for i in range(num)]


def _np_uniform(k1: np.ndarray, k2: np.ndarray, dtype: np.dtype, minval: float = 0.0,
                maxval: float = 1.0) -> np.ndarray:
    """``uniform(key, (), dtype, minval, maxval)`` of every key, rounded as random.py does."""
    bits1, bits2 = _threefry(k1, k2, np.zeros((), np.uint32), np.zeros((), np.uint32))
    if dtype.itemsize == 4:
        bits, uint = bits1 ^ bits2, np.uint32
    else:
        bits, uint = (bits1.astype(np.uint64) << np.uint64(32)) | bits2, np.uint64
    mantissa = bits >> uint(dtype.itemsize * 8 - np.finfo(dtype).nmant)
    floats = (mantissa | np.array(1.0, dtype).view(uint)).view(dtype) - dtype.type(1)
    low, high = dtype.type(minval), dtype.type(maxval)
    return np.maximum(low, floats * (high - low) + low)


def _np_normal(k1: np.ndarray, k2: np.ndarray, dtype: np.dtype) -> np.ndarray:
    low = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _np_uniform(k1, k2, dtype, low, 1.0)
    return dtype.type(np.sqrt(2)) * impl_rules[lax.erf_inv_p](u)


# ------------------------------------------------------------------------------------------
# random_gamma: one Marsaglia-Tsang sample per element, each from its own key
# ------------------------------------------------------------------------------------------

random_gamma_p = Primitive("random_gamma", kind=ELEMENTWISE)


def _marsaglia_tsang_v(k1, k2, d, c):
    """The accepted V = (1 + c x)^3 of each element: loop until U < 1 - 0.0331 x^4 or
    log U < x^2/2 + d (1 - V + log V), drawing x normal (again while 1 + c x <= 0) and U
    uniform, from three keys split off the element's key each round."""
    dtype = d.dtype
    one = dtype.type(1)
    x_sq, v, u = np.zeros_like(d), np.ones_like(d), np.full_like(d, 2)
    todo = np.ones(d.shape, bool)
    while todo.any():
        (k1[todo], k2[todo]), (xk1, xk2), (uk1, uk2) = _np_split(k1[todo], k2[todo], 3)
        x, vt, ct = np.zeros_like(xk1, dtype), np.full(xk1.shape, -one), c[todo]
        bad = np.ones(xk1.shape, bool)
        while bad.any():
            (xk1[bad], xk2[bad]), (nk1, nk2) = _np_split(xk1[bad], xk2[bad], 2)
            x[bad] = _np_normal(nk1, nk2, dtype)
            vt[bad] = one + x[bad] * ct[bad]
            bad = vt <= 0
        x_sq[todo], v[todo], u[todo] = x * x, vt * vt * vt, _np_uniform(uk1, uk2, dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            reject = (u >= one - dtype.type(0.0331) * (x_sq * x_sq)) & (
                np.log(u) >= x_sq * dtype.type(0.5) + d * ((one - v) + np.log(v)))
        todo = todo & reject
    return v


def random_gamma_impl(k1, k2, a, *, log_space):
    """Gamma(a) samples; for a < 1, a Gamma(a + 1) sample times U^(1/a) (in log space: plus
    log(U) / a, which keeps tiny samples representable)."""
    k1, k2, a = np.broadcast_arrays(k1, k2, a)
    shape, dtype = a.shape, a.dtype
    k1, k2, a = k1.ravel().copy(), k2.ravel().copy(), a.ravel()
    one, third = dtype.type(1), dtype.type(1 / 3)
    boost = a >= one
    alpha = np.where(boost, a, a + one)
    d = alpha - third
    with np.errstate(invalid="ignore"):
        c = third / np.sqrt(d)
    (k1, k2), (sk1, sk2) = _np_split(k1, k2, 2)
    v = _marsaglia_tsang_v(k1, k2, d, c)
    u = _np_uniform(sk1, sk2, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        if log_space:
            log_u = np.log1p(-u)
            log_boost = np.where(boost | (log_u == 0), dtype.type(0), log_u * (one / a))
            out = (np.log(d) + np.log(v)) + log_boost
        else:
            out = (d * v) * np.where(boost, one, np.power(one - u, one / a))
    return out.astype(dtype).reshape(shape)
impl_rules[random_gamma_p] = random_gamma_impl


def random_gamma_vjp(ct, k1, k2, a, *, out, log_space):
    """The implicit reparameterization: d sample / d a = -(dF/da) / (dF/dx) for the gamma
    CDF F; in log space divided by the sample."""
    sample = lax.exp(out) if log_space else out
    if log_space:
        tiny = lax.full_like(sample, np.finfo(get_aval(sample).dtype).tiny)
        sample = lax.select_n(lax.eq(sample, lax.zeros_like(sample)), sample, tiny)
    slope = random_gamma_grad(a, sample)
    if log_space:
        slope = lax.div(slope, sample)
    return [None, None, lax.mul(ct, slope)]
vjp_rules[random_gamma_p] = random_gamma_vjp


def random_gamma_jvp(primals, tangents, *, log_space):
    out = random_gamma_p.bind(*primals, log_space=log_space)
    a_dot = tangents[2]
    if a_dot is None:
        return out, lax.zeros_like(out)
    return out, random_gamma_vjp(a_dot, *primals, out=out, log_space=log_space)[2]
jvp_rules[random_gamma_p] = random_gamma_jvp


# ------------------------------------------------------------------------------------------
# random_poisson: Knuth's method below rate 10, Hormann's transformed rejection above
# ------------------------------------------------------------------------------------------

random_poisson_p = Primitive("random_poisson")


def _uniform_of_counts(key: tuple, count: np.ndarray) -> np.ndarray:
    """``uniform(key, count.shape, float32)``: element i hashes the counter ``count[i]``."""
    bits1, bits2 = _threefry(key[0], key[1], np.zeros_like(count), count)
    floats = (((bits1 ^ bits2) >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32)
    return floats - np.float32(1)


def _poisson_knuth(key: tuple, lam: np.ndarray, max_iters: int) -> np.ndarray:
    """Counts uniforms until their product falls below exp(-lam), all elements in step."""
    k, log_prod, steps = np.zeros(lam.shape, np.int64), np.zeros_like(lam), 0
    count = np.arange(lam.size, dtype=np.uint32).reshape(lam.shape)
    while (log_prod > -lam).any() and steps < max_iters:
        key, subkey = _np_split(*key, 2)
        k = np.where(log_prod > -lam, k + 1, k)
        with np.errstate(divide="ignore"):
            log_prod = log_prod + np.log(_uniform_of_counts(subkey, count))
        steps += 1
    return k - 1


def _lgamma(x: np.ndarray) -> np.ndarray:
    """log|Gamma(x)| of float32 values, infinite at the poles (0, -1, -2, ...) as XLA's."""
    pole = (x <= 0) & (x == np.floor(x))
    safe = np.where(pole, 1.0, x).astype(np.float64)
    return np.where(pole, np.inf, np.frompyfunc(math.lgamma, 1, 1)(safe)).astype(x.dtype)


def _poisson_rejection(key: tuple, lam: np.ndarray, max_iters: int) -> np.ndarray:
    """Hormann's PTRS: a candidate from a hat function, accepted by a squeeze or by the log
    density; every element draws each round, and a later acceptance replaces an earlier
    one, as in JAX, so the round count of the whole array matters."""
    f32 = np.float32
    log_lam, b = np.log(lam), f32(0.931) + f32(2.53) * np.sqrt(lam)
    a = f32(-0.059) + f32(0.02483) * b
    inv_alpha, v_r = f32(1.1239) + f32(1.1328) / (b - f32(3.4)), f32(0.9277) - f32(3.6224) / (
        b - f32(2))
    k_out, accepted, steps = np.full_like(lam, -1), np.zeros(lam.shape, bool), 0
    count = np.arange(lam.size, dtype=np.uint32).reshape(lam.shape)
    while (~accepted).any() and steps < max_iters:
        key, key_u, key_v = _np_split(*key, 3)
        u = _uniform_of_counts(key_u, count) - f32(0.5)
        v = _uniform_of_counts(key_v, count)
        u_shifted = f32(0.5) - np.abs(u)
        k = np.floor((f32(2) * a / u_shifted + b) * u + lam + f32(0.43))
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
            t = -lam + k * log_lam - _lgamma(k + f32(1))
        accept = ((u_shifted >= f32(0.07)) & (v <= v_r)) | (
            ~((k < 0) | ((u_shifted < f32(0.013)) & (v > u_shifted))) & (s <= t))
        k_out, accepted, steps = np.where(accept, k, k_out), accepted | accept, steps + 1
    return k_out


def random_poisson_impl(key_data, lam, *, dtype):
    """Poisson samples for each key of ``key_data`` (shape ``K + (2,)``) over its block of
    ``lam`` (shape ``K + S``): each key runs its own loops, as each example does under
    ``vmap`` in JAX."""
    batch = key_data.shape[:-1]
    out = np.empty(lam.shape, dtype)
    max_iters = np.iinfo(dtype).max
    for index in np.ndindex(*batch):
        key, rate = tuple(key_data[index]), lam[index]
        knuth = np.isnan(rate) | (rate < 10)
        small = _poisson_knuth(key, np.where(knuth, rate, np.float32(0)), max_iters)
        large = _poisson_rejection(key, np.where(knuth, np.float32(1e5), rate), max_iters)
        with np.errstate(invalid="ignore"):
            result = np.where(knuth, small.astype(dtype), large.astype(dtype))
        out[index] = np.where(rate == 0, dtype.type(0), result)
    return out
impl_rules[random_poisson_p] = random_poisson_impl
vjp_rules[random_poisson_p] = _zero_vjp
jvp_rules[random_poisson_p] = _zero_jvp(random_poisson_p)

# This module's primitives: each runs its NumPy loops on the host under every backend.
RANDOM_LOOPS = (random_gamma_p, random_gamma_grad_p, random_poisson_p)


# ------------------------------------------------------------------------------------------
# Argument checks shared by the samplers
# ------------------------------------------------------------------------------------------


def _dtype(dtype: Any, name: str, kind: str = "float") -> np.dtype:
    """The canonical result dtype; ValueError for the wrong kind, as JAX raises."""
    if dtype is None:
        return dtypes.default_float_dtype() if kind == "float" else dtypes.default_int_dtype()
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, name)
    if (dtypes.is_float(dtype) if kind == "float" else dtypes.is_int(dtype)):
        return dtype
    raise ValueError(f"dtype argument to `{name}` must be a {kind} dtype, got {dtype}")


def _result_shape(name: str, shape: Shape | None, *params: Any) -> tuple[int, ...]:
    """``shape``, or the parameters' broadcast shape when it is None. A given ``shape`` must
    be what it broadcasts to with the parameters (JAX's ``_check_shape``)."""
    param_shapes = [get_aval(as_value(x)).shape for x in params]
    if shape is None:
        return broadcast_shapes(*param_shapes) if param_shapes else ()
    shape = _shape(shape, name)
    if param_shapes and broadcast_shapes(shape, *param_shapes) != shape:
        raise ValueError(
            f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
            f"the result of broadcasting the shapes must equal the shape argument, but got "
            f"result {broadcast_shapes(shape, *param_shapes)} for shape argument {shape}.")
    return shape


def _param(x: Any, dtype: np.dtype, shape: tuple[int, ...] | None = None) -> Any:
    x = convert(as_value(x), dtype)
    return x if shape is None else jnp.broadcast_to(x, shape)


# ------------------------------------------------------------------------------------------
# Transforms of one uniform or normal sample
# ------------------------------------------------------------------------------------------


def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Exponential(1) samples, -log(1 - u).

    Example:
        >>> import stage1_autodiff as jax
        >>> bool((jax.random.exponential(jax.random.key(0), (100,)) >= 0).all())
        True
    """
    u = uniform(key, shape, _dtype(dtype, "exponential"))
    return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Laplace(0, 1) samples: sign(u) log(1 - |u|) for u uniform in (-1, 1)."""
    dtype = _dtype(dtype, "laplace")
    u = uniform(key, shape, dtype, -1.0 + np.finfo(dtype).epsneg, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Logistic samples, the log-odds log(u / (1 - u)) of a uniform u."""
    dtype = _dtype(dtype, "logistic")
    x = uniform(key, shape, dtype, np.finfo(dtype).tiny, 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def cauchy(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard Cauchy samples, tan(pi (u - 1/2))."""
    dtype = _dtype(dtype, "cauchy")
    u = uniform(key, shape, dtype, np.finfo(dtype).eps, 1.0)
    return lax.tan(lax.mul(lax.full_like(u, np.pi), lax.sub(u, lax.full_like(u, 0.5))))


def pareto(key: Any, b: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Pareto(b) samples on [1, inf): exp(e / b) for e exponential."""
    dtype = _dtype(dtype, "pareto")
    shape = _result_shape("pareto", shape, b)
    return lax.exp(jnp.divide(exponential(key, shape, dtype), _param(b, dtype)))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Shape = (),
                dtype: Any = None) -> Any:
    """Weibull samples by the inverse CDF: scale (-log(1 - u))^(1 / concentration)."""
    u = uniform(key, shape, _dtype(dtype, "weibull_min"))
    return jnp.power(-jnp.log1p(-u), 1.0 / as_value(concentration)) * scale


def rayleigh(key: Any, scale: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Rayleigh samples, scale sqrt(-2 log u)."""
    dtype = _dtype(dtype, "rayleigh")
    shape = _result_shape("rayleigh", shape, scale)
    log_u = lax.log(uniform(key, shape, dtype))
    return lax.mul(_param(scale, dtype, shape), lax.sqrt(lax.mul(log_u, lax.full_like(log_u, -2))))


def lognormal(key: Any, sigma: Any = 1.0, shape: Shape | None = None, dtype: Any = None) -> Any:
    """exp(sigma z) for z standard normal."""
    dtype = _dtype(dtype, "lognormal")
    shape = _result_shape("lognormal", shape, sigma)
    return lax.exp(jnp.multiply(normal(key, shape, dtype), _param(sigma, dtype)))


def geometric(key: Any, p: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """The number of Bernoulli(p) trials up to the first success: 1 + floor(log u / log(1-p))."""
    dtype = _dtype(dtype, "geometric", "int")
    p = as_value(p)
    if not dtypes.is_float(get_aval(p).dtype):
        p = convert(p, dtypes.default_float_dtype())
    shape = _result_shape("geometric", shape, p)
    u = uniform(key, shape, get_aval(p).dtype)
    u = jnp.where(u == 0, 1, u)
    g = lax.floor(jnp.divide(lax.log(u), jnp.broadcast_to(lax.log1p(lax.neg(p)), shape))) + 1
    return convert(g, dtype)


def rademacher(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """-1 or +1 with equal probability.

    Example:
        >>> import stage1_autodiff as jax
        >>> sorted(set(jax.random.rademacher(jax.random.key(0), (50,)).tolist()))
        [-1, 1]
    """
    dtype = _dtype(dtype, "rademacher", "int") if dtype is None else (
        dtypes.check_and_canonicalize_user_dtype(dtype, "rademacher"))  # any dtype, as in JAX
    b = convert(bernoulli(key, 0.5, shape), dtype)
    return convert(2 * b - 1, dtype)


def maxwell(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """One-sided Maxwell samples: the length of a standard normal 3-vector."""
    z = normal(key, _shape(shape, "maxwell") + (3,), _dtype(dtype, "maxwell"))
    return lax.sqrt(jnp.sum(z * z, axis=-1))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Shape = (),
                         dtype: Any = None) -> Any:
    """Maxwell samples with a random sign, times ``scale``, plus ``loc``. As in JAX, the
    result shape is ``shape`` (or the parameters' shape when empty) then the parameters'."""
    dtype = _dtype(dtype, "double_sided_maxwell")
    param_shape = broadcast_shapes(*(get_aval(as_value(x)).shape for x in (loc, scale)))
    shape = (_shape(shape, "double_sided_maxwell") or param_shape) + param_shape
    maxwell_key, sign_key = split(key)
    sign = rademacher(sign_key, shape, dtype)
    return sign * maxwell(maxwell_key, shape, dtype) * scale + loc


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None = None,
                     dtype: Any = None) -> Any:
    """Standard normal samples in (lower, upper), by the inverse CDF over a uniform between
    the bounds' CDF values."""
    from .lax import erf, nextafter
    dtype = _dtype(dtype, "truncated_normal")
    shape = _result_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower, upper = _param(lower, dtype), _param(upper, dtype)
    a, b = erf(jnp.divide(lower, sqrt2)), erf(jnp.divide(upper, sqrt2))
    out = jnp.multiply(sqrt2, lax.erf_inv(uniform(key, shape, dtype, a, b)))
    lo = nextafter(lax.stop_gradient(lower), lax.full_like(lower, np.inf))
    hi = nextafter(lax.stop_gradient(upper), lax.full_like(upper, -np.inf))
    return jnp.clip(out, lo, hi)


def _check_safe_casts(name: str, dtype: np.dtype, *params: Any) -> None:
    """Each parameter must convert to ``dtype`` without loss by the promotion rules (a
    float64 array to float32 would not), as JAX's ``_check_all_safe_to_cast``."""
    for x in params:
        aval = get_aval(as_value(x))
        if dtypes.promote_types((aval.dtype, aval.weak_type), (dtype, False))[0] != dtype:
            raise ValueError(f"In arguments to {name}, cannot safely cast argument of type "
                             f"{aval.dtype} to {dtype}")


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Shape | None = None,
               dtype: Any = None) -> Any:
    """Triangular samples on [left, right] peaking at ``mode``, by the inverse CDF: left of
    the peak for u below its CDF value (mode - left) / (right - left), right of it above.

    Example:
        >>> import stage1_autodiff as jax
        >>> x = jax.random.triangular(jax.random.key(0), 0.0, 1.0, 4.0, (100,))
        >>> bool((x >= 0).all() and (x <= 4).all())
        True
    """
    dtype = _dtype(dtype, "triangular")
    shape = _result_shape("triangular", shape, left, mode, right)
    _check_safe_casts("triangular", dtype, left, mode, right)
    left, mode, right = (_param(x, dtype, shape) for x in (left, mode, right))
    width = right - left
    peak_cdf = (mode - left) / width
    u = uniform(key, shape, dtype)
    rising = left + lax.sqrt(u * width * (mode - left))
    falling = right - lax.sqrt((1 - u) * width * (right - mode))
    return lax.select_n(u < peak_cdf, falling, rising)


def wald(key: Any, mean: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) samples with unit scale, by Michael, Schucany and Haas: a
    root x of the quadratic that a squared normal sets, kept with probability
    mean / (mean + x), else its mirror mean^2 / x.

    Example:
        >>> import stage1_autodiff as jax
        >>> bool((jax.random.wald(jax.random.key(0), 2.0, (100,)) > 0).all())
        True
    """
    dtype = _dtype(dtype, "wald")
    shape = _result_shape("wald", shape, mean)
    _check_safe_casts("wald", dtype, mean)
    normal_key, uniform_key = split(key)
    mean = _param(mean, dtype, shape)
    y = lax.integer_pow(normal(normal_key, shape, dtype), 2)
    z = uniform(uniform_key, shape, dtype)
    mean_sq = lax.integer_pow(mean, 2)
    root = lax.sqrt(4 * mean * y + mean_sq * lax.integer_pow(y, 2))
    x = mean + mean_sq * y / 2 - mean / 2 * root
    return lax.select_n(z <= mean / (mean + x), mean_sq / x, x)


def generalized_normal(key: Any, p: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Samples of density proportional to exp(-|x|^p): G^(1/p) for G ~ Gamma(1/p), with a
    random sign. ``p = 2`` is a normal of variance 1/2, ``p = 1`` a Laplace.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.generalized_normal(jax.random.key(0), 1.5, (2, 3)).shape
        (2, 3)
    """
    shape = _shape(shape, "generalized_normal")
    dtype = dtypes.check_and_canonicalize_user_dtype(
        float if dtype is None else dtype, "generalized_normal")
    gamma_key, sign_key = split(key)
    g = gamma(gamma_key, 1 / p, shape, dtype)
    return rademacher(sign_key, shape, dtype) * g ** (1 / p)


def ball(key: Any, d: int, p: Any = 2, shape: Shape = (), dtype: Any = None) -> Any:
    """Points uniform in the unit Lp ball of dimension ``d``, shape ``shape + (d,)``: a
    generalized normal vector over the p-th root of its p-norm^p plus an exponential
    (Barthe, Guedon, Mendelson and Naor).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> x = jax.random.ball(jax.random.key(0), 3, shape=(50,))
        >>> x.shape, bool((jnp.linalg.norm(x, axis=-1) <= 1).all())
        ((50, 3), True)
    """
    shape = _shape(shape, "ball")
    dtype = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype, "ball")
    d = _concrete_index(d, "The error occurred in jax.random.ball()")
    normal_key, exponential_key = split(key)
    g = generalized_normal(normal_key, p, shape + (d,), dtype)
    e = exponential(exponential_key, shape, dtype)
    radius = (jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** (1 / p)
    return g / radius[..., None]


def _concrete_index(d: Any, context: str) -> int:
    if isinstance(d, Tracer):
        raise TypeError(f"ball needs a concrete dimension `d`, got a traced value. {context}")
    return operator.index(d)


# ------------------------------------------------------------------------------------------
# The gamma family
# ------------------------------------------------------------------------------------------


def _gamma(key: Any, a: Any, shape: Shape | None, dtype: Any, name: str,
           log_space: bool) -> Any:
    dtype = _dtype(dtype, name)
    shape = _result_shape(name, shape, a)
    a = _param(a, dtype, shape)
    _single_key(key, name)
    keys, _ = _key_data_and_kind(split(key, shape), name)
    return random_gamma_p.bind(keys[..., 0], keys[..., 1], a, log_space=log_space)


def gamma(key: Any, a: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) samples; differentiable in ``a`` (implicit reparameterization).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.gamma(jax.random.key(0), 3.0, (2, 2)).shape
        (2, 2)
    """
    return _gamma(key, a, shape, dtype, "gamma", False)


def loggamma(key: Any, a: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """log of Gamma(a, 1) samples, computed in log space (exact for tiny ``a``)."""
    return _gamma(key, a, shape, dtype, "loggamma", True)


def beta(key: Any, a: Any, b: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Beta(a, b) samples, G_a / (G_a + G_b) of two gamma samples, from their logs."""
    dtype = _dtype(dtype, "beta")
    shape = _result_shape("beta", shape, a, b)
    key_a, key_b = split(key)
    log_a = loggamma(key_a, _param(a, dtype, shape), shape, dtype)
    log_b = loggamma(key_b, _param(b, dtype, shape), shape, dtype)
    log_max = lax.max(log_a, log_b)
    scaled_a, scaled_b = lax.exp(lax.sub(log_a, log_max)), lax.exp(lax.sub(log_b, log_max))
    return lax.div(scaled_a, lax.add(scaled_a, scaled_b))


def dirichlet(key: Any, alpha: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Dirichlet(alpha) samples over alpha's last axis: softmax of log-gamma samples."""
    from .autodiff import stop_gradient
    dtype = _dtype(dtype, "dirichlet")
    alpha = as_value(alpha)
    alpha_shape = get_aval(alpha).shape
    if not alpha_shape:
        raise ValueError("dirichlet requires alpha.ndim >= 1, got alpha.ndim == 0")
    batch = _result_shape("dirichlet", shape, jnp.zeros(alpha_shape[:-1]))
    log_gamma = loggamma(key, convert(alpha, dtype), batch + alpha_shape[-1:], dtype)
    # a softmax, written out (as JAX's random module does): nn builds on random
    unnormalized = jnp.exp(log_gamma - stop_gradient(jnp.max(log_gamma, -1, keepdims=True)))
    return unnormalized / jnp.sum(unnormalized, -1, keepdims=True)


def t(key: Any, df: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Student's t samples: z sqrt((df/2) / G) for z normal and G ~ Gamma(df/2)."""
    dtype = _dtype(dtype, "t")
    shape = _result_shape("t", shape, df)
    key_n, key_g = split(key)
    n = normal(key_n, shape, dtype)
    half_df = jnp.divide(_param(df, dtype), 2)
    return n * lax.sqrt(jnp.divide(half_df, gamma(key_g, half_df, shape, dtype)))


def chisquare(key: Any, df: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Chi-squared(df) samples: twice a Gamma(df/2) sample."""
    dtype = _dtype(dtype, "chisquare")
    shape = _result_shape("chisquare", shape, df)
    log_g = loggamma(key, jnp.divide(_param(df, dtype), 2), shape, dtype)
    return jnp.multiply(lax.exp(log_g), 2)


def f(key: Any, dfnum: Any, dfden: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """F(dfnum, dfden) samples, a ratio of two scaled chi-squared samples."""
    dtype = _dtype(dtype, "f")
    shape = _result_shape("f", shape, dfnum, dfden)
    dfnum, dfden = _param(dfnum, dtype), _param(dfden, dtype)
    key_den, key_num = split(key)
    num = lax.div(chisquare(key_num, dfnum, shape, dtype), jnp.broadcast_to(dfnum, shape))
    den = lax.div(chisquare(key_den, dfden, shape, dtype), jnp.broadcast_to(dfden, shape))
    return lax.div(num, den)


def poisson(key: Any, lam: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Poisson(lam) counts (Knuth below rate 10, transformed rejection above), computed in
    float32 as JAX does.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.poisson(jax.random.key(0), 3.0, (4,)).dtype
        dtype('int32')
    """
    dtype = _dtype(dtype, "poisson", "int")
    lam = as_value(lam)
    shape = get_aval(lam).shape if shape is None else _shape(shape, "poisson")
    lam = convert(jnp.broadcast_to(lam, shape), dtypes.float32)
    k1, k2, _ = _single_key(key, "poisson")
    return random_poisson_p.bind(jnp.stack([k1, k2]), lam, dtype=dtype)


# ------------------------------------------------------------------------------------------
# Choices and linear algebra
# ------------------------------------------------------------------------------------------


def choice(key: Any, a: Any, shape: Shape = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """Samples from ``a`` (or ``arange(a)`` for an int) along ``axis``: uniformly by
    ``randint`` or a permutation, by ``p`` with a CDF search (with replacement) or the
    Gumbel top-k trick (without), whose Gumbel noise ``mode`` sets (see ``gumbel``; as in
    JAX, the other ways ignore it).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.choice(jax.random.key(0), 10, (3,), replace=False).shape
        (3,)
    """
    _single_key(key, "choice")
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    arr = as_value(a)
    aval = get_aval(arr)
    if aval.ndim == 0:
        n_inputs = _concrete_int(a, "The error occurred in jax.random.choice()")
    else:
        axis = canonicalize_axis(axis, aval.ndim, "choice")
        n_inputs = aval.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(tuple(shape), aval.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    ind = _choice_indices(key, arr, n_inputs, tuple(shape), replace, p, mode)
    if aval.ndim == 0:
        return jnp.reshape(ind, tuple(shape))
    out_shape = aval.shape[:axis] + tuple(shape) + aval.shape[axis + 1:]
    return jnp.reshape(jnp.take(arr, ind, axis=axis), out_shape)


def _concrete_int(a: Any, context: str) -> int:
    try:
        return int(np.asarray(a))
    except Exception as error:  # a tracer has no value yet
        raise ConcretizationTypeError(
            f"choice needs a concrete population size `a`, got a traced value. Pass a Python "
            f"int, or an array to choose from. {context}") from error


def _choice_indices(key, arr, n_inputs, shape, replace, p, mode):
    if p is None:
        if replace:
            return randint(key, shape, 0, n_inputs)
        population = n_inputs if get_aval(arr).ndim == 0 else jnp.arange(n_inputs)
        return permutation(key, population)[:math.prod(shape)]
    from .lax import top_k
    p = as_value(p)
    if not dtypes.is_float(get_aval(p).dtype):
        p = convert(p, dtypes.default_float_dtype())
    if get_aval(p).shape != (n_inputs,):
        raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                         f"p has shape {get_aval(p).shape} and a.shape[axis] is {n_inputs}.")
    if replace:
        p_cuml = jnp.cumsum(p)
        r = p_cuml[-1] * (1 - uniform(key, shape, get_aval(p_cuml).dtype))
        return convert(jnp.searchsorted(p_cuml, r), dtypes.default_int_dtype())
    g = gumbel(key, (n_inputs,), get_aval(p).dtype, mode) + jnp.log(p)
    return convert(top_k(g, math.prod(shape))[1], dtypes.default_int_dtype())


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Shape | None = None,
                        dtype: Any = None, method: str = "cholesky") -> Any:
    """mean + factor @ z for z standard normal and factor a square root of ``cov``
    (Cholesky, or from the SVD or eigendecomposition for singular ``cov``)."""
    from .numpy import linalg
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = promote_inexact(mean, cov)
    dtype = get_aval(mean).dtype if dtype is None else _dtype(dtype, "multivariate_normal")
    mean_shape, cov_shape = get_aval(mean).shape, get_aval(cov).shape
    if len(mean_shape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{len(mean_shape)}")
    if len(cov_shape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{len(cov_shape)}")
    n = mean_shape[-1]
    if cov_shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov_shape}.")
    batch = broadcast_shapes(mean_shape[:-1], cov_shape[:-2])
    shape = batch if shape is None else _result_shape("normal", shape, jnp.zeros(batch))
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = linalg.cholesky(cov)
    z = normal(key, shape + (n,), dtype)
    return mean + jnp.matmul(factor, z[..., None])[..., 0]  # factor @ z for each batch entry


def orthogonal(key: Any, n: int, shape: Shape = (), dtype: Any = None, m: int | None = None
               ) -> Any:
    """A uniformly random orthogonal n x m matrix (semi-orthogonal when n != m): the Q of a
    normal matrix's QR, its columns' signs fixed by R's diagonal."""
    from .numpy import linalg
    m = n if m is None else m
    dtype = _dtype(dtype, "orthogonal")
    z = normal(key, _shape(shape, "orthogonal") + (max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


# ------------------------------------------------------------------------------------------
# Binomial and multinomial: two rejection loops over the whole array, run eagerly
# ------------------------------------------------------------------------------------------

# A binomial sample takes one of two rejection loops, chosen per element (as TensorFlow and
# JAX do): for a mean ``n q`` up to 10 (q = min(p, 1 - p)), *inversion*, which counts
# geometric jumps until their sum passes ``n``; above it, Kachitvichyanukul and Schmeiser's
# BTRS (transformed rejection with squeeze), which proposes from a hat function and accepts
# by a squeeze or a bound on the log density. Both loops run over the whole array under one
# key, every element drawing each round, as long as any element is still going; in BTRS a
# later acceptance replaces an earlier one, so the number of rounds of the whole array
# matters (JAX's ``while_loop`` does the same). ``multinomial`` draws one binomial per
# outcome, each from what the previous outcomes left.
#
# NB: JAX writes the loops with ``lax.while_loop`` (jax/_src/random/core.py: ``_btrs``,
# ``_binomial_inversion``), which jit and vmap can trace. Stage 1 has no loop that can be
# traced, so ``extension.while_loop_eager_or_traced`` runs the rounds eagerly, reading each
# round's condition; under ``jit`` or ``vmap`` it hands the loop to stage 2's
# ``lax.while_loop`` (registered through ``extension.set_while_loop``), and without stage 2
# it stops with an error.
_BINOMIAL = "jax.random.binomial (and multinomial, which draws binomials)"


# Stirling's series remainder log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2],
# tabulated for k = 0..9 (the values TensorFlow's and JAX's BTRS use).
_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                           0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                           0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                           0.00833056343336287])


def _stirling_approx_tail(k: Any) -> Any:
    """The table up to k = 9, else the series 1/12 - 1/360 ... in 1/(k+1). NB: as JAX's,
    the series is taken at k clamped to 9, so every k above 9 gets the value at 9."""
    dtype = get_aval(k).dtype
    use_table = k <= 9
    k = lax.clamp(lax.full_like(k, 0.0), k, lax.full_like(k, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    table = jnp.asarray(_STIRLING_TAIL.astype(dtype))
    return jnp.where(use_table, table[convert(lax.floor(k), dtypes.int32)], approx)


def _binomial_inversion(key: Any, count: Any, prob: Any, dtype: np.dtype) -> Any:
    """The number of geometric(prob) jumps, ceil(log u / log(1 - prob)) each, whose sum
    stays at or below ``count``: one jump per round, a fresh key split off each round."""
    shape = get_aval(prob).shape
    log1minusprob = jnp.log1p(-prob)

    def cond_fun(carry):
        _, geom_sum, _ = carry
        return jnp.any(geom_sum <= count)

    def body_fun(carry):
        num_geom, geom_sum, key = carry
        subkey, key = split(key)
        num_geom = jnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(subkey, shape, get_aval(prob).dtype)
        geom_sum = geom_sum + jnp.ceil(jnp.log(u) / log1minusprob)
        return num_geom, geom_sum, key

    zeros = jnp.zeros_like(prob)
    num_geom, _, _ = while_loop_eager_or_traced(cond_fun, body_fun, (zeros, zeros, key),
                                                name=_BINOMIAL)
    return convert(num_geom - 1, dtype)


def _btrs(key: Any, count: Any, prob: Any, dtype: np.dtype) -> Any:
    """Transformed rejection: a candidate k from the hat function of a uniform u, kept by a
    squeeze (a box where the hat is under the density) or when a uniform v, scaled by the
    hat, is under the log density ratio ``_btrs_bound``."""
    shape = get_aval(prob).shape
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * stddev

    def cond_fun(carry):
        _, accepted, _ = carry
        return jnp.any(~accepted)

    def body_fun(carry):
        k_out, accepted, key = carry
        key, key_u, key_v = split(key, 3)
        u = uniform(key_u, shape, get_aval(prob).dtype) - 0.5
        v = uniform(key_v, shape, get_aval(prob).dtype)
        us = 0.5 - jnp.abs(u)
        k = jnp.floor((2 * a / us + b) * u + c)
        squeezed = (us >= 0.07) & (v <= v_r)
        reject = (k < 0) | (k > count)
        log_v = jnp.log(v * alpha / (a / (us * us) + b))
        accept = squeezed | (~reject & (log_v <= _btrs_bound(k, count, prob)))
        return jnp.where(accept, k, k_out), accepted | accept, key

    start = (jnp.full_like(prob, -1), jnp.zeros(shape, bool), key)
    k_out, _, _ = while_loop_eager_or_traced(cond_fun, body_fun, start, name=_BINOMIAL)
    return convert(k_out, dtype)


def _btrs_bound(k: Any, count: Any, prob: Any) -> Any:
    """log(f(k) / f(m)) of the binomial density f, m its mode, by Stirling's formula."""
    r = prob / (1 - prob)
    m = jnp.floor((count + 1) * prob)
    return ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
            + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
            + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
            - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))


def binomial(key: Any, n: Any, p: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Binomial(n, p) counts, as floats of ``dtype``, computed in ``p``'s float dtype.

    Each element samples q = min(p, 1 - p) (by inversion for n q <= 10, else BTRS) and
    mirrors to n - k for p >= 1/2. As in JAX (and NumPy), a float n is floored; NaN or
    negative n, and NaN or negative p, give NaN; an infinite n gives infinity.

    NB: the loops run eagerly (stage 1 has no traceable loop): not under ``jit`` or
    ``vmap``, where JAX traces a ``while_loop``. Its gradients are zeros, as JAX's.

    Example:
        >>> import stage1_autodiff as jax
        >>> x = jax.random.binomial(jax.random.key(0), 10, 0.5, (1000,))
        >>> bool(((x >= 0) & (x <= 10)).all()), 4.5 < float(x.mean()) < 5.5
        (True, True)
    """
    _single_key(key, "binomial")
    dtype = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype,
                                                     "binomial")
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `binomial` must be a float dtype, got {dtype}")
    n, p = as_value(n), as_value(p)
    param_shapes = (get_aval(n).shape, get_aval(p).shape)
    if shape is None:
        shape = broadcast_shapes(*param_shapes)
    else:
        shape = _shape(shape, "binomial")
        _check_shape("binomial", shape, *param_shapes)
    (p,) = promote_inexact(p)
    count = jnp.broadcast_to(convert(n, get_aval(p).dtype), shape)
    return _binomial(key, count, jnp.broadcast_to(p, shape), dtype)


def _binomial(key: Any, count: Any, prob: Any, dtype: np.dtype) -> Any:
    p_lt_half = prob < 0.5
    q = jnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan, q_l_0 = jnp.isnan(q), q < 0.0
    q = jnp.where(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    # Every element runs both loops; each keeps its own algorithm's sample. The other loop
    # gets harmless values (no count for inversion; n = 10^4, p = 1/2 for BTRS).
    inverted = _binomial_inversion(key, jnp.where(use_inversion, count, 0.0), q, dtype)
    transformed = _btrs(key, jnp.where(use_inversion, 1e4, count),
                        jnp.where(use_inversion, 0.5, q), dtype)
    samples = jnp.where(use_inversion, inverted, transformed)
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = jnp.where(invalid, jnp.full_like(samples, np.nan), samples)
    samples = jnp.where(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    unmirrored = p_lt_half | count_nan_or_neg | q_is_nan | count_inf
    return jnp.where(unmirrored, samples, convert(count, dtype) - samples)


def multinomial(key: Any, n: Any, p: Any, *, shape: Shape | None = None, dtype: Any = None,
                unroll: int | bool = 1) -> Any:
    """Counts of each outcome in ``n`` trials with probabilities ``p`` (outcomes along the
    last axis): outcome i gets a binomial of what the earlier outcomes left, with
    probability p_i over the probability left. ``shape`` is the whole result's shape (p's
    by default); ``unroll`` is accepted for JAX's signature (the outcomes are a Python loop
    here, where JAX scans).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> counts = jax.random.multinomial(jax.random.key(0), 10, jnp.array([0.2, 0.3, 0.5]))
        >>> float(counts.sum())
        10.0
    """
    _single_key(key, "multinomial")
    n, p = promote_inexact(n, p)
    shape = get_aval(p).shape if shape is None else _shape(shape, "multinomial")
    remainder = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    left = cumsum(p, 0, reverse=True)  # the probability of outcome i or a later one
    ratios = p / jnp.where(left == 0, 1, left)
    counts = []
    for ratio, outcome_key in zip(ratios, split(key, shape[-1])):
        count = binomial(outcome_key, remainder, jnp.clip(ratio, 0, 1),
                         dtype=get_aval(remainder).dtype)
        remainder = remainder - count
        counts.append(count)
    out_dtype = dtypes.canonicalize_dtype(float if dtype is None else dtype)
    return convert(jnp.stack(counts, axis=-1), out_dtype)

