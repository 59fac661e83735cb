"""``lax.bitcast_convert_type`` and ``Array.view`` against JAX 0.10.2. A bitcast to a narrower
type gave NumPy's shape here (the last dim stretched: f32[4] to u8[16]) where JAX adds a dim
(u8[4,4]), and to a wider one kept a dim of 1, silently wrong shapes; a bool was bitcast where
JAX refuses. ``view`` and ``clone`` were missing."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

F32 = np.arange(4, dtype=np.float32) - 1.5
BITCASTS = [
    (F32, np.uint8), (F32, np.int16), (F32, np.float16), (F32, np.int32),
    (np.arange(4, dtype=np.uint8).reshape(2, 2), np.uint16),
    (np.arange(8, dtype=np.int8).reshape(2, 4), np.float32),
    (np.ones((2, 3), "bfloat16"), np.int8),
    (np.array([True]), np.uint8),  # refused: bool
    (np.arange(3, dtype=np.uint8), np.uint16),  # refused: 3 is not the ratio
]


def _outcome(fun):
    try:
        out = fun()
    except (TypeError, ValueError) as error:
        return type(error).__name__
    return str(out.dtype), out.shape, np.asarray(out).tolist()


@pytest.mark.parametrize("case", range(len(BITCASTS)))
@pytest.mark.parametrize("how", ["eager", "jit"])
def test_bitcast_convert_type_as_jax(case, how):
    x, dtype = BITCASTS[case]

    def run(lib):
        f = lambda a: lib.lax.bitcast_convert_type(a, dtype)  # noqa: E731
        f = lib.jit(f) if how == "jit" else f
        return _outcome(lambda: f(lib.numpy.asarray(x)))

    assert run(ours) == run(real)


def test_bitcast_under_vmap_and_grad_as_jax():
    for lib in (ours, real):
        out = lib.vmap(lambda a: lib.lax.bitcast_convert_type(a, np.uint8))(F32)
        assert out.shape == (4, 4)
        g = lib.grad(lambda a: lib.lax.bitcast_convert_type(a, np.int32).astype(
            np.float32).sum())(F32)
        np.testing.assert_array_equal(np.asarray(g), np.zeros(4, np.float32))


VIEWS = [
    "x.view()", "x.view(jnp.int32)", "x.view(jnp.uint8)", "x.view(jnp.float16)",
    "jnp.arange(4, dtype=jnp.uint8).view(jnp.uint16)",
    "jnp.arange(3, dtype=jnp.uint8).view(jnp.uint16)",
    "jnp.array([True, False]).view(jnp.uint8)",
    "jnp.ones((2, 2), jnp.float32).view(jnp.int16)", "jnp.float32(1).view(jnp.int32)",
    "x.clone()", "jnp.array([1, 2, 0], jnp.uint8).view(bool)",
    "jnp.array([1 + 2j], jnp.complex64).view(jnp.float32)", "x.view(jnp.complex64)",
    "jnp.arange(8, dtype=jnp.int8).reshape(2, 4).view(jnp.float32)",
    "lib.jit(lambda a: a.view(jnp.uint8))(x)",
    "lib.vmap(lambda a: a.view(jnp.int16))(x.reshape(2, 2))",
]


@pytest.mark.parametrize("call", VIEWS)
def test_view_as_jax(call):
    def run(lib):
        jnp, x = lib.numpy, lib.numpy.asarray(F32 + 1.5)
        return _outcome(lambda: eval(call, {"lib": lib, "jnp": jnp, "x": x}))

    assert run(ours) == run(real)


def test_view_refuses_a_type_as_jax():
    for lib in (ours, real):
        with pytest.raises(NotImplementedError):
            lib.numpy.ones(2).view(np.int32, type=np.ndarray)
