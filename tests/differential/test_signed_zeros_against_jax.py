"""The sign of a zero that a maximum or minimum picks (``stage1_autodiff/signed_zeros.py``):
JAX puts +0 above -0 where NumPy returns whichever zero came first. Eager and jit are compared
bit for bit with JAX, since ``1 / x`` tells the zeros apart."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

# Every pair and triple of zeros, with a negative and a positive number, and a NaN.
X = np.array([[-0.0, 0.0, -0.0], [0.0, -0.0, -0.0], [-0.0, -0.0, -1.0], [0.0, 0.0, 1.0],
              [-0.0, -0.0, -0.0], [0.0, -1.0, np.nan], [-0.0, 2.0, 0.0]], np.float32)

CASES = {
    "max": lambda j: j.numpy.max(X, axis=1),
    "min": lambda j: j.numpy.min(X, axis=0),
    "max_all": lambda j: j.numpy.max(X[:2]),
    "maximum": lambda j: j.numpy.maximum(X[:, 0], X[:, 1]),
    "minimum": lambda j: j.numpy.minimum(X[:, 1], X[:, 0]),
    "cummax": lambda j: j.lax.cummax(X, axis=1),
    "cummin_reverse": lambda j: j.lax.cummin(X, axis=1, reverse=True),
    "relu": lambda j: j.nn.relu(X),
    "clip": lambda j: j.numpy.clip(X, 0.0, 1.0),
    "max_float16": lambda j: j.numpy.max(X.astype(np.float16), axis=1),
}


def _bits(x) -> list[int]:
    """The bit patterns, every NaN made one (a NaN's sign is not what is compared here)."""
    x = np.asarray(x)
    x = np.where(np.isnan(x), x.dtype.type(np.nan), x)
    return x.view(f"u{x.dtype.itemsize}").ravel().tolist()


@pytest.mark.parametrize("name", sorted(CASES))
def test_zeros_are_signed_as_jaxs(name):
    want = _bits(CASES[name](jax))
    assert _bits(CASES[name](oj)) == want, "eager"
    assert _bits(oj.jit(lambda: CASES[name](oj))()) == want, "jit"
