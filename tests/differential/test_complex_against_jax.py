"""Complex numbers against JAX: creation, the parts (real, imag, conj, abs, angle),
arithmetic and its promotion, gradients in JAX's convention, and jit (which runs complex
programs on the interpreter backend, and says so)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

import stage3_vmap.numpy as jnp  # noqa: E402

import stage3_vmap as ours  # noqa: E402

RNG = np.random.default_rng(1)
Z = (RNG.standard_normal(5) + 1j * RNG.standard_normal(5)).astype(np.complex64)
W = (RNG.standard_normal(5) + 1j * RNG.standard_normal(5)).astype(np.complex64)
X = RNG.standard_normal(5).astype(np.float32)


def _same(mine, theirs, tol=1e-6):
    assert mine.dtype == theirs.dtype, (mine.dtype, theirs.dtype)
    assert mine.weak_type == theirs.weak_type, (mine, theirs)
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=tol, atol=tol)


@pytest.mark.parametrize("value", [1 + 2j, [1j, 2.0], 3j, np.complex128(1 - 1j)], ids=str)
def test_creation(value):
    _same(jnp.asarray(value), jjnp.asarray(value))
    _same(jnp.array(value, jnp.complex64), jjnp.array(value, jjnp.complex64))
    _same(jnp.complex64(value), jjnp.complex64(value))


UNARY = {
    "real": lambda lib, z: lib.real(z), "imag": lambda lib, z: lib.imag(z),
    "conj": lambda lib, z: lib.conj(z), "conjugate": lambda lib, z: lib.conjugate(z),
    "abs": lambda lib, z: lib.abs(z), "angle": lambda lib, z: lib.angle(z),
    "angle deg": lambda lib, z: lib.angle(z, deg=True),
    "exp": lambda lib, z: lib.exp(z), "log": lambda lib, z: lib.log(z),
    "sqrt": lambda lib, z: lib.sqrt(z), "sin": lambda lib, z: lib.sin(z),
    "tanh": lambda lib, z: lib.tanh(z), "neg": lambda lib, z: -z,
    "square": lambda lib, z: z * z, "sum": lambda lib, z: lib.sum(z),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    fun = UNARY[name]
    _same(fun(jnp, jnp.asarray(Z)), fun(jjnp, jjnp.asarray(Z)), tol=1e-5)
    if name not in ("log", "sqrt", "exp", "sin", "tanh", "sum", "neg", "square"):
        for value in [X, 2.5, -3, 1 + 1j]:  # real arrays and Python scalars too
            _same(fun(jnp, value if np.isscalar(value) else jnp.asarray(value)),
                  fun(jjnp, value), tol=1e-5)


@pytest.mark.parametrize("other", ["W", "X", "2", "2.5", "1j", "int8", "float16"])
def test_binary_arithmetic_and_promotion(other):
    value = {"W": W, "X": X, "2": 2, "2.5": 2.5, "1j": 1j,
             "int8": np.arange(5, dtype=np.int8), "float16": X.astype(np.float16)}[other]
    mine_other = jnp.asarray(value) if isinstance(value, np.ndarray) else value
    z, jz = jnp.asarray(Z), jjnp.asarray(Z)
    for op in [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
               lambda a, b: a / b, lambda a, b: b * a, lambda a, b: a == b]:
        _same(op(z, mine_other), op(jz, value), tol=1e-5)


LOSSES = {
    "abs squared": lambda lib, z: lib.sum(lib.abs(z) ** 2),
    "abs": lambda lib, z: lib.sum(lib.abs(z)),
    "real of product": lambda lib, z: lib.sum(lib.real(z * z * (1 - 2j))),
    "imag of exp": lambda lib, z: lib.sum(lib.imag(lib.exp(z))),
    "angle": lambda lib, z: lib.sum(lib.angle(z)),
    "conj": lambda lib, z: lib.sum(lib.real(lib.conj(z) * (2 + 1j))),
    "log and div": lambda lib, z: lib.sum(lib.abs(lib.log(z) / (z + 3))),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_gradients_follow_jax_convention(name):
    """grad of a real loss of complex z: JAX's convention (for |z|^2 at 3+4j, 6-8j)."""
    loss = LOSSES[name]
    _same(ours.grad(lambda z: loss(jnp, z))(jnp.asarray(Z)),
          jax.grad(lambda z: loss(jjnp, z))(Z), tol=1e-4)


