"""Gradients at special points (zeros of both signs, ties, infinities, NaN, tiny and huge
numbers) against JAX's eager ``grad``: where a derivative is taken at a kink, a tie or the
edge of a domain, the chain rule through a composition is easily a NaN or a wrong number.

Each case was once checked at every point in ``POINTS``. Where JAX's own value is not the
derivative (its float32 formulas cancel or overflow), ``WHERE_JAXS_IS_INACCURATE`` gives the
true one, which ours must match instead (the course's "Differences from JAX" lists them).
Where a case once gave a wrong value here, the comment says which, and ``jit`` is checked
too."""

from __future__ import annotations

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

POINTS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-30, 1e30],
                  np.float32)


def _nn(j):
    return j.nn


def _sp(j):
    return j.scipy.special


CASES = {
    "abs": lambda j, x: j.numpy.abs(x),
    "sqrt": lambda j, x: j.numpy.sqrt(x),
    "maximum_with_itself": lambda j, x: j.numpy.maximum(x, x),
    "maximum_with_0": lambda j, x: j.numpy.maximum(x, 0.0),
    "clip": lambda j, x: j.numpy.clip(x, -1.0, 1.0),
    "where_sqrt": lambda j, x: j.numpy.where(x > 0, j.numpy.sqrt(x), 0.0),
    "power_of_x_to_2": lambda j, x: j.numpy.power(x, 2.0),
    "power_of_x_to_half": lambda j, x: j.numpy.power(x, 0.5),
    "power_of_2_to_x": lambda j, x: j.numpy.power(2.0, x),
    # d/dy 0**y was 0 at every y: now NaN where 0**y is inf (y < 0) or NaN, as JAX's.
    "power_of_0_to_x": lambda j, x: j.numpy.power(0.0, x),
    "x_cubed": lambda j, x: x ** 3,
    # forward mode gave NaN at +-inf: sign's zero tangent was an array, and 0 * inf is NaN
    # (a zero-derivative primitive's tangent is None now, as JAX's is a symbolic zero)
    "x_times_sign": lambda j, x: x * j.numpy.sign(x),
    "x_times_floor": lambda j, x: x * j.numpy.floor(x),
    "arctan2": lambda j, x: j.numpy.arctan2(x, 0.0),
    # logaddexp(x, 0) at x = 0 was 0 (the tie's 1/2 from the maximum, minus 1/2 through
    # abs): 1/2 now, as JAX's.
    "logaddexp_with_0": lambda j, x: j.numpy.logaddexp(x, 0.0),
    "logaddexp_with_itself": lambda j, x: j.numpy.logaddexp(x, x),
    "logaddexp2_with_0": lambda j, x: j.numpy.logaddexp2(x, 0.0),
    "log1p": lambda j, x: j.numpy.log1p(x),
    "arccosh": lambda j, x: j.numpy.arccosh(x),
    "arctanh": lambda j, x: j.numpy.arctanh(x),
    "cbrt": lambda j, x: j.numpy.cbrt(x),
    # sinc's slope at 1e-30 was 0 and its second derivative at 0 was 0 (-pi**2/3): near 0 it
    # is now its Taylor series.
    "sinc": lambda j, x: j.numpy.sinc(x),
    "hypot_with_0": lambda j, x: j.numpy.hypot(x, 0.0),
    "remainder": lambda j, x: j.numpy.remainder(x, 1.5),
    "copysign": lambda j, x: j.numpy.copysign(1.0, x),
    "norm_of_zeros": lambda j, x: j.numpy.linalg.norm(j.numpy.stack([x * 0.0, x * 0.0])),
    "max_with_ties": lambda j, x: j.numpy.max(j.numpy.stack([x, x, 1.0 + 0 * x])),
    "sort": lambda j, x: j.numpy.sort(j.numpy.stack([x, 1.0 + 0 * x, -x]))[0],
    "prod_with_a_zero": lambda j, x: j.numpy.prod(j.numpy.stack([x, x * 0.0])),
    "logsumexp_with_minus_inf": lambda j, x: _sp(j).logsumexp(
        j.numpy.stack([x, x, -j.numpy.inf + 0 * x])),
    "std_of_one_value": lambda j, x: j.numpy.std(j.numpy.stack([x, 1.0 + 0 * x])),
    # relu's slope at NaN was 1: JAX's rule passes it only where x > 0.
    "relu": lambda j, x: _nn(j).relu(x),
    "relu6": lambda j, x: _nn(j).relu6(x),
    "gelu": lambda j, x: _nn(j).gelu(x),
    "softplus": lambda j, x: _nn(j).softplus(x),
    "silu": lambda j, x: _nn(j).silu(x),
    "elu": lambda j, x: _nn(j).elu(x),
    "log_softmax": lambda j, x: _nn(j).log_softmax(j.numpy.stack([x, 0.0 * x]))[0],
    "xlogy": lambda j, x: _sp(j).xlogy(x, x),
    # entr's slope at 0 and inf was NaN (xlogy's slope in y is 0/0 there): +-inf, as JAX's.
    "entr": lambda j, x: _sp(j).entr(x),
    # logit's slope at 0 and 1 was NaN (inf - inf through the quotient): JAX's 1/(x(1-x)).
    "logit": lambda j, x: _sp(j).logit(x),
    "erf": lambda j, x: _sp(j).erf(x),
    # i0's slope at 1e30 was NaN (inf - inf through the product exp(|x|) i0e(x)): it is
    # I1(x) now, which JAX's matches there only by rounding (see WHERE_JAXS_IS_INACCURATE).
    "i0": lambda j, x: _sp(j).i0(x),
    # ndtri's slope was 0 outside [0, 1] (where ndtri is NaN) and NaN at 1e-30, through its
    # Newton steps: now the inverse function's rule, 1 / phi(ndtri(p)).
    "ndtri": lambda j, x: _sp(j).ndtri(x),
    # rel_entr(x, 1)'s slope at inf was NaN (xlogy(x, x)'s slope in y is inf / inf).
    "rel_entr": lambda j, x: _sp(j).rel_entr(x, 1.0),
    "spence": lambda j, x: _sp(j).spence(x),
    "digamma": lambda j, x: _sp(j).digamma(x),
    # The eigenvalues of x * I (repeated) had a NaN gradient: the eigenvectors' slope is
    # infinite there, and a zero cotangent times it is NaN. Now no cotangent, no NaN.
    "eigenvalues_repeated": lambda j, x: j.numpy.sum(
        j.numpy.linalg.eigh(j.numpy.eye(2) * x)[0]),
    "singular_values": lambda j, x: j.numpy.sum(j.numpy.linalg.svd(
        j.numpy.array([[1.0, 0.0], [0.0, 2.0]]) * x, compute_uv=False)),
    "det": lambda j, x: j.numpy.linalg.det(j.numpy.eye(2) * x),
    # slogdet's slope at a singular matrix was 0 in forward mode (a where chose -inf).
    "logabsdet": lambda j, x: j.numpy.linalg.slogdet(j.numpy.eye(2) * x)[1],
    "solve": lambda j, x: j.numpy.linalg.solve(j.numpy.array([[2.0, 1.0], [1.0, 3.0]]),
                                               j.numpy.stack([x, 1.0 + 0 * x])).sum(),
    # at[].multiply's slope at an infinite or NaN update was NaN (the product over all,
    # divided by the update): the operand's element, as JAX's.
    "at_multiply": lambda j, x: j.numpy.ones(3).at[1].multiply(x).sum(),
    "at_max": lambda j, x: j.numpy.ones(3).at[1].max(x).sum(),
    "fft": lambda j, x: j.numpy.abs(j.numpy.fft.fft(j.numpy.stack([x, 1.0 + 0 * x]))).sum(),
}

