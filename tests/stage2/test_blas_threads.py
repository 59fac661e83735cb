"""A kernel with matrix products asks stage 1's thread coordinator before it runs
(``stage1_autodiff/threads.py``, tested in ``tests/stage1/test_threads.py``)."""

from __future__ import annotations

import numpy as np
import stage2_jit.numpy as jnp
from backend_under_test import cpu_only

import stage2_jit as jax
from stage1_autodiff import threads


@cpu_only
def test_a_kernel_with_matrix_products_asks_the_coordinator(monkeypatch):
    asked: list[int] = []
    monkeypatch.setattr(threads.COORDINATOR, "coordinate", lambda: asked.append(1))
    x = np.ones((8, 8), np.float32)
    jax.jit(lambda a: jnp.tanh(a @ a))(x)
    assert asked
    asked.clear()
    jax.jit(lambda a: jnp.tanh(a) * 2.0)(x)
    assert not asked  # no BLAS, nothing to coordinate
