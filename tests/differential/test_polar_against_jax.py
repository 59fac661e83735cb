"""``jax.scipy.linalg.polar`` (``stage1_autodiff/scipy/linalg.py``) against JAX: the factors
of tall, wide and square matrices on both sides, their defining properties, JAX's errors,
and gradients to second order."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax.scipy import linalg as jax_linalg  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(8)
SQUARE = RNG.standard_normal((4, 4)).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)


@pytest.mark.parametrize("a, side", [(SQUARE, "right"), (SQUARE, "left"), (TALL, "right"),
                                     (TALL.T, "left")])
@pytest.mark.parametrize("method", ["qdwh", "svd"])
def test_factors_match_jax_and_multiply_back(a, side, method):
    u, p = oj.scipy.linalg.polar(a, side=side, method=method)
    ju, jp = jax_linalg.polar(a, side=side, method="svd")  # (JAX's qdwh refuses some)
    for ours, theirs in ((u, ju), (p, jp)):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(u @ p if side == "right" else p @ u, a, atol=1e-5)
    np.testing.assert_allclose(p, np.swapaxes(p, -1, -2), atol=1e-5)
    assert np.linalg.eigvalsh(np.asarray(p, np.float64)).min() > -1e-5


def test_a_tall_matrix_on_the_left_where_jaxs_qdwh_refuses():
    u, p = oj.scipy.linalg.polar(TALL, side="left", method="qdwh")
    np.testing.assert_allclose(p @ u, TALL, atol=1e-5)
    ju, jp = jax_linalg.polar(TALL, side="left", method="svd")
    np.testing.assert_allclose(p, jp, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("call, words", [
    (lambda m: m.polar(SQUARE, side="up"), "must be either 'right' or 'left'"),
    (lambda m: m.polar(SQUARE, method="qr"), "Unknown polar decomposition method"),
    (lambda m: m.polar(np.ones(3, np.float32)), "at least a 2-D array"),
    (lambda m: m.polar(np.eye(2, dtype=np.int32)), "not inexact"),
])
def test_bad_arguments_raise_jaxs_errors(call, words):
    for module in (jax_linalg, oj.scipy.linalg):
        with pytest.raises(ValueError, match=words):
            call(module)


def test_gradients_numerically():
    with oj.enable_x64(True):
        a = SQUARE.astype(np.float64) + 3 * np.eye(4)
        check_grads(lambda m: oj.scipy.linalg.polar(m)[0], (a,), order=2)
        check_grads(lambda m: oj.scipy.linalg.polar(m, side="left")[1], (a,), order=2)


@pytest.mark.parametrize("a", [np.eye(3), 2 * np.eye(3), np.array([[0.0, -1.0], [1.0, 0.0]]),
                               np.diag([3.0, 3.0, 1.0]), np.eye(3, 2), np.eye(2, 3)],
                         ids=["I", "2I", "rotation", "repeated", "tall I", "wide I"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_gradients_at_repeated_singular_values(a, side):
    """Through the SVD, the derivative of u was NaN at any repeated singular value (every
    orthogonal matrix): u has a rule of its own, and p is u.T a (or a u.T). (To first order:
    the rule is written with the SVD's vectors, so a second derivative there is NaN still.)"""
    with oj.enable_x64(True):
        for k in (0, 1):
            check_grads(lambda m: oj.scipy.linalg.polar(m, side=side)[k], (a,), order=1,
                        modes=("fwd", "rev"))
