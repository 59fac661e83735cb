"""The ``jnp`` functions composed of others (``numpy/mathematical.py``, ``arrangement.py``,
``statistics.py``) under the transformations, by their laws: jit equals eager, vmap equals a
loop, and the gradient of the jitted function equals the eager one. (Their values against
JAX: ``tests/differential/test_differential_numpy.py``.)"""

from __future__ import annotations

import numpy as np
import pytest

import stage3_vmap as jax
from stage3_vmap import numpy as jnp

rng = np.random.default_rng(7)
M = rng.standard_normal((4, 4)).astype(np.float32)
V = rng.standard_normal(3).astype(np.float32)

FUNCTIONS = {
    "tril and triu": lambda m: jnp.tril(m) - 2.0 * jnp.triu(m, 1),
    "roll and diff": lambda m: jnp.diff(jnp.roll(m, 1, axis=1), axis=0).sum(axis=0),
    "diagonal, trace, diag": lambda m: jnp.diag(jnp.diagonal(m, 1)) * jnp.trace(m),
    "kron": lambda m: jnp.kron(m[:2, :2], m[2:, 2:]),
    "stacks": lambda m: jnp.hstack([m, jnp.fliplr(m)]) + jnp.vstack([m, m])[:4, :1],
    "rot90 and repeat": lambda m: jnp.rot90(jnp.repeat(m, 2, axis=0)[:4]),
    "sorting": lambda m: jnp.sort(m, axis=1) + jnp.argsort(m, axis=0).astype(jnp.float32),
    "nan reductions": lambda m: jnp.nanmean(jnp.where(m > 1.0, jnp.nan, m), axis=0)
    + jnp.nanmax(m, axis=1),
    "elementwise": lambda m: jnp.hypot(m, 1.5) + jnp.logaddexp(m, -m) + jnp.sinc(m)
    + jnp.copysign(jnp.log2(jnp.abs(m) + 1.0), m),
    "isclose and average": lambda m: jnp.where(jnp.isclose(m, m + 1e-9), 1.0, 0.0)
    * jnp.average(m, axis=0, weights=jnp.arange(1.0, 5.0)),
    "quantiles": lambda m: jnp.median(m, axis=1) + jnp.quantile(m, jnp.array([0.2, 0.7]),
                                                                 axis=0).sum(axis=0),
    "padding": lambda m: jnp.pad(m, ((1, 2), (0, 1)), mode="reflect")[:4, :4]
    + jnp.pad(m, 1, mode="wrap")[1:5, :4] + jnp.pad(m, (2, 0), constant_values=0.5)[:4, :4],
    "interpolation": lambda m: jnp.interp(m, jnp.array([-1.0, 0.0, 2.0]), m[0, :3])
    + jnp.histogram(m, jnp.array([-3.0, 0.0, 3.0]))[0].sum(),
    "searching": lambda m: m[0] * jnp.searchsorted(jnp.sort(m[1]), m[2]).astype(jnp.float32)
    + jnp.nonzero(m[3] > 0, size=4, fill_value=9)[0] + jnp.bincount(
        jnp.argsort(m[0]), length=4) * m[1],
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jit_equals_eager(name):
    f = FUNCTIONS[name]
    np.testing.assert_allclose(np.asarray(jax.jit(f)(M)), np.asarray(f(M)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_vmap_equals_a_loop(name):
    f = FUNCTIONS[name]
    batch = np.stack([M, M * 0.5, -M])
    looped = np.stack([np.asarray(f(m)) for m in batch])
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(batch)), looped, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in FUNCTIONS if n not in ("sorting", "searching")])
def test_grad_of_jit_equals_grad(name):
    f = FUNCTIONS[name]
    def loss(m):
        return jnp.sum(jnp.tanh(f(m)))
    np.testing.assert_allclose(np.asarray(jax.grad(jax.jit(loss))(M)),
                               np.asarray(jax.grad(loss)(M)), rtol=1e-4, atol=1e-5)
