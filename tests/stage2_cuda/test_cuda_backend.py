"""The CUDA backend under Numba's CUDA simulator: jit(f, backend="cuda") equals eager.

Run in its own process, with numba-cuda installed:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/stage2_cuda
Without numba-cuda, or without the simulator, these tests are skipped.
"""

import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
from numba import config  # noqa: E402

if not config.ENABLE_CUDASIM:
    pytest.skip("set NUMBA_ENABLE_CUDASIM=1 to run the CUDA backend tests",
                allow_module_level=True)

import stage2_jit.numpy as jnp  # noqa: E402

import stage2_jit as jax  # noqa: E402

rng = np.random.default_rng(0)
x23 = rng.standard_normal((2, 3)).astype(np.float32)
y3 = rng.standard_normal(3).astype(np.float32)
i23 = rng.integers(-20, 20, (2, 3)).astype(np.int32)
j3 = np.array([3, -4, 0], np.int32)

PROGRAMS = [
    ("fused", lambda x, y: x * x + x * 2.0, (x23, y3)),
    ("broadcast", lambda x, y: x * y - y, (x23, y3)),
    ("where", lambda x, y: jnp.where(x > y, jnp.exp(x), jnp.tanh(y)), (x23, y3)),
    ("scalar", lambda x, y: x * 3.0 + 1.0, (np.float32(2.0), y3)),
    ("transcendental", lambda x, y: jax.nn.sigmoid(x) + jnp.log1p(jnp.abs(y)), (x23, y3)),
    ("integers", lambda i, j: (i // j, i % j, i * 3 - j), (i23, j3)),
    ("maximum", lambda x, y: jnp.maximum(x, y) + jnp.minimum(x, 0.5), (x23, y3)),
    ("transpose", lambda x, y: x.T + y[:, None], (x23, y3)),
]


@pytest.mark.parametrize("name, f, args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_jit_cuda_equals_eager(name, f, args):
    expected = f(*[jnp.asarray(a) for a in args])  # eager
    got = jax.jit(f, backend="cuda")(*args)
    for e, g in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got)):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_generated_source_is_a_grid_stride_kernel():
    text = jax.jit(lambda x, y: x * y + 2.0, backend="cuda").lower(x23, y3).as_text()
    assert "@cuda.jit" in text and "cuda.gridsize(1)" in text
    assert "np.float32(2.0)" in text  # a typed constant, never a float64 one


def test_unsupported_program_falls_back():
    f = jax.jit(lambda x: jnp.sum(x * 2.0), backend="cuda")
    assert np.allclose(f(x23), np.sum(x23 * 2.0))
    assert re.search("Not generated: reduce_sum", f.lower(x23).as_text())