def test_gradient_of_complex_from_real_parts_and_second_order():
    def loss(lib, lax, x, y):
        return lib.sum(lib.abs(lax.complex(x, y) ** 3))
    args = (X, X[::-1].copy())
    mine = ours.grad(lambda x, y: loss(jnp, ours.lax, x, y), argnums=(0, 1))(*args)
    theirs = jax.grad(lambda x, y: loss(jjnp, jax.lax, x, y), argnums=(0, 1))(*args)
    for m, t in zip(mine, theirs):
        _same(m, t, tol=1e-4)
    ours.check_grads(lambda x, y: loss(jnp, ours.lax, x, y), args, order=2, atol=2e-2,
                     rtol=2e-2)


def test_jvp_of_abs_of_complex():
    z, t = jnp.asarray(Z), jnp.asarray(W)
    mine = ours.jvp(jnp.abs, (z,), (t,))
    theirs = jax.jvp(jjnp.abs, (Z,), (W,))
    for m, e in zip(mine, theirs):
        _same(m, e, tol=1e-5)


def test_grad_of_complex_output_is_an_error():
    with pytest.raises(TypeError, match="real-valued outputs.*complex64"):
        ours.grad(lambda z: jnp.sum(z * z))(jnp.asarray(Z))


def test_jit_vmap_equal_eager_and_fall_back_clearly():
    def f(z, x):
        return jnp.abs(z * x + 1j), jnp.real(jnp.exp(z)), jnp.conj(z) / (z + 2), jnp.angle(z)
    z, x = jnp.asarray(Z), jnp.asarray(X)
    for got, want in zip(ours.jit(f)(z, x), f(z, x)):
        _same(got, want, tol=1e-6)
    for got, want in zip(ours.vmap(f)(z, x), f(z, x)):
        _same(got, want, tol=1e-6)
    assert "complex64" in ours.jit(f).lower(z, x).compile().as_text()
    text = str(ours.make_jaxpr(lambda z: jnp.real(z) + jnp.imag(z))(z))
    assert "real" in text and "imag" in text and "c64[5]" in text


def test_lax_parts_require_complex_under_jit():
    with pytest.raises(TypeError, match="real requires"):
        ours.jit(ours.lax.real)(jnp.asarray(X))
    with pytest.raises(TypeError, match="complex requires"):
        ours.jit(ours.lax.complex)(jnp.asarray(Z), jnp.asarray(Z))


@pytest.mark.parametrize("call", ["jnp.vdot(z, w)", "jnp.vdot(w, x)", "jnp.var(z)",
                                  "jnp.std(z, ddof=1)", "jnp.var(jnp.stack([z, w]), axis=1)"])
def test_vdot_conjugates_and_a_variance_is_real(call):
    """vdot conjugates its first operand; the variance of complex numbers is the mean of
    |x - mean|², a real number (both were silently wrong: no conjugate, a complex result)."""
    mine = eval(call, {"jnp": jnp, "z": jnp.asarray(Z), "w": jnp.asarray(W), "x": X})
    theirs = eval(call, {"jnp": jjnp, "z": jjnp.asarray(Z), "w": jjnp.asarray(W), "x": X})
    _same(mine, theirs, tol=1e-5)


@pytest.mark.parametrize("call", ["jnp.cumsum(z)", "jnp.cumprod(z)",
                                  "jnp.nancumsum(jnp.where(jnp.abs(z) > 1, jnp.nan, z))",
                                  "jnp.take(z, jnp.array([0, 7]), mode='fill')",
                                  "jnp.take(z, jnp.array([4, 1, 2]))"])
def test_running_sums_and_gathers_of_complex_numbers(call):
    """Running sums accept complex numbers (they were refused), a NaN in either part counts
    as NaN for nancumsum, and a gather's fill is NaN + 0j (it raised)."""
    mine = eval(call, {"jnp": jnp, "z": jnp.asarray(Z)})
    theirs = eval(call, {"jnp": jjnp, "z": jjnp.asarray(Z)})
    _same(mine, theirs, tol=1e-5)


@pytest.mark.parametrize("call", [
    "jnp.argmax(z)", "jnp.argmin(z)", "jnp.clip(z, 0, 1)", "jnp.floor(z)", "jnp.ceil(z)",
    "jnp.trunc(z)", "jnp.signbit(z)", "jnp.copysign(z, x)", "jnp.heaviside(z, x)",
    "jnp.hypot(z, x)", "jnp.isposinf(z)", "jnp.isneginf(z)", "jnp.frexp(z)",
    "jnp.ldexp(z, jnp.ones(5, jnp.int32))", "jnp.median(z)", "jnp.percentile(z, 50)",
    "jnp.quantile(z, 0.5)"])
