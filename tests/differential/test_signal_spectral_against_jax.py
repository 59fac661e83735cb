"""``jax.scipy.signal``'s spectral functions against JAX 0.10.2 (they were missing): ``stft``,
``istft``, ``welch``, ``csd`` and ``detrend``, on float32 and complex64 signals of odd and
even lengths, 1-D to 3-D along each axis; windows by name (ours, and SciPy's rarer ones
through SciPy, as JAX) and as arrays; every ``boundary``, ``padded``, ``nfft``, ``noverlap``,
``detrend`` (a callable too), ``scaling`` and ``average``; an ``nperseg`` longer than the
signal (cut to it, with JAX's warning); ``stft`` then ``istft`` back; gradients; two cases
under ``jit``; and the calls JAX refuses, with its exception classes. Values, dtypes, weak
types and shapes are compared leaf by leaf."""

import warnings

import numpy as np
import pytest
from oracle import assert_call_as_jax, assert_raises_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")
# lib.scipy.signal, for the cases below, in both libraries
import jax.scipy.signal  # noqa: E402, F401
import stage4_sharding.scipy.signal  # noqa: E402, F401

RNG = np.random.default_rng(0)
X = RNG.standard_normal(37).astype(np.float32)  # odd length
Y = RNG.standard_normal(37).astype(np.float32)
EVEN = RNG.standard_normal(64).astype(np.float32)
Z = (RNG.standard_normal(30) + 1j * RNG.standard_normal(30)).astype(np.complex64)
M = RNG.standard_normal((3, 40)).astype(np.float32)  # 3 signals of 40
T = RNG.standard_normal((2, 25, 3)).astype(np.float32)  # time along axis 1
TREND = (np.arange(30) * 0.5 + RNG.standard_normal(30)).astype(np.float32)
ZXX = (RNG.standard_normal((5, 11)) + 1j * RNG.standard_normal((5, 11))).astype(np.complex64)


def _stft_cases(lib):
    s = lib.scipy.signal
    return {
        "stft, nperseg 8": (lambda x: s.stft(x, nperseg=8), X),
        "stft, nperseg longer than x": (lambda x: s.stft(x), X),
        "stft, noverlap 5, nfft 12": (lambda x: s.stft(x, nperseg=8, noverlap=5, nfft=12), X),
        "stft, odd nperseg and nfft": (lambda x: s.stft(x, nperseg=7, nfft=11), X),
        "stft, boundary even": (lambda x: s.stft(x, nperseg=8, boundary="even"), X),
        "stft, boundary odd": (lambda x: s.stft(x, nperseg=8, boundary="odd"), X),
        "stft, boundary constant": (lambda x: s.stft(x, nperseg=8, boundary="constant"), X),
        "stft, no boundary, not padded": (
            lambda x: s.stft(x, nperseg=8, boundary=None, padded=False), X),
        "stft, detrend linear, fs 10": (
            lambda x: s.stft(x, fs=10.0, nperseg=8, detrend="linear"), X),
        "stft, detrend a callable (as JAX, on the segments moved)": (
            lambda x: s.stft(x, nperseg=8, detrend=lambda d: d - d.mean(-1, keepdims=True)),
            X),
        "stft, two-sided": (lambda x: s.stft(x, nperseg=8, return_onesided=False), X),
        "stft, complex": (lambda z: s.stft(z, nperseg=8, return_onesided=False), Z),
        "stft, window hamming": (lambda x: s.stft(x, window="hamming", nperseg=10), X),
        "stft, window kaiser": (lambda x: s.stft(x, window=("kaiser", 6.0), nperseg=10), X),
        "stft, window tukey symmetric": (
            lambda x: s.stft(x, window=("tukey_symmetric", 0.3), nperseg=9), X),
        "stft, window from SciPy (dpss)": (lambda x: s.stft(x, window=("dpss", 2.0),
                                                               nperseg=8), X),
        "stft, window an array": (lambda x: s.stft(x, window=np.arange(1.0, 7.0), nperseg=6), X),
        "stft, 2-D along the last axis": (lambda m: s.stft(m, nperseg=8), M),
        "stft, 2-D along axis 0": (lambda m: s.stft(m.T, nperseg=8, axis=0), M),
        "stft, 3-D along axis 1": (lambda t: s.stft(t, nperseg=6, noverlap=2, axis=1), T),
    }


