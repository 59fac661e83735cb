"""Edge values against JAX 0.10.2, where NumPy's and XLA's semantics part: NaNs (with either
sign) in orderings, shifts past the bit width, out-of-range conversions, integer overflow and
division by zero, rounding of halves, a variance with no degrees of freedom. Found by a probe:
``searchsorted`` of a NaN gave 0 (JAX and NumPy: after every number), ``top_k`` put a NaN with
its sign bit set first (XLA's total order puts it last), and ``var`` with ``ddof`` past the
count gave inf or a negative number (JAX: NaN)."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

I32 = [1, -8, 2**30, -1]
SHIFTS = [0, 31, 32, 40]
FLOATS = [np.nan, -0.0, 0.0, -np.inf, 1.0, -np.nan, np.inf]
SORTED = [-1.0, -0.0, 0.0, 2.0, np.nan]
QUERIES = [np.nan, 0.0, -0.0, 2.0, -np.nan, np.inf, -np.inf]


def _cases(lib):
    """Each case: a function of arrays, and its arguments (passed in, so that under jit the
    compiled kernel computes them, not the constant folder)."""
    jnp, lax = lib.numpy, lib.lax
    i, s = np.array(I32, np.int32), np.array(SHIFTS, np.int32)
    u, us = np.array([1, 8, 2**31, 3], np.uint32), np.array(SHIFTS, np.uint32)
    f = np.array(FLOATS, np.float32)
    a, v = np.array(SORTED, np.float32), np.array(QUERIES, np.float32)
    halves = np.array([0.5, 1.5, -0.5, 2.5], np.float32)
    n7, d7 = np.array([-7, 7, -7], np.int32), np.array([2, -2, 0], np.int32)
    return {
        "searchsorted left": (jnp.searchsorted, a, v),
        "searchsorted right": (lambda a, v: jnp.searchsorted(a, v, side="right"), a, v),
        "digitize": (jnp.digitize, np.array([0.5, np.nan, 3.0], np.float32),
                     np.array([0.0, 1.0, 2.0], np.float32)),
        "top_k": (lambda f: lax.top_k(f, 7), f),
        "sort": (lax.sort, f), "argsort": (jnp.argsort, f),
        "sort descending": (lambda f: jnp.sort(f, descending=True), f),
        "unique": (jnp.unique, f),
        "argmax": (jnp.argmax, f), "argmin": (jnp.argmin, f),
        "median": (jnp.median, f), "cummax": (lax.cummax, f),
        "max": (lambda f: lax.max(f, jnp.zeros(7)), f), "fmax": (lambda f: jnp.fmax(f, 0.0), f),
        "clip": (lambda f: jnp.clip(f, -1, 1), f), "sign": (jnp.sign, f),
        "nan_to_num": (jnp.nan_to_num, f),
        "shift_left": (lax.shift_left, i, s),
        "shift_right_arithmetic": (lax.shift_right_arithmetic, i, s),
        "shift_right_logical": (lax.shift_right_logical, i, s),
        "unsigned shifts": (lambda u, us: (lax.shift_left(u, us), lax.shift_right_logical(u, us),
                                           lax.shift_right_arithmetic(u, us)), u, us),
        "jnp shifts": (lambda i, s: (jnp.left_shift(i, s), jnp.right_shift(i, s)), i, s),
        "float to int32": (lambda x: lax.convert_element_type(x, jnp.int32),
                           np.array([3e9, -3e9, 2.7, -2.7, np.inf], np.float32)),
        "float to uint32": (lambda x: lax.convert_element_type(x, jnp.uint32),
                            np.array([-1.0, 5e9, 2.7], np.float32)),
        "rem": (lax.rem, n7, d7),
        "div by zero": (lax.div, n7, np.zeros(3, np.int32)),
        "floor_divide of the least int32": (lambda x: jnp.floor_divide(x, -1),
                                            np.array([-2**31], np.int32)),
        "abs of the least int32": (jnp.abs, np.array([-2**31], np.int32)),
        "int8 overflow": (jnp.multiply, np.array([100], np.int8), np.array([3], np.int8)),
        "uint8 underflow": (jnp.subtract, np.array([1], np.uint8), np.array([2], np.uint8)),
        "integer power overflow": (jnp.power, np.array([2, 3], np.int32),
                                   np.array([31, 21], np.int32)),
        "round to even": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), halves),
        "round away from zero": (lax.round, halves),
        "jnp.round of halves": (jnp.round, halves),
        "clamp with min above max": (lambda x: lax.clamp(2.0, x, 1.0),
                                     np.arange(5, dtype=np.float32)),
        "float rem and mod": (lambda x, y: (lax.rem(x, y), jnp.mod(x, y)),
                              np.array([-7.5, 7.5], np.float32), np.array([2.0, -2.0], np.float32)),
        "population_count and clz": (lambda x: (lax.population_count(x), lax.clz(x)),
                                     np.array([0, 1, -1], np.int32)),
        "mean of uint32": (jnp.mean, np.array([2**32 - 1, 1], np.uint32)),
        "var with no degrees of freedom": (
            lambda x: (jnp.var(x, ddof=3), jnp.var(x, ddof=4), jnp.std(x[:, None], axis=0, ddof=5),
                       jnp.var(x, ddof=2, where=x > 0)), np.arange(3, dtype=np.float32)),
        "gradient of a var with no degrees of freedom": (
            lib.grad(lambda x: jnp.var(x, ddof=3)), np.arange(3, dtype=np.float32)),
    }


def _outcome(fun, args):
    try:
        return [(str(np.asarray(r).dtype), np.asarray(r).tolist())
                for r in real.tree.leaves(fun(*args))]
    except (TypeError, ValueError) as error:
        return type(error).__name__


# An array made inside jit is traced in JAX, and so are arguments in both: jnp.unique of an
# argument raises in both under jit (it needs size=); the others run as kernels here.
@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_edge_values_as_jax(name, how):
    def run(lib):
        fun, *args = _cases(lib)[name]
        return _outcome(lib.jit(fun) if how == "jit" else fun, args)

    tiered = ours.config.jax_from_numpy_tiered
    ours.config.update("jax_from_numpy_tiered", False)  # the kernel's result, not the tier's
    try:
        got = run(ours)
    finally:
        ours.config.update("jax_from_numpy_tiered", tiered)
    assert str(got) == str(run(real))  # (str: NaN compares equal to NaN)