def test_what_needs_an_order_a_sign_or_an_exponent_refuses_complex_numbers(call):
    """These computed something for complex input (NumPy's lexicographic order, the real
    part's sign...) where JAX raises: now the same error type, with our message."""
    with pytest.raises(Exception) as theirs:
        eval(call, {"jnp": jjnp, "z": jjnp.asarray(Z), "x": X})
    with pytest.raises(theirs.type, match="not defined for complex numbers"):
        eval(call, {"jnp": jnp, "z": jnp.asarray(Z), "x": X})


@pytest.mark.parametrize("decimals", [0, 1, 2])
def test_round_rounds_each_part_of_a_complex_number(decimals):
    """It returned complex numbers unrounded. (With decimals, the last bit may differ, as
    for real numbers: JAX scales back by another route.)"""
    _same(jnp.round(jnp.asarray(Z * 3), decimals), jjnp.round(jjnp.asarray(Z * 3), decimals))


def _through_programs(jax, jnp):
    """Complex values flowing through programs (jit, checkpoint, cond, scan, loops,
    custom rules) under each mode of differentiation. Each gave a zero derivative here
    (the programs' rules treated only floats as having tangents) or raised."""
    lax, x, z = jax.lax, jnp.float32(0.7), jnp.complex64(0.3 + 0.4j)

    def sq(v):
        return v * v

    @jax.custom_jvp
    def cube(v):
        return v * v * v

    @cube.defjvp
    def cube_jvp(primals, tangents):
        return cube(primals[0]), 3 * jnp.conj(primals[0]) * tangents[0]  # (not holomorphic)

    def loop(c, _):
        return c * c, None
    return {
        "grad through jit": lambda: jax.grad(lambda x: jnp.abs(jax.jit(sq)(x * (1 + 1j))))(x),
        "grad of |jit|^2 at a complex point": lambda: jax.grad(
            lambda z: jnp.abs(jax.jit(sq)(z)) ** 2)(z),
        "grad through checkpoint": lambda: jax.grad(
            lambda x: jnp.abs(jax.checkpoint(sq)(x * (1 + 1j))))(x),
        "grad through cond": lambda: jax.grad(lambda x: jnp.abs(
            lax.cond(x > 0, sq, lambda v: v, x * (1 + 1j))))(x),
        "grad through scan": lambda: jax.grad(lambda x: jnp.abs(
            lax.scan(loop, x * (1 + 1j), None, length=2)[0]))(x),
        "grad through a remat scan": lambda: jax.grad(lambda x: jnp.abs(
            lax.scan(jax.checkpoint(loop), x * (1 + 1j), None, length=2)[0]))(x),
        "jvp through fori_loop": lambda: jax.jvp(lambda x: lax.fori_loop(
            0, 2, lambda i, c: c * c, x * (1 + 1j)), (x,), (jnp.float32(1),))[1],
        "linearize": lambda: jax.linearize(sq, z)[1](z),
        "jvp of jit": lambda: jax.jvp(jax.jit(sq), (z,), (z,))[1],
        "vjp of jit": lambda: jax.vjp(jax.jit(sq), z)[1](z),
        "holomorphic grad of jit": lambda: jax.grad(jax.jit(sq), holomorphic=True)(z),
        "jit of grad of jit": lambda: jax.jit(jax.grad(lambda z: jnp.real(jax.jit(sq)(z))))(z),
        "vmap of grad": lambda: jax.vmap(jax.grad(lambda z: jnp.abs(jax.jit(sq)(z))))(
            jnp.stack([z, 2 * z])),
        "custom_jvp, forward": lambda: jax.jvp(cube, (z,), (z,))[1],
        "custom_jvp, reverse": lambda: jax.grad(lambda z: jnp.real(cube(z)))(z),
    }


@pytest.mark.parametrize("name", list(_through_programs(ours, jnp)))
def test_complex_derivatives_through_programs(name):
    mine = _through_programs(ours, jnp)[name]()
    theirs = _through_programs(jax, jjnp)[name]()
    for m, t in zip(jax.tree.leaves(mine), jax.tree.leaves(theirs)):
        assert np.asarray(m).dtype == np.asarray(t).dtype
        np.testing.assert_allclose(np.asarray(m), np.asarray(t), rtol=1e-5, atol=1e-6)
        assert np.any(np.asarray(t) != 0)  # (each case has a nonzero derivative)
