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
               "relu", "gelu", "softplus"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_values_at_kinks_and_infinities_equal_jax(name):
    with np.errstate(all="ignore"):
        got, want = getattr(ours.nn, name)(KINKS), getattr(jax.nn, name)(KINKS)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_gradients_at_the_kinks_equal_jax(name):
    finite = KINKS[1:-2]
    got = [float(ours.grad(getattr(ours.nn, name))(x)) for x in finite]
    want = [float(jax.grad(getattr(jax.nn, name))(x)) for x in finite]
    # gelu's tanh form: JAX's float32 slope far out (-7, 7) is off by 1e-5 from the exact 0, 1
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-5 if name == "gelu" else 1e-7)


def test_exact_gelu_equals_jax():
    x = np.linspace(-4, 4, 9).astype(np.float32)
    np.testing.assert_allclose(ours.nn.gelu(x, approximate=False),
                               jax.nn.gelu(x, approximate=False), rtol=2e-6, atol=1e-7)
    assert ours.nn.gelu(1.0, approximate=False).dtype == np.float32


SMOOTH = {name: getattr(s1.nn, name) for name in
          ["silu", "log_sigmoid", "soft_sign", "elu", "celu", "selu", "leaky_relu", "relu6",
           "hard_sigmoid", "hard_silu", "hard_tanh"]}
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
