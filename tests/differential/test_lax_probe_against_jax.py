"""``jax.lax`` calls against JAX 0.10.2, eagerly and under ``jit``, from a probe of 120 lax
calls with unusual arguments. It found: ``lax.pow`` of a float by an integer array gave a
float64 eagerly and was refused under ``jit``; ``lax.add(int32, float32)`` and the other binary
ops gave a float64 eagerly where JAX refuses mixed dtypes; ``lax.pad`` refused negative padding
(JAX crops); the complex ``asin``, ``acos``, ``atan``, ``asinh``, ``acosh``, ``atanh``,
``sinh``, ``cosh`` and ``exp2`` ran eagerly but were refused under ``jit``; and
``approx_max_k``, ``approx_min_k``, ``reduce_xor`` and ``random_gamma_grad`` were missing."""

import numpy as np
import pytest
from oracle import assert_call_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

M = np.arange(12, dtype=np.float32).reshape(3, 4)
# (no NaN: JAX's approximate top-k places NaNs differently with and without aggregation)
SPECIAL = np.array([[3, 1, 4, 5], [0, -0.0, 2, 2], [-np.inf, np.inf, -7, 1]], np.float32)
C = np.array([1 + 2j, -3, 0, 1j, 0.5 - 0.25j], np.complex64)
INVERSES = ["sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
            "exp2"]


