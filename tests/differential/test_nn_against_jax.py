"""jax.nn's activations against JAX where random inputs never go: at the kinks (0, 6, +-1,
-3, 3), at +-inf and NaN, and for their gradients there, which JAX defines one way each
(relu6's custom JVP gives 0 at both kinks, hard_tanh and leaky_relu take the slope 1 at
theirs). Away from the kinks, gradients are checked numerically to order 2; values on random
inputs are in test_differential_numpy.py's NN_CALLS.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage1_autodiff as s1  # noqa: E402
import stage4_sharding as ours  # noqa: E402

KINKS = np.array([-np.inf, -7.0, -3.0, -1.0, -0.0, 0.0, 1.0, 3.0, 6.0, 7.0, np.inf, np.nan],
                 np.float32)
ACTIVATIONS = ["silu", "swish", "log_sigmoid", "soft_sign", "elu", "celu", "selu",
               "leaky_relu", "relu6", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
               "relu", "gelu", "softplus", "mish", "squareplus", "sparse_plus", "sparse_sigmoid",
               "identity", "tanh"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_values_at_kinks_and_infinities_equal_jax(name):
    with np.errstate(all="ignore"):
        got, want = getattr(ours.nn, name)(KINKS), getattr(jax.nn, name)(KINKS)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-7)


def test_log1mexp_at_its_edges_equals_jax():
    """NaN below 0, -inf at 0 (an infinite slope), 0 at inf; JAX's custom JVP, 1 / expm1(x),
    is what the two one-sided branches give."""
    x = np.array([-1.0, 0.0, 1e-30, 1e-7, 0.6931472, 0.6931473, 50.0, np.inf, np.nan],
                 np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(ours.nn.log1mexp(x), jax.nn.log1mexp(x), rtol=2e-6)
    for point in (0.0, 1e-7, 0.6931472, 0.6931473, 50.0):
        np.testing.assert_allclose(float(ours.grad(ours.nn.log1mexp)(np.float32(point))),
                                   float(jax.grad(jax.nn.log1mexp)(np.float32(point))),
                                   rtol=2e-6)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_gradients_at_the_kinks_equal_jax(name):
    finite = KINKS[1:-2]
    got = [float(ours.grad(getattr(ours.nn, name))(x)) for x in finite]
    want = [float(jax.grad(getattr(jax.nn, name))(x)) for x in finite]
    # gelu's tanh form: JAX's float32 slope far out (-7, 7) is off by 1e-5 from the exact 0, 1;
    # XLA's float32 tanh differs from NumPy's in the last bits, 1 - tanh**2 shows it
    atol = {"gelu": 2e-5, "tanh": 1e-6, "mish": 2e-6}.get(name, 1e-7)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=atol)


def test_exact_gelu_equals_jax():
    x = np.linspace(-4, 4, 9).astype(np.float32)
    np.testing.assert_allclose(ours.nn.gelu(x, approximate=False),
                               jax.nn.gelu(x, approximate=False), rtol=2e-6, atol=1e-7)
    assert ours.nn.gelu(1.0, approximate=False).dtype == np.float32


SMOOTH = {name: getattr(s1.nn, name) for name in
          ["silu", "log_sigmoid", "soft_sign", "elu", "celu", "selu", "leaky_relu", "relu6",
           "hard_sigmoid", "hard_silu", "hard_tanh"]}
SMOOTH.update({name: getattr(s1.nn, name) for name in
               ["mish", "squareplus", "sparse_plus", "sparse_sigmoid", "identity"]})
SMOOTH["squareplus_b"] = lambda x: s1.nn.squareplus(x, 0.25 + x * x)
SMOOTH["log1mexp"] = lambda x: s1.nn.log1mexp(s1.numpy.abs(x))
SMOOTH["logmeanexp"] = lambda x: s1.nn.logmeanexp(x.reshape(2, 2), axis=0)
SMOOTH["logmeanexp_where"] = lambda x: s1.nn.logmeanexp(
    x, where=np.array([True, False, True, True]), keepdims=True)
SMOOTH["gelu_exact"] = lambda x: s1.nn.gelu(x, approximate=False)
SMOOTH["glu"] = lambda x: s1.nn.glu(x.reshape(2, 2))
SMOOTH["standardize"] = lambda x: s1.nn.standardize(x, epsilon=0.5)
SMOOTH["standardize_where"] = lambda x: s1.nn.standardize(
    x, where=np.array([True, False, True, True]), algorithm="stable")


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_gradients_numerically_to_order_2(name):
    x = s1.numpy.array([-2.3, -0.4, 0.7, 4.2], dtype=np.float64)
    previous = s1.config.jax_enable_x64
    s1.config.update("jax_enable_x64", True)
    try:
        check_grads(SMOOTH[name], (s1.numpy.asarray(np.asarray(x, np.float64)),), order=2,
                    rtol=1e-5, atol=1e-6)
    finally:
        s1.config.update("jax_enable_x64", previous)


def test_standardize_and_glu_equal_jax():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
    mask = x % 2 > 0.5
    for kwargs in ({}, {"axis": 0}, {"axis": None, "epsilon": 0.1}, {"where": mask},
                   {"algorithm": "stable"}, {"mean": 1.0, "variance": 4.0}):
        np.testing.assert_allclose(ours.nn.standardize(x, **kwargs),
                                   jax.nn.standardize(x, **kwargs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.nn.glu(x, axis=1), jax.nn.glu(x, axis=1), rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="divisible by 2"):
        ours.nn.glu(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="Unknown algorithm"):
        ours.nn.standardize(np.ones(3, np.float32), algorithm="exact")
    with pytest.raises(TypeError, match="logistic does not accept dtype int32"):
        ours.nn.silu(np.arange(3, dtype=np.int32))


def test_attention_gradients_equal_jax():
    """dot_product_attention with grouped heads, bias, a mask and padding: the gradients with
    respect to q, k, v and the bias. (Not against finite differences: the softmax runs in
    float32 even for float64 inputs, as JAX's, too coarse for them.)"""
    rng = np.random.default_rng(0)
    shapes = [(2, 3, 4, 2), (2, 4, 2, 2), (2, 4, 2, 2), (1, 4, 3, 4)]
    args = [rng.standard_normal(shape, dtype=np.float32) for shape in shapes]
    mask = rng.random((2, 1, 3, 4)) < 0.7
    lengths = np.array([3, 2], np.int32)

    def loss(nn, numpy):
        def f(q, k, v, bias):
            out = nn.dot_product_attention(q, k, v, bias, mask, is_causal=True,
                                           key_value_seq_lengths=lengths)
            return numpy.sum(numpy.sin(out))
        return f
    got = ours.grad(loss(ours.nn, ours.numpy), argnums=(0, 1, 2, 3))(*args)
    want = jax.grad(loss(jax.nn, jax.numpy), argnums=(0, 1, 2, 3))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_attention_under_jit_and_vmap_equals_jax():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 3, 5, 2, 4), dtype=np.float32), rng.standard_normal(
        (2, 3, 6, 1, 4), dtype=np.float32)

    def attention(nn):
        return lambda q, k: nn.dot_product_attention(q, k, k, is_causal=True,
                                                     local_window_size=(1, 2))
    got = ours.jit(ours.vmap(attention(ours.nn)))(q, k)
    want = jax.vmap(attention(jax.nn))(q, k)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("x", [np.arange(-2, 3), 0.5], ids=["int32", "Python float"])
def test_activations_of_integers_and_numbers_have_jaxs_types(name, x):
    """A probe found leaky_relu of integers strong where JAX's is weak: it converted them to
    floats first, where JAX promotes them with the slope (a weak float). The other
    activations agreed, on integers, Python numbers, float16 and bfloat16."""
    def typed(lib):
        try:
            out = getattr(lib.nn, name)(lib.numpy.asarray(x) if np.ndim(x) else x)
        except TypeError:
            return "TypeError"
        return str(out.dtype), out.weak_type, np.asarray(out, np.float64).round(5).tolist()

    assert typed(ours) == typed(jax)