def _istft_cases(lib):
    s = lib.scipy.signal

    def round_trip(x, **kwargs):
        _, _, Zxx = s.stft(x, **kwargs)
        return s.istft(Zxx, **kwargs)

    return {
        "istft of stft": (lambda x: round_trip(x, nperseg=8), X),
        "istft of stft, even length": (lambda x: round_trip(x, nperseg=16, noverlap=12),
                                       EVEN),
        "istft of stft, odd nperseg, nfft": (lambda x: round_trip(x, nperseg=7, nfft=7), X),
        "istft of stft, nfft 12": (lambda x: round_trip(x, nperseg=8, nfft=12), X),
        "istft of stft, window hamming": (lambda x: round_trip(x, window="hamming",
                                                               nperseg=10), X),
        "istft of stft, window an array": (
            lambda x: round_trip(x, window=np.arange(1.0, 9.0, dtype=np.float32), nperseg=8),
            X),
        "istft of stft, complex two-sided": (
            lambda z: s.istft(s.stft(z, nperseg=8, return_onesided=False)[2],
                              input_onesided=False), Z),
        "istft of stft, 2-D": (lambda m: round_trip(m, nperseg=8), M),
        "istft, axes swapped, no boundary": (
            lambda m: s.istft(s.stft(m, nperseg=8)[2].swapaxes(1, 2), time_axis=1,
                              freq_axis=2, boundary=False), M),
        "istft, nperseg and fs": (
            lambda x: s.istft(s.stft(x, nperseg=10)[2], fs=4.0, nperseg=10, noverlap=6), X),
    }


def _welch_cases(lib):
    s = lib.scipy.signal
    return {
        "welch, the whole signal one segment": (lambda x: s.welch(x), X),
        "welch, nperseg 8": (lambda x: s.welch(x, nperseg=8), X),
        "welch, median": (lambda x: s.welch(x, nperseg=8, average="median"), X),
        "welch, median of an even count": (lambda x: s.welch(x, nperseg=16, noverlap=8,
                                                             average="median"), EVEN),
        "welch, spectrum, fs 100": (lambda x: s.welch(x, fs=100.0, nperseg=8,
                                                      scaling="spectrum"), X),
        "welch, two-sided, nfft 12": (
            lambda x: s.welch(x, nperseg=8, nfft=12, return_onesided=False), X),
        "welch, odd nfft": (lambda x: s.welch(x, nperseg=8, nfft=9), X),
        "welch, detrend linear": (lambda x: s.welch(x, nperseg=10, detrend="linear"), TREND),
        "welch, no detrend, window blackman": (
            lambda x: s.welch(x, window="blackman", nperseg=10, detrend=False), X),
        "welch, complex": (lambda z: s.welch(z, nperseg=8, return_onesided=False), Z),
        "welch, complex median": (
            lambda z: s.welch(z, nperseg=8, average="median", return_onesided=False), Z),
        "welch, 2-D along axis 0": (lambda m: s.welch(m.T, nperseg=8, axis=0), M),
        "welch, 3-D along axis 1": (lambda t: s.welch(t, nperseg=8, axis=1), T),
        "welch, integers": (lambda: s.welch(np.arange(20), nperseg=8),),
        "welch, an empty signal": (lambda m: s.welch(m[:, :0]), M),
        "csd": (lambda x, y: s.csd(x, y, nperseg=8), X, Y),
        "csd, median": (lambda x, y: s.csd(x, y, nperseg=8, average="median"), X, Y),
        "csd, y shorter (zeros after it)": (lambda x, y: s.csd(x, y[:30], nperseg=8), X, Y),
        "csd, y None": (lambda x: s.csd(x, None, nperseg=8), X),
        "csd, y broadcast": (lambda m, x: s.csd(m, m[:1] * 2.0, nperseg=8), M, X),
        "csd, complex, spectrum": (
            lambda z, x: s.csd(z, x[:30], nperseg=8, scaling="spectrum"), Z, X),
    }