ROOT2 = math.sqrt(2.0)
# case -> {point: the derivative}, where JAX's float32 formula is not it (ours must be)
WHERE_JAXS_IS_INACCURATE = {
    "sinc": {1e-30: -math.pi ** 2 * 1e-30 / 3},  # JAX: -inf (the quotient's slope cancels)
    "hypot_with_0": {1e-30: 1.0},  # JAX: NaN (x**2 underflows to 0, then 0/0)
    # JAX: 2 at inf and 1e30 (its rule replaces the infinite result by 0), NaN at -inf
    "logaddexp_with_itself": {np.inf: 1.0, 1e30: 1.0, -np.inf: 1.0},
    "arccosh": {-1.0: np.nan, -np.inf: np.nan, 1e30: 1e-30},  # JAX: inf, 0 and 0
    "digamma": {np.inf: 0.0, 1e30: 1e-30},  # trigamma; JAX: NaN and 0
    "i0": {0.0: 0.0, 1e-30: 5e-31},  # I1(x); JAX: 1 at 0 (abs's slope there) and 0
    "ndtri": {0.0: np.inf, 1.0: np.inf},  # JAX: 0 (a select chose the constant -inf)
    # log(x) / (1 - x), NaN below 0 where spence is; JAX: 0 at 0, 1, -1 and -inf, NaN at 2,
    # -70.08 at 1e-30 and -0 at 1e30
    "spence": {0.0: -np.inf, 1.0: -1.0, 2.0: -math.log(2.0), -1.0: np.nan, -np.inf: np.nan,
               1e-30: math.log(1e-30), 1e30: -math.log(1e30) / 1e30},
    "logabsdet": {1e-30: 2e30, 1e30: 2e-30},  # 2 / x; JAX: NaN and 0 (inf and 0 forward)
}
SIGN_OF_ZERO_ONLY = {"std_of_one_value"}  # a zero slope whose sign comes out otherwise


def _grads(j, name, points):
    f = j.grad(lambda x: CASES[name](j, x))
    return np.array([np.asarray(f(np.float32(p))) for p in points], np.float32)


