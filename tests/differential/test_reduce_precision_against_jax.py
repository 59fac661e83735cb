"""``lax.reduce_precision`` against JAX 0.10.2: bit for bit on every float dtype and a range of
narrow formats, its derivatives (JAX treats it as linear: the tangent is rounded the same
way), its jaxpr, and under ``jit`` and ``vmap``. It was missing (an AttributeError)."""

import ml_dtypes
import numpy as np
import pytest

import stage4_sharding as jax

real = pytest.importorskip("jax")

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]
FORMATS = [(5, 10), (8, 7), (8, 23), (11, 52), (4, 3), (5, 2), (1, 0), (2, 1), (3, 0), (15, 60)]


def _values(dtype):
    """Specials (zeros, infinities, NaN, the largest, the smallest normal and subnormal,
    float16's rounding edges, ties) and random floats over the whole exponent range, each
    with its neighbour of the other mantissa parity."""
    info = ml_dtypes.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(info.max),
               float(info.tiny), float(info.smallest_subnormal), 65504.0, 65520.0, 6e-8, 1.5,
               2.5, 1.0009765625, 1.00048828125, -1.00146484375]
    rng = np.random.default_rng(0)
    spread = rng.standard_normal(1500) * 10.0 ** rng.integers(-45, 38, 1500)
    with np.errstate(over="ignore"):
        v = np.concatenate([special, spread]).astype(dtype)
    bits = v.view(f"uint{8 * np.dtype(dtype).itemsize}")
    return np.concatenate([v, (bits ^ 1).view(dtype)])


def _same_bits(a, b):
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return bool(np.all(nan | (a.view(np.uint8).reshape(a.size, -1)
                              == b.view(np.uint8).reshape(b.size, -1)).all(axis=1)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("exponent_bits, mantissa_bits", FORMATS)
def test_the_bits_are_jax_s(dtype, exponent_bits, mantissa_bits):
    v = _values(dtype)
    ours = jax.lax.reduce_precision(v, exponent_bits, mantissa_bits)
    theirs = real.lax.reduce_precision(v, exponent_bits, mantissa_bits)
    assert ours.dtype == theirs.dtype
    assert _same_bits(ours, theirs)


def test_jit_and_vmap_equal_eager():
    v = _values(np.float32).reshape(-1, 2)
    eager = jax.lax.reduce_precision(v, 5, 10)
    assert _same_bits(jax.jit(lambda a: jax.lax.reduce_precision(a, 5, 10))(v), eager)
    assert _same_bits(jax.vmap(lambda a: jax.lax.reduce_precision(a, 5, 10))(v), eager)


def _derivatives(lib):
    f = lambda a: lib.lax.reduce_precision(a * 1.3, 5, 2)  # noqa: E731
    return (float(lib.grad(f)(1.0)), [float(t) for t in lib.jvp(f, (1.0,), (1.3,))],
            np.asarray(lib.jacfwd(f)(np.array([1.0, 2.0], np.float32))).tolist(),
            float(lib.grad(lambda a: lib.lax.reduce_precision(a, 5, 2) ** 2)(1.3)))


def test_derivatives_as_jax():
    assert _derivatives(jax) == _derivatives(real)


def _jaxprs(lib):
    f = lambda a: lib.lax.reduce_precision(a, 5, 10)  # noqa: E731
    return [str(lib.make_jaxpr(g)(np.float32(1.0))) for g in (f, lib.grad(f))]


def test_the_jaxpr_and_the_type_as_jax():
    assert _jaxprs(jax) == _jaxprs(real)
    ours, theirs = jax.lax.reduce_precision(1.0, 8, 23), real.lax.reduce_precision(1.0, 8, 23)
    assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
@pytest.mark.parametrize("args, error, match", [
    ((np.float32(1.0), 0, 10), ValueError, "exponent_bits must be positive"),
    ((np.float32(1.0), 5, -1), ValueError, "mantissa_bits must be non-negative"),
    ((np.int32(1), 5, 10), TypeError, "reduce_precision does not accept dtype int32"),
    ((np.float32(1.0), 5.5, 10), TypeError, "cannot be interpreted as an integer"),
])
def test_bad_arguments_raise_as_jax(lib, args, error, match):
    with pytest.raises(error, match=match):
        lib.lax.reduce_precision(*args)
