"""Stage 1's ``jax.random`` distributions without JAX: moments, shapes and dtypes, errors,
gradients. (Agreement with JAX itself, bit for bit where the result is an integer, and the
jit, vmap and sharding laws are in tests/differential/test_random_against_jax.py.)"""

import numpy as np
import pytest

import stage1_autodiff as jax
from stage1_autodiff import numpy as jnp
from stage1_autodiff import special_functions

KEY = jax.random.key(0)
N = 4000

MEANS = [  # sampler, its expected mean, its expected variance
    (lambda k: jax.random.exponential(k, (N,)), 1.0, 1.0),
    (lambda k: jax.random.laplace(k, (N,)), 0.0, 2.0),
    (lambda k: jax.random.logistic(k, (N,)), 0.0, np.pi ** 2 / 3),
    (lambda k: jax.random.gamma(k, 3.0, (N,)), 3.0, 3.0),
    (lambda k: jax.random.gamma(k, 0.3, (N,)), 0.3, 0.3),
    (lambda k: jnp.exp(jax.random.loggamma(k, 0.5, (N,))), 0.5, 0.5),
    (lambda k: jax.random.beta(k, 2.0, 3.0, (N,)), 0.4, 0.04),
    (lambda k: jax.random.chisquare(k, 4.0, (N,)), 4.0, 8.0),
    (lambda k: jax.random.poisson(k, 3.0, (N,)), 3.0, 3.0),
    (lambda k: jax.random.poisson(k, 40.0, (N,)), 40.0, 40.0),
    (lambda k: jax.random.geometric(k, 0.25, (N,)), 4.0, 12.0),
    (lambda k: jax.random.rademacher(k, (N,)), 0.0, 1.0),
    (lambda k: jax.random.truncated_normal(k, 0.0, 10.0, (N,)), np.sqrt(2 / np.pi),
     1 - 2 / np.pi),
]


@pytest.mark.parametrize("sample, mean, var", MEANS)
def test_moments(sample, mean, var):
    x = np.asarray(sample(KEY), np.float64)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / N)
    assert abs(x.var() - var) < 0.15 * var


def test_dirichlet_rows_sum_to_one_with_the_right_means():
    x = np.asarray(jax.random.dirichlet(KEY, jnp.asarray([1.0, 2.0, 5.0]), (2000,)))
    assert x.shape == (2000, 3) and x.dtype == np.float32
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(x.mean(0), [0.125, 0.25, 0.625], atol=0.02)


def test_shapes_dtypes_and_parameter_broadcasting():
    a = jnp.asarray([[1.0], [2.0]])
    assert jax.random.gamma(KEY, a, (2, 3)).shape == (2, 3)
    assert jax.random.gamma(KEY, a).shape == (2, 1)
    assert jax.random.beta(KEY, 1.0, jnp.ones(4)).shape == (4,)
    assert jax.random.poisson(KEY, jnp.ones((2, 2))).dtype == np.int32
    assert jax.random.rademacher(KEY, (3,), dtype=np.float32).dtype == np.float32
    assert jax.random.double_sided_maxwell(KEY, 0.0, jnp.ones(2), (3,)).shape == (3, 2)
    q = np.asarray(jax.random.orthogonal(KEY, 4))
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    assert jax.random.orthogonal(KEY, 2, m=5).shape == (2, 5)


def test_choice_without_replacement_draws_distinct_items():
    x = np.asarray(jax.random.choice(KEY, 10, (10,), replace=False))
    assert sorted(x.tolist()) == list(range(10))
    y = jax.random.choice(KEY, jnp.arange(12.0).reshape(3, 4), (2, 2), axis=1)
    assert y.shape == (3, 2, 2)
    p = jnp.asarray([0.0, 1.0, 0.0])
    assert set(np.asarray(jax.random.choice(KEY, 3, (20,), p=p)).tolist()) == {1}


def test_typed_and_raw_keys_agree():
    raw = jax.random.PRNGKey(0)
    for fn in (lambda k: jax.random.gamma(k, 2.0, (5,)),
               lambda k: jax.random.poisson(k, 2.0, (5,))):
        np.testing.assert_array_equal(np.asarray(fn(KEY)), np.asarray(fn(raw)))


