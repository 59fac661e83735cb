"""``jnp.fft`` against JAX's: values, dtypes and errors of every function over lengths, axes
and norms; gradients numerically (real-valued losses, to order 2) and against JAX's; the
laws of the ``fft`` primitive: jit equals eager, vmap equals a loop, sharded equals
unsharded."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

import stage4_sharding.numpy as jnp  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402
from stage4_sharding.sharding import NamedSharding  # noqa: E402
from stage4_sharding.sharding import PartitionSpec as P  # noqa: E402

import stage4_sharding as ours  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 6)).astype(np.float32)
Z = (RNG.standard_normal((3, 4, 6)) + 1j * RNG.standard_normal((3, 4, 6))).astype(np.complex64)


def _same(mine, theirs, tol=2e-5):
    assert mine.dtype == theirs.dtype, (mine.dtype, theirs.dtype)
    assert mine.shape == theirs.shape, (mine.shape, theirs.shape)
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=tol, atol=tol)


ONE_D = [dict(), dict(n=4), dict(n=9), dict(axis=0), dict(axis=1, n=3), dict(norm="ortho"),
         dict(norm="forward", axis=-2), dict(norm="backward")]


@pytest.mark.parametrize("kwargs", ONE_D, ids=str)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_one_dimensional_transforms(name, kwargs):
    data = Z if name in ("ifft", "irfft", "hfft") else X
    _same(getattr(jnp.fft, name)(data, **kwargs), getattr(jjnp.fft, name)(data, **kwargs))
    if name in ("fft", "ifft", "hfft", "ihfft"):  # complex input, and an integer one
        if name == "ihfft":  # real input only, as rfft
            return
        _same(getattr(jnp.fft, name)(Z, **kwargs), getattr(jjnp.fft, name)(Z, **kwargs))
        ints = np.arange(24, dtype=np.int32).reshape(4, 6)
        _same(getattr(jnp.fft, name)(ints), getattr(jjnp.fft, name)(ints))


N_D = [dict(), dict(axes=(0, 2)), dict(s=(2, 5)), dict(s=(4, 3, 8), norm="ortho"),
       dict(axes=(-1, 0), s=(5, 2), norm="forward"), dict(axes=(1,))]


@pytest.mark.parametrize("kwargs", N_D, ids=str)
@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2",
                                  "rfft2", "irfft2"])
def test_n_dimensional_transforms(name, kwargs):
    if name.endswith("2") and "axes" in kwargs and len(kwargs["axes"]) != 2:
        return
    if name.endswith("2") and "s" in kwargs and len(kwargs["s"]) != 2:
        return
    data = Z if name.startswith(("ifft", "irfft")) else X
    _same(getattr(jnp.fft, name)(data, **kwargs), getattr(jjnp.fft, name)(data, **kwargs),
          tol=1e-4)


def test_frequencies_and_shifts():
    for n, d in [(8, 1.0), (7, 0.5), (1, 2.0)]:
        _same(jnp.fft.fftfreq(n, d), jjnp.fft.fftfreq(n, d))
        _same(jnp.fft.rfftfreq(n, d), jjnp.fft.rfftfreq(n, d))
    for axes in [None, 0, (1, 2), -1]:
        _same(jnp.fft.fftshift(X, axes), jjnp.fft.fftshift(X, axes))
        _same(jnp.fft.ifftshift(X, axes), jjnp.fft.ifftshift(X, axes))


@pytest.mark.parametrize("call, error", [
    (lambda fft: fft.fft(X, norm="bogus"), ValueError),
    (lambda fft: fft.fftn(X, s=(2, 3), axes=(0,)), ValueError),
    (lambda fft: fft.fftn(X, axes=(0, 0)), ValueError),
    (lambda fft: fft.fft(X, axis=3), ValueError),
    (lambda fft: fft.rfft(Z), (TypeError, ValueError)),
    (lambda fft: fft.fft(X, n=-1), ValueError),
    (lambda fft: fft.hfft(Z, norm="bogus"), ValueError),
    (lambda fft: fft.ihfft(Z), (TypeError, ValueError)),
])
def test_errors_match_jax(call, error):
    with pytest.raises(error):
        call(jjnp.fft)
    with pytest.raises(error):
        call(jnp.fft)


def test_lax_fft_and_its_jaxpr():
    x = jnp.asarray(X)
    assert ours.lax.fft(x, "rfft", (6,)).shape == (3, 4, 4)
    text = str(ours.make_jaxpr(lambda v: ours.lax.fft(v, ours.lax.FftType.RFFT, (4, 6)))(x))
    assert "fft[fft_lengths=(4, 6) fft_type=2]" in text
    with pytest.raises(ValueError, match="FFT type"):
        ours.lax.fft(x, "dft", (6,))


# --- gradients: numerically (real-valued losses), and against JAX's ---------------------

LOSSES = {
    "fft": lambda lib, x: lib.sum(lib.abs(lib.fft.fft(x, axis=1)) ** 2),
    "ifft ortho": lambda lib, x: lib.sum(lib.real(lib.fft.ifft(x * (1 + 2j), norm="ortho"))),
    "rfft": lambda lib, x: lib.sum(lib.imag(lib.fft.rfft(x)) * lib.arange(4.0)),
    "irfft": lambda lib, x: lib.sum(lib.fft.irfft(lib.fft.rfft(x) * 1j, n=6) ** 3),
    "irfft odd": lambda lib, x: lib.sum(lib.sin(lib.fft.irfft(lib.fft.fft(x) * 0.5, n=5))),
    "rfftn": lambda lib, x: lib.sum(lib.abs(lib.fft.rfftn(x, axes=(1, 0)))),
    "hfft": lambda lib, x: lib.sum(lib.fft.hfft(x * (1 - 2j), n=7) ** 2),
    "ihfft ortho": lambda lib, x: lib.sum(lib.imag(lib.fft.ihfft(x, norm="ortho")) ** 2),
    "fft2 forward": lambda lib, x: lib.sum(lib.angle(lib.fft.fft2(x, norm="forward") + 1.0)),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_gradients_numerically_and_against_jax(name):
    loss = LOSSES[name]
    x = X[0]
    check_grads(lambda v: loss(jnp, v), (jnp.asarray(x),), order=2, atol=5e-2, rtol=5e-2)
    _same(ours.grad(lambda v: loss(jnp, v))(jnp.asarray(x)),
          jax.grad(lambda v: loss(jjnp, v))(x), tol=2e-3)


def test_gradients_of_complex_inputs_follow_jax_convention():
    """grad of a real loss of a complex input is conj(dL/dz*)-style, as JAX defines it."""
    z = Z[0, 0]
    for loss in [lambda lib, v: lib.sum(lib.abs(lib.fft.fft(v)) ** 2),
                 lambda lib, v: lib.sum(lib.real(lib.fft.ifft(v) * (2 - 1j))),
                 lambda lib, v: lib.sum(lib.fft.irfft(v, n=10)),
                 lambda lib, v: lib.sum(lib.imag(lib.exp(v) * v) + lib.abs(v))]:
        _same(ours.grad(lambda v: loss(jnp, v))(jnp.asarray(z)),
              jax.grad(lambda v: loss(jjnp, v))(z), tol=1e-3)


# --- laws: jit == eager, vmap == loop, sharded == unsharded -------------------------------


def _program(x, z):
    return (jnp.fft.fft(x), jnp.fft.ifftn(z, axes=(-2, -1)), jnp.fft.rfft(x, n=8),
            jnp.fft.irfft(z, axis=1), jnp.abs(z) + jnp.real(z) * jnp.imag(z))


def test_jit_equals_eager():
    x, z = jnp.asarray(X), jnp.asarray(Z)
    for jitted, eager in zip(ours.jit(_program)(x, z), _program(x, z)):
        _same(jitted, eager, tol=1e-6)


def test_vmap_equals_loop():
    x, z = jnp.asarray(X), jnp.asarray(Z)
    batched = ours.vmap(_program, in_axes=(1, 0))(x[:, :3], z)
    loop = [_program(x[:, i], z[i]) for i in range(3)]
    for k, got in enumerate(batched):
        _same(got, jnp.stack([outs[k] for outs in loop]), tol=1e-5)


def test_grad_of_jit_equals_eager_and_vmap_of_grad():
    loss = lambda v: jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 2)
    x = jnp.asarray(X[0])
    _same(ours.jit(ours.grad(loss))(x), ours.grad(loss)(x), tol=1e-5)
    per_row = ours.vmap(ours.grad(loss))(x)
    _same(per_row, jnp.stack([ours.grad(loss)(row) for row in x]), tol=1e-5)


def test_sharded_equals_unsharded():
    mesh = ours.make_mesh((8,), ("d",))
    x = RNG.standard_normal((8, 6)).astype(np.float32)
    sharded = ours.device_put(x, NamedSharding(mesh, P("d")))
    f = ours.jit(lambda v: (jnp.fft.fft(v), jnp.fft.irfft(jnp.fft.rfft(v), n=6)))
    for got, want in zip(f(sharded), f(x)):
        _same(got, want, tol=1e-6)
    assert "8@d" in str(ours.typeof(f(sharded)[0]))
    with pytest.raises(Exception, match="whole"):  # the transformed dim split: refused
        ours.jit(lambda v: jnp.fft.fft(v, axis=0))(sharded)
