"""``jnp.pad``'s modes against JAX 0.10.2 (and NumPy, whose semantics both follow), eagerly and
under ``jit``: "linear_ramp", "maximum", "minimum", "mean" and "median" with their
``end_values`` and ``stat_length`` in every form, and ``reflect_type="odd"``, which were
missing; and the modes that were there, on several widths at once (an axis padded later pads
the corners), for integers and floats. Integer ramps are compared with NumPy's: JAX's are its
float32 values truncated, one less than NumPy's where the float is just below an integer (a
documented difference)."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")

X = np.array([[1, 2, 6, 3], [4, 9, 5, 7], [0, 3, 8, 2]], np.int32)
WIDTHS = {"pairs": ((1, 2), (3, 2)), "one int": 2, "wide": ((0, 5), (7, 1))}
MODES = {
    "mean": dict(mode="mean"), "median": dict(mode="median"),
    "maximum of 1": dict(mode="maximum", stat_length=1),
    "minimum per side": dict(mode="minimum", stat_length=((1, 2), (2, 1))),
    "mean of 2": dict(mode="mean", stat_length=2),
    "median of (3, 2)": dict(mode="median", stat_length=(3, 2)),
    "linear_ramp": dict(mode="linear_ramp"),
    "linear_ramp per side": dict(mode="linear_ramp", end_values=((10, 3), (7, 0))),
    "linear_ramp to 5": dict(mode="linear_ramp", end_values=5),
    "odd reflect": dict(mode="reflect", reflect_type="odd"),
    "odd symmetric": dict(mode="symmetric", reflect_type="odd"),
    "reflect": dict(mode="reflect"), "symmetric": dict(mode="symmetric"),
    "wrap": dict(mode="wrap"), "edge": dict(mode="edge"),
    "constant per side": dict(mode="constant", constant_values=((1, 2), (3, 4))),
}


# every mode and width eagerly; under jit (a kernel each, compiled) on the first widths only
CASES = [(mode, widths, how) for mode in MODES for widths in WIDTHS for how in ("eager", "jit")
         if how == "eager" or widths == "pairs"]


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("mode, widths, how", CASES)
def test_pad_as_jax(mode, widths, dtype, how):
    x, kwargs, width = X.astype(dtype), MODES[mode], WIDTHS[widths]
    pad = lambda x: ours.numpy.pad(x, width, **kwargs)  # noqa: E731
    got = np.asarray(ours.jit(pad)(x) if how == "jit" else pad(x))
    oracle = np.pad if dtype == "int32" and kwargs["mode"] == "linear_ramp" else real.numpy.pad
    expected = np.asarray(oracle(x, width, **kwargs))
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("mode", ["mean", "linear_ramp", "reflect", "median"])
def test_gradient_of_pad_as_jax(mode):
    options = {"mean": dict(stat_length=2), "linear_ramp": dict(end_values=1.0),
               "reflect": dict(reflect_type="odd"), "median": {}}[mode]

    def loss(jax):
        return lambda x: (jax.numpy.pad(x, ((2, 5), (3, 1)), mode=mode, **options) ** 2).sum()
    x = X.astype(np.float32)
    np.testing.assert_allclose(ours.grad(loss(ours))(x), real.grad(loss(real))(x), rtol=1e-5)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mode="mean", stat_length=0), ValueError, "stat_length of 0"),
    (dict(mode="maximum", stat_length=-1), ValueError, "non-negative"),
    (dict(mode="reflect", reflect_type="bad"), ValueError, "reflect_type"),
    (dict(mode="edge", stat_length=3), ValueError, "unsupported keyword"),
    (dict(mode="linear_ramp", end_values=(1, 2, 3)), ValueError, "does not fit"),
    (dict(mode="foo"), NotImplementedError, "not implemented"),
])
def test_pad_refuses_bad_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        ours.numpy.pad(ours.numpy.asarray(X), 2, **kwargs)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap", "maximum",
                                  "minimum", "mean", "median", "linear_ramp"])
def test_a_weakly_typed_array_stays_weak_as_in_jax(mode):
    """A probe of weak types found every mode but "constant" made ``jnp.arange(3) * 1.0``
    (a weak float32) strong, and ``triu`` and ``tril`` too: their zeros and padding blocks
    were strong, where JAX keeps the array's weak type."""
    def typed(lib):
        a = lib.numpy.arange(3) * 1.0
        square = lib.numpy.ones((2, 2), int) * 1.0
        return (lib.numpy.pad(a, 1, mode=mode).weak_type, lib.numpy.triu(square).weak_type,
                lib.numpy.tril(square).weak_type)

    assert typed(ours) == typed(real) == (True, True, True)