ERRORS = [
    (lambda: jax.random.choice(KEY, 3, (4,), replace=False), ValueError,
     "Cannot take a larger sample"),
    (lambda: jax.random.choice(KEY, 3, (2,), p=jnp.ones(4) / 4), ValueError, "p must be None"),
    (lambda: jax.random.choice(KEY, 0, (2,)), ValueError, "a must be greater than 0"),
    (lambda: jax.random.choice(KEY, 3, 2), TypeError, "must be a sequence"),
    (lambda: jax.random.gamma(KEY, jnp.ones(3), (2,)), ValueError, "broadcast"),
    (lambda: jax.random.gamma(KEY, 1.0, dtype=np.int32), ValueError, "must be a float dtype"),
    (lambda: jax.random.poisson(KEY, 1.0, dtype=np.float32), ValueError, "must be a int"),
    (lambda: jax.random.gamma(jax.random.split(KEY), 1.0), TypeError, "single key"),
    (lambda: jax.random.dirichlet(KEY, 1.0), ValueError, "alpha.ndim >= 1"),
    (lambda: jax.random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(3)), ValueError,
     "cov.shape == \\(..., n, n\\)"),
    (lambda: jax.random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(2), method="lu"),
     ValueError, "method must be one of"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_choice_with_p_in_the_wrong_shape_names_both_shapes():
    with pytest.raises(ValueError, match=r"p has shape \(4,\) and a.shape\[axis\] is 3"):
        jax.random.choice(KEY, jnp.zeros((3, 2)), (2,), p=jnp.ones(4) / 4)


# The gradient of a sample with respect to a shape parameter is the implicit one (the CDF
# value held fixed), as in JAX: not the derivative of the rejection loop's arithmetic, so it
# is checked in expectation and against the CDF, not against finite differences of samples.


@pytest.mark.parametrize("a", [0.4, 2.0, 9.0])
def test_gamma_gradient_is_one_in_expectation(a):
    """E[x] = a, so E[dx/da] = 1; in log space E[d log x/da] = digamma'(a) = trigamma(a)."""
    keys = jax.random.split(KEY, 1)[0]
    grads = jax.grad(lambda a: jax.random.gamma(keys, a, (N,)).sum())(a)
    assert abs(float(grads) / N - 1.0) < 0.05


def test_beta_gradient_in_expectation():
    """E[x] = a / (a + b), so E[dx/da] = b / (a + b)**2 (= 0.12 at a=2, b=3)."""
    grads = jax.grad(lambda a: jax.random.beta(KEY, a, 3.0, (N,)).sum())(2.0)
    assert abs(float(grads) / N - 0.12) < 0.01


def test_gamma_jvp_equals_vjp():
    a = jnp.asarray([0.7, 2.0, 9.0])
    fn = lambda a: jax.random.gamma(KEY, a)
    _, tangent = jax.jvp(fn, (a,), (jnp.ones(3),))
    _, pullback = jax.vjp(fn, a)
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(pullback(jnp.ones(3))[0]),
                               rtol=1e-6)


def test_second_derivative_of_gamma_says_it_is_missing():
    grad_a = jax.grad(lambda a: jax.random.gamma(KEY, a))
    with pytest.raises(NotImplementedError, match="can be taken once, not twice"):
        jax.grad(grad_a)(2.0)


def test_gamma_grad_is_the_implicit_derivative_of_the_cdf():
    """d x/d a = -(dF/da)/(dF/dx): check against central differences of a CDF computed by a
    long series (float64), at a few points."""
    import math
    a, x = np.array([0.5, 2.0, 7.0]), np.array([0.3, 2.5, 6.0])

    def cdf(a, x):
        return sum(math.exp(-x + (a + n) * math.log(x) - math.lgamma(a + n + 1))
                   for n in range(400))
    for ai, xi, g in zip(a, x, special_functions.random_gamma_grad_impl(a, x)):
        h = 1e-6
        d_a = (cdf(ai + h, xi) - cdf(ai - h, xi)) / (2 * h)
        d_x = math.exp(-xi + (ai - 1) * math.log(xi) - math.lgamma(ai))
        assert abs(g - (-d_a / d_x)) < 1e-6 * max(1, abs(g))
