"""``jax.scipy.signal``'s convolutions against JAX 0.10.2 (the module was missing):
``convolve``, ``correlate`` and ``fftconvolve`` in every mode, on 1-D, 2-D and 3-D operands,
integers, complex numbers and a second operand larger than the first ("valid" swaps them);
``convolve2d`` and ``correlate2d`` (whose "same" is centred as SciPy's, unlike
``correlate``'s); eagerly and under ``jit``; ``fftconvolve`` along some axes; a gradient."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")
import jax.scipy.signal as theirs  # noqa: E402
import stage4_sharding.scipy.signal as signal  # noqa: E402

RNG = np.random.default_rng(0)
OPERANDS = {
    "matrices": (RNG.standard_normal((6, 5)), RNG.standard_normal((3, 2))),
    "vectors": (RNG.standard_normal(9), RNG.standard_normal(4)),
    "the second larger": (RNG.standard_normal(3), RNG.standard_normal(5)),
    "integers": (np.arange(5), np.arange(3)),
    "complex": (RNG.standard_normal(6) + 1j * RNG.standard_normal(6),
                RNG.standard_normal(3) - 1j * RNG.standard_normal(3)),
    "3-D": (RNG.standard_normal((4, 5, 6)), RNG.standard_normal((2, 3, 2))),
}
DTYPES = {"integers": np.int32, "complex": np.complex64}


# every case eagerly; under jit (kernels to compile) the matrices only
CASES = [(operands, mode, how) for operands in OPERANDS for mode in ("full", "same", "valid")
         for how in ("eager", "jit") if how == "eager" or operands == "matrices"]


@pytest.mark.parametrize("operands, mode, how", CASES)
def test_convolutions_as_jax(operands, mode, how):
    a, b = (x.astype(DTYPES.get(operands, np.float32)) for x in OPERANDS[operands])
    names = ["convolve", "correlate", "fftconvolve"]
    names += ["convolve2d", "correlate2d"] if a.ndim == 2 else []
    for name in names:
        expected = np.asarray(getattr(theirs, name)(a, b, mode=mode))
        fun = lambda a, b: getattr(signal, name)(a, b, mode=mode)  # noqa: E731
        got = np.asarray(ours.jit(fun)(a, b) if how == "jit" else fun(a, b))
        assert (got.shape, got.dtype) == (expected.shape, expected.dtype), name
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=name)


def test_fftconvolve_along_axes_and_a_gradient_as_jax():
    x, k = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 8), (3, 3)))
    np.testing.assert_allclose(signal.fftconvolve(x, k, axes=[1]),
                               theirs.fftconvolve(x, k, axes=[1]), atol=1e-5)
    a, b = (x.astype(np.float32) for x in OPERANDS["matrices"])
    np.testing.assert_allclose(
        ours.grad(lambda a: (signal.convolve(a, b, mode="same") ** 2).sum())(a),
        real.grad(lambda a: (theirs.convolve(a, b, mode="same") ** 2).sum())(a), atol=1e-4)


@pytest.mark.parametrize("call, error", [
    (lambda s: s.convolve(np.ones(3), np.ones((2, 2))), ValueError),
    (lambda s: s.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap"),
     NotImplementedError),
])
def test_signal_refuses_as_jax(call, error):
    for module in (theirs, signal):
        with pytest.raises(error):
            call(module)