def _detrend_cases(lib):
    s = lib.scipy.signal
    return {
        "detrend linear": (lambda x: s.detrend(x), TREND),
        "detrend constant": (lambda x: s.detrend(x, type="constant"), TREND),
        "detrend, breakpoints": (lambda x: s.detrend(x, bp=[7, 20]), TREND),
        "detrend, a piece of one point": (lambda x: s.detrend(x, bp=[29]), TREND),
        "detrend, 2-D along axis 0": (lambda m: s.detrend(m.T, axis=0, bp=5), M),
        "detrend, complex": (lambda z: s.detrend(z, bp=[10]), Z),
        "detrend, integers": (lambda: s.detrend(np.array([1, 4, 8, 8, 9])),),
        "detrend, a list": (lambda: s.detrend([1.0, 2.0, 4.0]),),
    }


def _cases(lib):
    """Ours run eagerly; JAX's under ``jax.jit``, which computes what its eager calls do, but
    compiled once rather than op by op (a linear ``welch``: 0.7 s rather than 4.4 s)."""
    table = {**_stft_cases(lib), **_istft_cases(lib), **_welch_cases(lib),
             **_detrend_cases(lib)}
    if lib is not real:
        return table
    return {name: (real.jit(fun), *args) for name, (fun, *args) in table.items()}