def _cases(jax):
    jnp, lax = jax.numpy, jax.lax
    return {
        "pow of floats by integers": (lax.pow, np.float32([2, -2, 0.5]), np.int32([3, -3, 0])),
        "pow of a Python float by integers": (lambda b: lax.pow(2.0, b), np.int32([3, -3, 0])),
        "pow by a Python int": (lambda a: lax.pow(a, 3), np.float32([2, -2, 0.5])),
        "pow of complex numbers by integers": (lax.pow, C[:4], np.int32([2, 3, 1, -2])),
        "grad of pow by an integer": (jax.grad(lambda a: lax.pow(a, np.int32(3))),
                                      np.float32(2)),
        "jvp of pow by an integer": (lambda a: jax.jvp(lambda a: lax.pow(a, np.int32(-2)),
                                                       (a,), (a,)), np.float32(2)),
        "vmap of pow by integers": (jax.vmap(lax.pow), np.float32([2, -2, 0.5]),
                                    np.int32([3, -3, 0])),
        "approx_max_k": (lambda x: lax.approx_max_k(x, 2), SPECIAL),
        "approx_min_k": (lambda x: lax.approx_min_k(x, 3), SPECIAL),
        "approx_max_k without aggregation": (  # (only the first k are specified)
            lambda x: [r[:, :2] for r in lax.approx_max_k(x, 2, aggregate_to_topk=False)],
            SPECIAL),
        "approx_min_k without aggregation": (
            lambda x: [r[:, :1] for r in lax.approx_min_k(x, 1, aggregate_to_topk=False)],
            SPECIAL),
        "grad of a sort by two keys": (jax.grad(lambda x: lax.sort(
            (x * 0 > 1, -x, x), num_keys=2)[2][:2].sum()), M[0]),
        "jvp of a sort by two keys": (lambda x: jax.jvp(lambda x: lax.sort(
            (x * 0 > 1, -x, x), num_keys=2)[2], (x,), (x * x,)), M[0]),
        "approx_max_k along dim 0": (lambda x: lax.approx_max_k(x, 2, reduction_dimension=0),
                                     SPECIAL),
        "approx_min_k along dim 0": (lambda x: lax.approx_min_k(
            x, 1, reduction_dimension=0, recall_target=0.5), SPECIAL),
        "grad of approx_max_k": (jax.grad(lambda x: lax.approx_max_k(x, 2)[0].sum()), M),
        "vmap of approx_max_k": (jax.vmap(lambda r: lax.approx_max_k(r, 2)), M[:, ::-1]),
        "reduce_xor of integers": (lambda i: lax.reduce_xor(i, (1,)),
                                   np.array([[5, 3, 6], [1, 1, 7]], np.int32)),
        "reduce_xor of booleans": (lambda b: lax.reduce_xor(b, (0, 1)),
                                   np.array([[True, False], [True, True]])),
        "reduce_xor of uint8": (lambda i: lax.reduce_xor(i, (0,)),
                                np.array([[5, 3], [255, 1]], np.uint8)),
        "reduce_xor of nothing": (lambda i: lax.reduce_xor(i, (0,)), np.zeros((0, 2), np.int32)),
        "pad with negative low and high": (lambda x: lax.pad(x, 0.0, [(-1, 2, 1), (1, -2, 0)]),
                                           M),
        "pad cropping both ends": (lambda x: lax.pad(x, -1.0, [(-1, -1, 0), (-2, 3, 2)]), M),
        "pad to nothing": (lambda x: lax.pad(x, 0.0, [(-3, 0, 0), (0, 0, 0)]), M),
        "grad of a cropping pad": (jax.grad(lambda x: (lax.pad(x, 2.0, [(-1, 2, 1), (1, -2, 0)])
                                                      ** 2).sum()), M),
        "vmap of a cropping pad": (jax.vmap(lambda r: lax.pad(r, 0.0, [(-1, 2, 1)])), M),
        "random_gamma_grad": (lax.random_gamma_grad, np.float32([0.5, 2, 7]),
                              np.float32([0.3, 2.5, 6])),
        **{f"complex {name}": (getattr(jnp, name), C) for name in INVERSES},
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    assert_call_as_jax(_cases, name, how, rtol=2e-6, atol=1e-6)


ERRORS = {
    "lax.add of int32 and float32": (lambda lax: lax.add(np.int32([2]), np.float32([3])),
                                     "dtype"),
    "lax.mul of int8 and a Python int": (lambda lax: lax.mul(np.ones(2, np.int8), 3),
                                         "dtype"),
    "lax.pow of an integer by a float": (lambda lax: lax.pow(np.int32([2]), np.float32([3])),
                                         "dtype"),
    "lax.pow of float32 by float16": (lambda lax: lax.pow(np.float32([2]), np.float16([3])),
                                      "dtype"),
    "approx_max_k of integers": (lambda lax: lax.approx_max_k(np.int32([3, 1, 2]), 2),
                                 "floating"),
    "approx_max_k of more than there are": (lambda lax: lax.approx_max_k(M, 9), "k must be"),
    "reduce_xor of floats": (lambda lax: lax.reduce_xor(np.float32([1, 2]), (0,)),
                             "integer or bool"),
    "pad past the whole dim": (lambda lax: lax.pad(M, 0.0, [(-3, -1, 0), (0, 0, 0)]),
                               "negative size"),
    "pad with a negative interior": (lambda lax: lax.pad(M, 0.0, [(0, 0, -1), (0, 0, 0)]),
                                     "interior"),
}


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(ERRORS))
def test_refused_as_jax(name, how):
    """The same class of error as JAX's, eagerly and under jit, with a message of ours."""
    call, match = ERRORS[name]

    def run(jax):
        return call(jax.lax) if how == "eager" else jax.jit(lambda: call(jax.lax))()

    with pytest.raises((TypeError, ValueError)) as theirs:
        run(real)
    with pytest.raises(theirs.type, match=match):
        run(ours)


def test_dynamic_slicing_in_dim_with_int32_indices_under_x64():
    """Under x64 the zero start of the other dims was an int64 beside an int32 index, which
    dynamic_slice refused (JAX takes the index's type for them)."""
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    k = np.int32(-1)

    def calls(jax):
        lax = jax.lax
        return [lax.dynamic_slice_in_dim(x, k, 1, axis=1),
                lax.dynamic_index_in_dim(x, k, axis=1, keepdims=False),
                lax.dynamic_update_slice_in_dim(x, np.ones((3, 1), np.float32), k, axis=1),
                lax.dynamic_update_index_in_dim(x, np.ones(3, np.float32), k, axis=1),
                jax.jit(lambda x, k: lax.dynamic_slice_in_dim(x, k, 2, axis=1))(x, k)]

    with ours.enable_x64(True), real.enable_x64(True):
        for got, expected in zip(calls(ours), calls(real)):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
