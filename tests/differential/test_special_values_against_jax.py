"""Special values (signed zeros, NaN, values near the largest float, negative integer powers)
through functions whose eager impl, generated kernel or composition once gave a value other
than JAX's. Eager and jit (the CPU kernel: the suite compiles before the first call) are
compared with JAX: NaNs and signs (of zeros too) exactly, numbers within 4 ulps."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

F = np.array([-0.0, 0.0, 1e-30, -1e-30, 0.5, -0.5, 0.7, 3.0, -3.0, 20.0, 95.0, 3.4e38,
              -3.4e38, np.inf, -np.inf, np.nan], np.float32)
INTS = np.array([0, 1, -1, 2, -2, 3, 7, -7, 2**31 - 1, -2**31], np.int32)
POWERS = np.array([-3, -2, -1, 0, 1, 2, 3, 31, 32, -31], np.int32)

CASES = {
    # NumPy's sign of -0.0 is 0.0 (eager once gave it); JAX's is -0.0.
    "sign": (lambda j, x: j.numpy.sign(x), (F,)),
    "sign_int": (lambda j, x: j.numpy.sign(x), (INTS,)),
    # The kernel's tanh once made -0.0 into 0.0 (x + x * x**2 * p).
    "tanh": (lambda j, x: j.numpy.tanh(x), (F,)),
    # heaviside(NaN, x2) once gave x2: NaN is neither below nor above 0.
    "heaviside": (lambda j, x, y: j.numpy.heaviside(x, y),
                  (np.repeat(F, 3), np.tile(np.array([0.5, -0.0, np.nan], np.float32), 16))),
    # i0 of the largest floats once gave NaN (2 pi x overflowed): JAX's is inf.
    "i0": (lambda j, x: j.numpy.i0(x), (F[F == F],)),
    # An integer to a negative power, for the bases where JAX's is the true power truncated
    # (see test_documented_differences.py for the others): eager raised NumPy's ValueError,
    # and the kernel's power of 0 was -2**31. Powers up to 63 wrap around in both.
    "power_int": (lambda j, x, y: j.numpy.power(x, y),
                  (np.repeat(INTS[:5], 10), np.tile(POWERS, 5))),
    "power_int_operator": (lambda j, x, y: x ** y, (np.repeat(INTS[:5], 10), np.tile(POWERS, 5))),
    "power_int_wraps": (lambda j, x, y: j.numpy.power(x, y),
                        (np.repeat(INTS[5:], 4), np.tile(POWERS[5:9], 5))),
}


def _check(got, want, what: str) -> None:
    """Integers equal; floats NaN where JAX's are, else of the same sign (zeros too) and
    within 4 ulps (the kernels' and NumPy's transcendental functions are not XLA's)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, what
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]),
                                  err_msg=what)
    np.testing.assert_array_max_ulp(got[numbers], want[numbers], maxulp=4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values_as_jaxs(name):
    f, args = CASES[name]
    want = jax.jit(lambda *a: f(jax, *a))(*args)
    _check(f(oj, *map(oj.numpy.asarray, args)), want, "eager")
    _check(oj.jit(lambda *a: f(oj, *a))(*args), want, "jit")


@pytest.mark.parametrize("call", [
    lambda j: j.numpy.power(j.numpy.arange(3), -1),
    lambda j: j.numpy.arange(6).reshape(2, 3) ** -2,
    lambda j: j.lax.integer_pow(j.numpy.arange(3, dtype=j.numpy.uint8), -1),
    lambda j: j.lax.reciprocal(j.numpy.arange(3)),
])
def test_integer_to_a_negative_integer_power_is_jaxs_type_error(call):
    with pytest.raises(TypeError) as theirs:
        call(jax)
    with pytest.raises(TypeError) as ours:
        call(oj)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
        oj.jit(lambda: call(oj))()
