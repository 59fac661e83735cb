"""``holomorphic=True`` in ``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev`` and ``hessian``
against JAX: the complex derivative (no conjugation), and JAX's errors for real inputs or
outputs. JAX code passing it raised ``TypeError`` (an unexpected keyword) here once."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

Z = np.complex64(0.5 - 1.25j)
ZS = np.array([1 + 2j, -0.5 + 0.1j, 3 - 4j], np.complex64)


def close(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6)


def scalar_functions(j):
    n = j.numpy
    return {"cube": lambda z: z ** 3, "exp_sin": lambda z: n.exp(n.sin(z)),
            "log1p_recip": lambda z: n.log1p(z) / (z + 2.0), "tanh": n.tanh}


@pytest.mark.parametrize("name", sorted(scalar_functions(jax)))
def test_grad_value_and_grad_and_hessian_are_jaxs(name):
    ours, theirs = scalar_functions(oj)[name], scalar_functions(jax)[name]
    close(oj.grad(ours, holomorphic=True)(Z), jax.grad(theirs, holomorphic=True)(Z))
    for got, want in zip(oj.value_and_grad(ours, holomorphic=True)(Z),
                         jax.value_and_grad(theirs, holomorphic=True)(Z)):
        close(got, want)
    close(oj.hessian(ours, holomorphic=True)(Z), jax.hessian(theirs, holomorphic=True)(Z))
    close(oj.jit(oj.grad(ours, holomorphic=True))(Z), jax.grad(theirs, holomorphic=True)(Z))


def test_jacobians_are_jaxs():
    def f(j):
        return lambda z: j.numpy.stack([z[0] * z[1], j.numpy.exp(z[2]), z.sum() ** 2])
    for ours, theirs in ((oj.jacfwd, jax.jacfwd), (oj.jacrev, jax.jacrev)):
        close(ours(f(oj), holomorphic=True)(ZS), theirs(f(jax), holomorphic=True)(ZS))


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev"])
def test_errors_are_jaxs(transform):
    """Real inputs or outputs, with holomorphic=True; complex ones without it."""
    square, real_part = (lambda z: z * z), (lambda z: z.real)
    for lib in (jax, oj):
        t = getattr(lib, transform)
        with pytest.raises(TypeError, match=f"{transform} with holomorphic=True requires "
                                            f"inputs with complex dtype, but got float32"):
            t(square, holomorphic=True)(np.float32(1.0))
        with pytest.raises(TypeError, match=f"{transform} with holomorphic=True requires "
                                            f"outputs with complex dtype, but got float32"):
            t(real_part, holomorphic=True)(Z)
        with pytest.raises(TypeError, match="pass holomorphic=True"):
            t(square)(Z)


def test_jacrev_takes_complex_inputs_with_real_outputs_as_jaxs():
    """As grad does: the cotangent convention of a real function of complex inputs."""
    def f(j):
        return lambda z: j.numpy.abs(z) ** 2 * j.numpy.arange(1.0, 4.0)
    close(oj.jacrev(f(oj))(ZS), jax.jacrev(f(jax))(ZS))