def _expected(name):
    want = _grads(jax, name, POINTS)
    for point, value in WHERE_JAXS_IS_INACCURATE.get(name, {}).items():
        want[np.nonzero(POINTS == np.float32(point))[0]] = value
    return want


def _check(got, want, name, sign_of_zero=True):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
    numbers = ~np.isnan(want)
    if sign_of_zero:
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]),
                                      err_msg=name)
    np.testing.assert_allclose(got[numbers], want[numbers], rtol=2e-6, atol=0, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_at_special_points_is_jaxs(name):
    _check(_grads(oj, name, POINTS), _expected(name), name,
           sign_of_zero=name not in SIGN_OF_ZERO_ONLY)


@pytest.mark.parametrize("name", ["logaddexp_with_0", "relu", "entr", "logit",
                                  "eigenvalues_repeated", "at_multiply", "power_of_0_to_x"])
def test_gradient_at_special_points_under_jit(name):
    """The cases that once gave a wrong value, through ``jit(vmap(grad))``: one program."""
    f = oj.jit(oj.vmap(oj.grad(lambda x: CASES[name](oj, x))))
    _check(np.asarray(f(POINTS)), _expected(name), name)



def _tangents(j, name, points):
    f = lambda x: CASES[name](j, x)  # noqa: E731
    return np.array([np.asarray(j.jvp(f, (np.float32(p),), (np.float32(1.0),))[1])
                     for p in points], np.float32)


FORWARD_SIGN_OF_ZERO_ONLY = {"prod_with_a_zero", "sinc"}
# xlogy(x, x)'s slope at 0: JAX's custom rule gives NaN (log 0 * 1 + 0 / 0), ours 0; the
# course's "Differences from JAX" says why (xlogy has no rule of its own).
# rel_entr(x, 1)'s slope at inf: JAX's jvp gives NaN there, its grad inf (as ours do both).
FORWARD_DOCUMENTED = {"xlogy": {0.0: 0.0}, "rel_entr": {np.inf: np.inf}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_mode_at_special_points_is_jaxs(name):
    """The same slopes by ``jvp``. Forward mode once gave NaN wherever a constant's zero
    tangent met an infinite or NaN partial derivative (``2.0 * x`` at inf, ``x ** 2.0`` at
    -1 through d/dy = log(x) x**y, a solve with an infinite solution): a zero tangent is now
    None, and a rule skips its term, as JAX's skip their symbolic zeros."""
    want = np.array([np.asarray(jax.jvp(lambda x: CASES[name](jax, x), (np.float32(p),),
                                        (np.float32(1.0),))[1]) for p in POINTS], np.float32)
    for point, value in {**WHERE_JAXS_IS_INACCURATE.get(name, {}),
                         **FORWARD_DOCUMENTED.get(name, {})}.items():
        want[np.nonzero(POINTS == np.float32(point))[0]] = value
    _check(_tangents(oj, name, POINTS), want, name,
           sign_of_zero=name not in SIGN_OF_ZERO_ONLY | FORWARD_SIGN_OF_ZERO_ONLY)


@pytest.mark.parametrize("name, point, want", [
    ("x_cubed", -1.0, -6.0),
    ("power_of_x_to_2", -1.0, 2.0),  # was NaN: d/dy's 0 * log(-1)
    ("logaddexp_with_0", 0.0, 0.25),  # was 0: the tie's kinks
    ("sinc", 0.0, -math.pi ** 2 / 3),  # was 0: a where chose the constant 1
    ("logit", 0.25, (2 * 0.25 - 1) / (0.25 * 0.75) ** 2),
    # These three were NaN: a slope that is infinite at the point met a zero factor.
    ("cbrt", 0.0, -math.inf),  # -2/9 x^(-5/3); the rule was 1 / (3 out^2)
    ("cbrt", math.inf, 0.0),
    ("arccosh", 1.0, -math.inf),  # the rule was 1 / (sqrt(x - 1) sqrt(x + 1))
    ("i0", 0.0, 0.5),  # I1'(0) = 1/2 (JAX: 1.5)
])
def test_second_derivative_at_special_points(name, point, want):
    """``hessian`` (forward over reverse) and ``grad`` of ``grad`` at points where one of
    them once gave a wrong value."""
    f = lambda x: CASES[name](oj, x)  # noqa: E731
    x = np.float32(point)
    assert float(oj.hessian(f)(x)) == pytest.approx(want, rel=1e-5)
    assert float(oj.grad(oj.grad(f))(x)) == pytest.approx(want, rel=1e-5)


def test_hessian_of_a_float_power_of_a_negative_base():
    """``hessian`` of a sum of squares written with a float power: NaN before."""
    x = oj.numpy.array([1.0, 2.0])
    h = oj.hessian(lambda v: oj.numpy.sum((v - 3.0) ** 2.0))(x)
    np.testing.assert_array_equal(np.asarray(h), 2 * np.eye(2, dtype=np.float32))