@pytest.mark.parametrize("name", list(_cases(ours)))
def test_spectral_functions_as_jax(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warnings have a test of their own
        assert_call_as_jax(_cases, name, "eager", rtol=1e-4, atol=2e-5)


def _jit_cases(lib):
    s = lib.scipy.signal
    return {
        "welch, median, fs an argument": (
            lambda x, fs: s.welch(x, fs=fs, nperseg=8, average="median"), X, np.float32(3.0)),
        "istft of stft, 2-D": (
            lambda m: s.istft(s.stft(m, nperseg=8)[2]), M),
    }


@pytest.mark.parametrize("name", list(_jit_cases(ours)))
def test_spectral_functions_under_jit_as_jax(name):
    assert_call_as_jax(_jit_cases, name, "jit", rtol=1e-4, atol=2e-5)


def test_gradients_as_jax():
    def losses(lib):
        s, jnp = lib.scipy.signal, lib.numpy
        return [
            lambda x: jnp.sum(jnp.log(s.welch(x, nperseg=8, average="median")[1])),
            lambda x: jnp.sum(jnp.abs(s.stft(x, nperseg=8, boundary="odd")[2]) ** 2),
            lambda x: jnp.sum(jnp.sin(s.istft(s.stft(x, nperseg=8)[2] * 1.5)[1])),
            lambda x: jnp.sum(s.detrend(x, bp=[12]) ** 3),
            lambda x: jnp.sum(jnp.real(s.csd(x, jnp.cos(x), nperseg=8)[1])),
        ]
    for k, (mine, theirs) in enumerate(zip(losses(ours), losses(real))):
        expected = real.jit(real.grad(theirs))(X)
        np.testing.assert_allclose(ours.grad(mine)(X), expected, rtol=1e-3, atol=1e-4,
                                   err_msg=f"loss {k}")


def test_warnings_as_jax():
    for lib in (real, ours):
        s = lib.scipy.signal
        run = real.jit if lib is real else lambda f: f  # JAX warns while it traces
        with pytest.warns(UserWarning, match="nperseg=256 is greater than input_length=37"):
            run(s.stft)(X)
        with pytest.warns(UserWarning, match="Input data is complex"):
            run(lambda z: s.welch(z, nperseg=8))(Z)


def _error_cases(lib):
    s = lib.scipy.signal
    Zxx = ZXX  # 5 one-sided frequencies: nperseg 8
    return {
        "detrend, an unknown type": (ValueError, lambda: s.detrend(X, type="quadratic")),
        "detrend, overwrite_data": (NotImplementedError,
                                    lambda: s.detrend(X, overwrite_data=True)),
        "detrend, a breakpoint past the end": (ValueError, lambda: s.detrend(X, bp=[40])),
        "detrend, a negative breakpoint": (ValueError, lambda: s.detrend(X, bp=[-2])),
        "stft, an unknown boundary": (ValueError, lambda: s.stft(X, boundary="wrap")),
        "stft, detrend True": (ValueError, lambda: s.stft(X, nperseg=8, detrend=True)),
        "stft, detrend an unknown type": (ValueError,
                                          lambda: s.stft(X, nperseg=8, detrend="quadratic")),
        "welch, an unknown window": (ValueError, lambda: s.welch(X, window="nonesuch")),
        "welch, a window needing a parameter": (ValueError, lambda: s.welch(X, window="kaiser")),
        "welch, a parameter too many": (ValueError, lambda: s.welch(X, window=("hann", 2))),
        "welch, a 2-D window": (ValueError, lambda: s.welch(X, window=np.ones((2, 2)))),
        "welch, a window longer than x": (ValueError, lambda: s.welch(X, window=np.ones(40))),
        "welch, nperseg not the window's": (ValueError,
                                            lambda: s.welch(X, window=np.ones(8), nperseg=6)),
        "welch, nperseg 0": (ValueError, lambda: s.welch(X, nperseg=0)),
        "welch, nfft below nperseg": (ValueError, lambda: s.welch(X, nperseg=8, nfft=4)),
        "welch, noverlap of nperseg": (ValueError, lambda: s.welch(X, nperseg=8, noverlap=8)),
        "welch, an unknown scaling": (ValueError, lambda: s.welch(X, scaling="power")),
        "welch, an unknown average": (ValueError,
                                      lambda: s.welch(X, nperseg=8, average="mode")),
        "welch, axis out of range": (ValueError, lambda: s.welch(X, axis=1)),
        "welch, a list (no .ndim)": (AttributeError, lambda: s.welch(list(X))),
        "welch, nperseg traced": (lib.errors.ConcretizationTypeError,
                                  lambda: lib.jit(lambda x, n: s.welch(x, nperseg=n))(X, 8)),
        "csd, ranks differ": (ValueError, lambda: s.csd(M, X)),
        "csd, no broadcasting": (ValueError, lambda: s.csd(M, M[:2])),
        "csd, y a list": (TypeError, lambda: s.csd(X, list(Y))),
        "istft, a list": (TypeError, lambda: s.istft([[1.0, 2.0], [3.0, 4.0]])),
        "istft, 1-D": (ValueError, lambda: s.istft(Zxx[:, 0])),
        "istft, one axis for both": (ValueError, lambda: s.istft(Zxx, time_axis=0,
                                                                 freq_axis=0)),
        "istft, nfft below nperseg": (ValueError, lambda: s.istft(Zxx, nperseg=8, nfft=6)),
        "istft, noverlap of nperseg": (ValueError, lambda: s.istft(Zxx, noverlap=8)),
        "istft, a window of another length": (ValueError,
                                              lambda: s.istft(Zxx, window=np.ones(6))),
        "istft, odd nperseg without nfft (as JAX)": (
            TypeError, lambda: s.istft(Zxx[:4], nperseg=7)),
    }


@pytest.mark.parametrize("name", list(_error_cases(ours)))
def test_spectral_functions_refuse_as_jax(name):
    assert_raises_as_jax(_error_cases, name)
