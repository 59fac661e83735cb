"""Shared fixtures and hypothesis strategies for the stage-1 tests."""

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import stage1_autodiff as jax


@pytest.fixture
def x64() -> Iterator[None]:
    """Turns on jax_enable_x64 for one test; create inputs inside the test, not before."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


# Seeds for NumPy generators, so hypothesis shrinks a seed rather than every float.
seeds = st.integers(0, 2**32 - 1)


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1,
           max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcast_pair(min_dims: int = 0, max_dims: int = 3, max_side: int = 4):
    """Two shapes that broadcast together; ``.map`` gives ``(x_shape, y_shape)``."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=min_dims, max_dims=max_dims, max_side=max_side,
    ).map(lambda b: b.input_shapes)


@st.composite
def shape_and_axis(draw, min_dims: int = 0, max_dims: int = 3, max_side: int = 4):
    """A shape and a reduction ``axis``: None, an int (maybe negative) or a tuple."""
    shape = draw(shapes(min_dims, max_dims, max_side=max_side))
    ndim = len(shape)
    if ndim == 0:
        return shape, draw(st.sampled_from([None, ()]))  # NumPy rejects axis=0 here
    single = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).flatmap(
        lambda axes: st.tuples(*[st.sampled_from([a, a - ndim]) for a in axes]))
    return shape, draw(st.one_of(st.none(), single, several))


def uniform(seed: int, shape, low: float = -1.0, high: float = 1.0,
            dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def away_from_zero(seed: int, shape, low: float = 0.3, high: float = 1.5,
                   dtype=np.float32) -> np.ndarray:
    """Values with ``low <= |x| <= high`` and a random sign."""
    rng = np.random.default_rng(seed)
    sign = rng.choice([-1.0, 1.0], size=shape)
    return (sign * rng.uniform(low, high, size=shape)).astype(dtype)


def distinct(seed: int, shape, spacing: float = 0.25, dtype=np.float32) -> np.ndarray:
    """Distinct values at least ``spacing`` apart, in random order (no ties for max/min)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    values = (np.arange(n) - n / 2) * spacing + rng.uniform(0, spacing / 4)
    return rng.permutation(values).reshape(shape).astype(dtype)


def interleaved(seed: int, x_shape, y_shape, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Two arrays whose elements never come within 0.25 of each other (for maximum/minimum)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 4, size=x_shape) * 0.5 + 0.25
    y = rng.integers(-4, 4, size=y_shape) * 0.5
    return np.asarray(x, dtype), np.asarray(y, dtype)
