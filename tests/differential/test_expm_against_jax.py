"""``jax_linalg.expm`` (``stage1_autodiff/scipy/matrix_exponential.py``) against JAX
and against SciPy's in float64: values, dtypes, weak types, batches, the NaN past
``max_squarings``, errors, gradients to second order, and under jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

jax = pytest.importorskip("jax")

from jax.scipy import linalg as jax_linalg  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402

import stage4_sharding as oj  # noqa: E402

RNG = np.random.default_rng(5)
MATRICES = {
    "small": RNG.standard_normal((3, 3)) * 0.1,
    "moderate": RNG.standard_normal((4, 4)),
    "large norm": RNG.standard_normal((5, 5)) * 6,
    "nilpotent": np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]),
    "zero": np.zeros((2, 2)),
    "one by one": np.array([[2.5]]),
}


def _exact(a: np.ndarray) -> np.ndarray:
    return scipy.linalg.expm(np.asarray(a, np.float64))


@pytest.mark.parametrize("name", sorted(MATRICES))
def test_expm_is_scipys_in_float32_and_float64(name):
    a = MATRICES[name]
    ours = oj.scipy.linalg.expm(a.astype(np.float32))
    assert ours.dtype == jax_linalg.expm(a.astype(np.float32)).dtype == np.float32
    scale = np.abs(_exact(a)).max()
    np.testing.assert_allclose(ours, _exact(a), rtol=2e-5, atol=2e-6 * scale)
    with oj.enable_x64(True):
        np.testing.assert_allclose(oj.scipy.linalg.expm(a), _exact(a), rtol=1e-12,
                                   atol=1e-13 * scale)


def test_batches_integers_and_weak_types_as_jax():
    batch = np.stack([MATRICES["moderate"], MATRICES["moderate"].T]).astype(np.float32)
    ours, theirs = oj.scipy.linalg.expm(batch), jax_linalg.expm(batch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    ints = np.array([[1, 2], [0, 1]])
    for value in (ints, 1.0 * ints):
        o, t = oj.scipy.linalg.expm(value), jax_linalg.expm(value)
        assert (o.dtype, o.weak_type) == (t.dtype, t.weak_type)
        np.testing.assert_allclose(o, t, rtol=1e-5)
    assert oj.scipy.linalg.expm(np.zeros((0, 3, 3), np.float32)).shape == (0, 3, 3)


def test_too_many_squarings_give_nan_as_jax():
    a = np.diag([1e6, 1.0]).astype(np.float32)
    for kwargs in ({"max_squarings": 4}, {}):
        ours = oj.scipy.linalg.expm(a, **kwargs)
        theirs = jax_linalg.expm(a, **kwargs)
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.isnan(oj.scipy.linalg.expm(np.diag([np.inf, 1.0]))).all()


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4)])
def test_a_matrix_that_is_not_square_is_jaxs_error(shape):
    for module in (jax, oj):
        with pytest.raises(ValueError, match="Expected A to be a \\(batched\\) square matrix"):
            module.scipy.linalg.expm(np.ones(shape, np.float32))


def test_gradients_match_numerical_ones_and_jaxs():
    a = MATRICES["moderate"] * 0.7
    with oj.enable_x64(True):
        check_grads(oj.scipy.linalg.expm, (a,), order=2)
    a32 = a.astype(np.float32)
    ours = oj.grad(lambda m: oj.scipy.linalg.expm(m).sum())(a32)
    theirs = jax.grad(lambda m: jax_linalg.expm(m).sum())(a32)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)


def test_expm_under_jit_and_vmap_equals_eager():
    batch = np.stack([MATRICES["small"], MATRICES["large norm"][:3, :3]]).astype(np.float32)
    eager = oj.scipy.linalg.expm(batch)
    np.testing.assert_allclose(oj.jit(oj.scipy.linalg.expm)(batch), eager, rtol=1e-5)
    np.testing.assert_allclose(oj.vmap(oj.scipy.linalg.expm)(batch), eager, rtol=1e-5)
