"""``jax.scipy.signal``'s spectral analysis: a signal cut into overlapping segments, each
detrended, tapered by a window and Fourier transformed. ``stft`` keeps each segment's
spectrum; ``istft`` transforms them back and adds the segments up where they overlap;
``welch`` and ``csd`` average the segments' periodograms into a power (or cross) spectral
density; ``detrend`` removes a signal's mean or its least-squares line.

Segment length ``nperseg``, overlap ``noverlap`` and FFT length ``nfft`` give shapes, so they
are Python ints, also under ``jit``. The segments are read from the signal with one gather
(``x[..., starts[:, None] + arange(nperseg)]``), and ``istft`` adds them back with one
scatter-add into the same positions, so gradients flow through both.

NB: JAX's are in ``jax/_src/scipy/signal.py`` (``_spectral_helper``, ``_fft_helper``,
``_overlap_and_add``), after SciPy's. Where they differ from SciPy we follow JAX: the default
``nperseg`` of ``welch`` and ``csd`` is the whole signal (SciPy's is 256); a longer
``nperseg`` is cut to the signal's length, with a warning; and the few oddities noted below.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.scipy import signal
    >>> x = jnp.array([1.0, -1.0] * 8)
    >>> f, Pxx = signal.welch(x, window="boxcar", nperseg=4)  # all at the Nyquist frequency
    >>> f
    Array([0.  , 0.25, 0.5 ], dtype=float32)
    >>> Pxx
    Array([0., 0., 4.], dtype=float32)
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from ..core import get_aval
from ..numpy.concrete import concrete_value
from ..numpy.promotion import (
    _first_frame_outside_library,
    as_value,
    broadcast_shapes,
    canonicalize_axis,
    promote_inexact,
)
from .stats._util import check_arraylike
from .windows import get_window

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def detrend(data: Any, axis: int = -1, type: str = "linear",
            bp: int | Sequence[int] | np.ndarray = 0, overwrite_data: None = None) -> Any:
    """``data`` less its trend along ``axis``: its mean (``type="constant"``) or its
    least-squares line, one line for each piece between the breakpoints ``bp``
    (``"linear"``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.signal import detrend
        >>> detrend(jnp.array([1.0, 4.0, 8.0, 8.0, 9.0]), type="constant")
        Array([-5., -2.,  2.,  2.,  3.], dtype=float32)
    """
    if overwrite_data is not None:
        raise NotImplementedError("detrend: overwrite_data is not implemented (arrays here are "
                                  "immutable); leave it None and use the result.")
    if type not in ("constant", "linear"):
        raise ValueError(f"detrend: type {type!r} is neither 'linear' nor 'constant'.")
    (data,) = promote_inexact(as_value(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    n = get_aval(data).shape[axis]
    breaks = np.unique(np.r_[0, bp, n])  # sorted; the breakpoints are static
    if breaks[0] < 0 or breaks[-1] > n:
        raise ValueError(f"detrend: the breakpoints {bp} must lie in [0, {n}], the points "
                         f"along the axis.")
    if n == 0:  # NB: JAX's reshape of the data to (0, -1) fails so
        raise ZeroDivisionError("detrend: no points along the axis to fit a line to.")
    data = jnp.moveaxis(data, axis, -1)
    pieces = [_remove_line(data[..., a:b]) for a, b in zip(breaks[:-1], breaks[1:])]
    return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)


def _remove_line(y: Any) -> Any:
    """``y`` less its least-squares line along the last axis. With the positions ``t``
    centred, the line's mean and slope separate: ``mean(y) + slope * t``, where
    ``slope = sum(t * (y - mean(y))) / sum(t * t)``."""
    # NB: JAX solves the 2-column least-squares problem with jnp.linalg.lstsq.
    m = get_aval(y).shape[-1]
    if m == 1:  # one point is its own line (lstsq's least-norm solution)
        return y - y
    t = np.arange(m) - (m - 1) / 2
    t = t.astype(dtypes.real_dtype(get_aval(y).dtype))
    centred = y - y.mean(-1, keepdims=True)
    slope = (centred * t).sum(-1, keepdims=True) / (t * t).sum()
    return centred - slope * t


# ------------------------------------------------------------------------------------------
# The segments and their spectra
# ------------------------------------------------------------------------------------------

def _static_int(x: Any, what: str) -> int:
    """``x`` as an int, as JAX's ``concrete_or_error(int, ...)``: a float is cut (8.5 is 8),
    and a traced value is a ``ConcretizationTypeError``."""
    return int(concrete_value(x, what, f"Pass {what} as a Python int."))


def _window_and_nperseg(window: Any, nperseg: int | None, length: int,
                        dtype: np.dtype) -> tuple[Any, int]:
    """The window as an array of ``dtype``, and the segment length: ``nperseg``, or the
    signal's ``length`` (at most), or the length of a window given as an array."""
    if isinstance(window, (str, tuple)):
        nperseg = length if nperseg is None else nperseg
        if nperseg > length:
            warnings.warn(f"nperseg={nperseg} is greater than input_length={length}, using "
                          f"nperseg={length}", stacklevel=_first_frame_outside_library())
            nperseg = length
        return jnp.asarray(get_window(window, nperseg), dtype), nperseg
    win = jnp.asarray(window, dtype)
    nperseg = get_aval(win).size if nperseg is None else nperseg
    if get_aval(win).ndim != 1:
        raise ValueError(f"the window must be a 1-D array, got shape {get_aval(win).shape}.")
    if length < get_aval(win).size:
        raise ValueError(f"the window ({get_aval(win).size} points) is longer than the signal "
                         f"({length} points); pass a shorter window.")
    if nperseg != get_aval(win).size:
        raise ValueError(f"nperseg={nperseg} differs from the window's length, "
                         f"{get_aval(win).size}; leave nperseg None with an array window.")
    return win, nperseg


BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _extend(x: Any, n: int, boundary: str) -> Any:
    """``x`` with ``n`` points more at each end of its last axis: its mirror image
    (``"even"``), its mirror image turned about the end point (``"odd"``), the end point
    repeated (``"constant"``), or zeros."""
    if boundary == "odd":
        first, last = x[..., :1], x[..., -1:]
        return jnp.concatenate([2 * first - jnp.flip(x[..., 1:n + 1], -1), x,
                                2 * last - jnp.flip(x[..., -(n + 1):-1], -1)], axis=-1)
    mode = {"even": "reflect", "constant": "edge", "zeros": "constant"}[boundary]
    return jnp.pad(x, [(0, 0)] * (get_aval(x).ndim - 1) + [(n, n)], mode)


def _segments(x: Any, nperseg: int, nstep: int) -> Any:
    """The segments of ``x``'s last axis, ``nperseg`` points every ``nstep``: an array of
    ``(..., nseg, nperseg)``, read with one gather."""
    starts = np.arange(0, get_aval(x).shape[-1] - nperseg + 1, nstep)
    return x[..., starts[:, None] + np.arange(nperseg)]


def _overlap_add(frames: Any, nstep: int) -> Any:
    """The inverse of ``_segments``' reading: frames ``(..., nseg, nperseg)`` added into one
    signal at ``nstep`` apart, with one scatter-add (overlapping points add up)."""
    *batch, nseg, nperseg = get_aval(frames).shape
    starts = np.arange(nseg) * nstep
    out = jnp.zeros((*batch, nstep * (nseg - 1) + nperseg), get_aval(frames).dtype)
    return out.at[..., starts[:, None] + np.arange(nperseg)].add(frames)


def _spectra(x: Any, win: Any, detrend_segment: Callable[[Any], Any], nperseg: int,
             nstep: int, nfft: int, twosided: bool) -> Any:
    """The DFT of each segment of ``x``, detrended and tapered: ``(..., nseg, nfreq)``."""
    segments = win * detrend_segment(_segments(x, nperseg, nstep))
    if twosided:
        return jnp.fft.fft(segments, n=nfft)
    return jnp.fft.rfft(segments, n=nfft)


def _detrend_function(detrend_type: Any, axis: int) -> Callable[[Any], Any]:
    if isinstance(detrend_type, str):
        return partial(detrend, type=detrend_type, axis=-1)
    if callable(detrend_type):
        # NB: as JAX does (``axis != -1`` after canonicalizing it), the segments' axis
        # ``axis`` goes last for the call: for the last axis of ``x``, the callable sees
        # each batch of segments transposed, (nperseg, nseg), unlike SciPy's.
        return lambda d: jnp.moveaxis(detrend_type(jnp.moveaxis(d, axis, -1)), -1, axis)
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"detrend={detrend_type!r} is not a detrend type: pass 'constant', "
                     f"'linear', False or a function of the segments.")


def _spectral_helper(x: Any, y: Any, fs: Any, window: Any, nperseg: Any, noverlap: Any,
                     nfft: Any, detrend_type: Any, return_onesided: bool, scaling: str,
                     axis: int, mode: str, boundary: str | None = None,
                     padded: bool = False) -> tuple[Any, Any, Any]:
    """The frequencies, the segments' times, and the segments' spectra (``mode="stft"``) or
    periodograms (``"psd"``), cross ones when ``y`` is given; the frequency axis in place of
    ``axis``, the segments last."""
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary={boundary!r} is not a boundary extension; pass one of "
                         f"{list(BOUNDARIES)}.")
    axis = canonicalize_axis(operator.index(axis), x.ndim)  # NB: x must be an array, as in JAX
    x, y, outershape = _operands(x, y, axis)
    result_dtype = dtypes.complex_dtype(get_aval(x).dtype)
    freq_dtype = dtypes.real_dtype(result_dtype)
    win, nperseg, noverlap, nfft = _sizes(window, nperseg, noverlap, nfft,
                                          get_aval(x).shape[axis], get_aval(x).dtype)
    empty = _empty_result(x, y, axis, outershape, freq_dtype, result_dtype)
    if empty is not None:
        return empty
    x, y = _time_last_and_same_length(x, y, axis)
    if nfft < nperseg:
        raise ValueError(f"nfft={nfft} is shorter than a segment (nperseg={nperseg}); pass "
                         f"nfft >= nperseg, or None.")
    if noverlap >= nperseg:
        raise ValueError(f"noverlap={noverlap} must be less than nperseg={nperseg}: segments "
                         f"would not advance.")
    nstep = nperseg - noverlap
    x, y = (v if v is None else _extend_and_pad(v, nperseg, nstep, boundary, padded)
            for v in (x, y))
    detrend_segment = _detrend_function(detrend_type, axis)
    scale = _scale(win, fs, scaling, mode)
    twosided = _two_sided(return_onesided, x, y)
    freqs = (jnp.fft.fftfreq if twosided else jnp.fft.rfftfreq)(nfft, 1 / fs, dtype=freq_dtype)

    spectra = partial(_spectra, win=win, detrend_segment=detrend_segment, nperseg=nperseg,
                      nstep=nstep, nfft=nfft, twosided=twosided)
    result = spectra(x)
    if y is not None:
        result = jnp.conj(result) * spectra(y)
    elif mode == "psd":
        result = jnp.conj(result) * result
    result = result * scale
    if not twosided and mode == "psd":
        result = result * jnp.asarray(_one_sided_weights(nfft), freq_dtype)
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    time = _segment_times(get_aval(x).shape[-1], nperseg, nstep, boundary, freq_dtype) / fs
    return freqs, time, jnp.moveaxis(result, -1, axis)


def _operands(x: Any, y: Any, axis: int) -> tuple[Any, Any, tuple[int, ...]]:
    """``x`` and ``y`` (None for ``x``'s own spectra) of one inexact dtype, and the shape of
    their other axes broadcast."""
    if y is None:
        check_arraylike("spectral_helper", x)
        (x,) = promote_inexact(x)
        return x, None, _without(get_aval(x).shape, axis)
    check_arraylike("spectral_helper", x, y)
    x, y = promote_inexact(x, y)
    if get_aval(x).ndim != get_aval(y).ndim:
        raise ValueError(f"x and y must have as many dims, got {get_aval(x).ndim} and "
                         f"{get_aval(y).ndim}.")
    try:
        outershape = broadcast_shapes(*(_without(get_aval(v).shape, axis) for v in (x, y)))
    except ValueError as error:
        raise ValueError(f"x {get_aval(x).shape} and y {get_aval(y).shape} do not broadcast "
                         f"together outside the axis.") from error
    return x, y, outershape


def _sizes(window: Any, nperseg: Any, noverlap: Any, nfft: Any, length: int,
           dtype: np.dtype) -> tuple[Any, int, int, int]:
    """The window, and ``nperseg``, ``noverlap`` and ``nfft`` as ints, their defaults filled
    in: ``nperseg // 2`` and ``nperseg``."""
    if nperseg is not None:
        nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
        if nperseg < 1:
            raise ValueError(f"nperseg={nperseg!r} must be a positive integer.")
    win, nperseg = _window_and_nperseg(window, nperseg, length, dtype)
    if noverlap is None:
        noverlap = nperseg // 2
    else:
        noverlap = _static_int(noverlap, "noverlap of windowed-FFT")
    nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
    return win, nperseg, noverlap, nfft


def _extend_and_pad(x: Any, nperseg: int, nstep: int, boundary: str | None,
                    padded: bool) -> Any:
    """``x`` extended by half a segment at each end (``boundary``), then padded with zeros
    to a whole number of segments (``padded``)."""
    if boundary is not None:
        x = _extend(x, nperseg // 2, boundary)
    if padded:
        more = (-(get_aval(x).shape[-1] - nperseg) % nstep) % nperseg
        x = jnp.pad(x, [(0, 0)] * (get_aval(x).ndim - 1) + [(0, more)])
    return x


def _scale(win: Any, fs: Any, scaling: str, mode: str) -> Any:
    """What the periodograms are multiplied by: a density per Hz (``"density"``), or the
    power of a sinusoid (``"spectrum"``); the square root of it for ``stft``."""
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"scaling={scaling!r} is neither 'density' nor 'spectrum'.")
    return jnp.sqrt(scale) if mode == "stft" else scale


def _two_sided(return_onesided: bool, x: Any, y: Any) -> bool:
    """Whether the spectra keep the negative frequencies: asked for, or a complex signal's
    (which has no symmetry to drop them by; JAX warns)."""
    complex_input = any(v is not None and dtypes.is_complex(get_aval(v).dtype) for v in (x, y))
    if return_onesided and complex_input:
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=_first_frame_outside_library())
    return not return_onesided or complex_input


def _one_sided_weights(nfft: int) -> np.ndarray:
    """Twice each frequency of a one-sided density, for its negative twin; once 0 and the
    Nyquist frequency (there for an even ``nfft``), which have none."""
    weights = np.full(nfft // 2 + 1, 2.0)
    weights[0] = 1.0
    if nfft % 2 == 0:
        weights[-1] = 1.0
    return weights


def _segment_times(length: int, nperseg: int, nstep: int, boundary: str | None,
                   dtype: np.dtype) -> Any:
    """The time of each segment's centre, in samples from the signal's start (before the
    boundary's extension)."""
    centres = np.arange(nperseg / 2, length - nperseg / 2 + 1, nstep)
    return jnp.asarray(centres - (nperseg / 2 if boundary is not None else 0), dtype)


def _without(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return shape[:axis] + shape[axis + 1:]


def _empty_result(x: Any, y: Any, axis: int, outershape: tuple[int, ...], freq_dtype: Any,
                  result_dtype: Any) -> tuple[Any, Any, Any] | None:
    """JAX's answer for an empty signal: zeros, all three, of ``x``'s shape."""
    if y is None:
        shape = get_aval(x).shape if get_aval(x).size == 0 else None
    elif get_aval(x).size == 0 or get_aval(y).size == 0:
        # NB: as JAX's ``tuple_insert(outershape, min(lengths), axis)``: ``axis`` is inserted
        # as a length, at the position of the shorter signal's length.
        at = min(get_aval(x).shape[axis], get_aval(y).shape[axis])
        shape = (*outershape[:at], axis, *outershape[at:])
    else:
        shape = None
    if shape is None:
        return None
    return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
            jnp.zeros(shape, result_dtype))


def _time_last_and_same_length(x: Any, y: Any, axis: int) -> tuple[Any, Any]:
    """``x`` and ``y`` with their time axis last, the shorter padded with zeros at its
    end."""
    x = jnp.moveaxis(x, axis, -1)
    if y is None:
        return x, None
    y = jnp.moveaxis(y, axis, -1)
    n = max(get_aval(x).shape[-1], get_aval(y).shape[-1])
    x, y = (jnp.pad(v, [(0, 0)] * (get_aval(v).ndim - 1) + [(0, n - get_aval(v).shape[-1])])
            for v in (x, y))
    return x, y


# ------------------------------------------------------------------------------------------
# The public functions
# ------------------------------------------------------------------------------------------

def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
    """The short-time Fourier transform ``(f, t, Zxx)``: the DFT of each segment of
    ``nperseg`` points every ``nperseg - noverlap``, tapered by ``window`` and scaled by its
    sum; the frequencies along ``axis``, the segments last. ``boundary`` extends the signal
    by ``nperseg // 2`` at each end (``"zeros"``, ``"even"``, ``"odd"``, ``"constant"`` or
    None), and ``padded`` pads it with zeros to a whole number of segments.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.signal import stft
        >>> f, t, Zxx = stft(jnp.ones(8), nperseg=4)
        >>> Zxx.shape, t
        ((3, 5), Array([0., 2., 4., 6., 8.], dtype=float32))
    """
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, "spectrum", axis, "stft", boundary, padded)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """The cross spectral density ``(f, Pxy)`` by Welch's method: the mean (or the median)
    over segments of ``conj(X) * Y``, the segments' windowed DFTs. ``y=None`` is ``x``'s own
    (``welch``'s). The median is divided by its bias relative to the mean.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.signal import csd
        >>> x = jnp.array([1.0, -1.0] * 8)
        >>> csd(x, -x, window="boxcar", nperseg=4)[1]
        Array([ 0.+0.j,  0.+0.j, -4.+0.j], dtype=complex64)
    """
    freqs, _, Pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                     return_onesided, scaling, axis, "psd")
    shape = get_aval(Pxy).shape
    if len(shape) < 2 or get_aval(Pxy).size == 0:
        return freqs, Pxy
    if shape[-1] == 1:
        return freqs, Pxy[..., 0]
    if average == "mean":
        return freqs, Pxy.mean(axis=-1)
    if average != "median":
        raise ValueError(f"average={average!r} is neither 'mean' nor 'median'.")
    bias = jnp.asarray(_median_bias(shape[-1]), dtypes.real_dtype(get_aval(Pxy).dtype))
    if dtypes.is_complex(get_aval(Pxy).dtype):
        median = jnp.median(Pxy.real, axis=-1) + 1j * jnp.median(Pxy.imag, axis=-1)
    else:
        median = jnp.median(Pxy, axis=-1)
    return freqs, median / bias


def _median_bias(n: int) -> float:
    """How much the median of ``n`` periodograms (chi-squared with two degrees of freedom)
    falls short of their mean (Allen et al., FINDCHIRP, appendix B)."""
    ii = np.arange(2.0, n, 2)
    return 1 + np.sum(1 / (ii + 1) - 1 / ii)


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
    """The power spectral density ``(f, Pxx)`` by Welch's method: ``csd`` of ``x`` with
    itself. ``scaling="spectrum"`` gives the power spectrum instead (V**2, not V**2/Hz).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.signal import welch
        >>> welch(jnp.array([1.0, -1.0] * 8), window="boxcar", nperseg=4, scaling="spectrum")[1]
        Array([0., 0., 1.], dtype=float32)
    """
    freqs, Pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, Pxx.real


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2) -> tuple[Any, Any]:
    """The inverse of ``stft``, ``(t, x)``: each segment's inverse DFT, tapered by the window
    again, added up where segments overlap (overlap-add), and divided by the sum of the
    squared windows there. ``boundary`` drops the ``nperseg // 2`` points ``stft`` added at
    each end.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.signal import istft, stft
        >>> x = jnp.array([1.0, 2.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0])
        >>> istft(stft(x, nperseg=4)[2])[1]
        Array([1., 2., 3., 2., 1., 0., 1., 2.], dtype=float32)
    """
    check_arraylike("istft", Zxx)
    Zxx = as_value(Zxx)
    ndim = get_aval(Zxx).ndim
    if ndim < 2:
        raise ValueError(f"istft needs a short-time Fourier transform of at least 2 dims "
                         f"(frequencies and times), got {ndim}.")
    freq_axis = canonicalize_axis(freq_axis, ndim)
    time_axis = canonicalize_axis(time_axis, ndim)
    if freq_axis == time_axis:
        raise ValueError(f"istft: time_axis and freq_axis are both {time_axis}; they must "
                         f"name different dims.")
    Zxx = Zxx.astype(dtypes.complex_dtype(get_aval(Zxx).dtype))

    nperseg, noverlap, nfft = _istft_sizes(get_aval(Zxx).shape[freq_axis], nperseg, noverlap,
                                           nfft, input_onesided)
    others = [i for i in range(ndim) if i not in (time_axis, freq_axis)]
    Zxx = jnp.transpose(Zxx, (*others, freq_axis, time_axis))
    # NB: JAX transforms with the nfft it was given (None: irfft's own length, even), not
    # the one it checked; an odd nperseg then fails at the window (a TypeError there).
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    segments = inverse(Zxx, n=nfft, axis=-2)[..., :nperseg, :]
    if get_aval(segments).shape[-2] != nperseg:
        raise TypeError(f"istft: the inverse FFT has {get_aval(segments).shape[-2]} points, "
                        f"fewer than nperseg={nperseg}. For an odd nperseg, pass nfft "
                        f"(nfft={nperseg}).")
    win = _istft_window(window, nperseg, get_aval(segments).dtype)
    segments = segments * win.sum()  # undoes stft's scaling by the window's sum
    frames = jnp.swapaxes(segments * win[:, None], -2, -1)
    x = _overlap_add(frames, nperseg - noverlap)
    norm = _overlap_add(jnp.broadcast_to(win * win, get_aval(frames).shape[-2:]),
                        nperseg - noverlap)
    if boundary:  # NB: as JAX's, nperseg = 1 leaves nothing ([0:-0])
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)

    if get_aval(x).ndim > 1 and time_axis != ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - (freq_axis < time_axis))
    # NB: as JAX's, the times count x's first axis, which is time only for one signal.
    time = jnp.arange(get_aval(x).shape[0], dtype=dtypes.real_dtype(get_aval(x).dtype)) / fs
    return time, x


def _istft_sizes(nfreq: int, nperseg: Any, noverlap: Any, nfft: Any,
                 input_onesided: bool) -> tuple[int, int, int | None]:
    """``nperseg`` and ``noverlap`` as ints, their defaults filled in from the number of
    frequencies, and ``nfft`` as given (an int, or None), after checking all three."""
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    # NB: as JAX's, ``or``: nperseg=0 and noverlap=0 mean their defaults.
    nperseg = _static_int(nperseg or n_default, "nperseg: segment length of STFT")
    if nperseg < 1:
        raise ValueError(f"nperseg={nperseg!r} must be a positive integer.")
    if nfft is None:
        odd = input_onesided and nperseg == n_default + 1  # an odd nperseg, no zeros added
        nfft_int = n_default + 1 if odd else n_default
    else:
        nfft = nfft_int = _static_int(nfft, "nfft of STFT")
    if nfft_int < nperseg:
        raise ValueError(f"nfft={nfft_int} is shorter than a segment (nperseg={nperseg}); "
                         f"pass nfft >= nperseg.")
    noverlap = _static_int(noverlap or nperseg // 2, "noverlap of STFT")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    return nperseg, noverlap, nfft


def _istft_window(window: Any, nperseg: int, dtype: np.dtype) -> Any:
    """The window by name, of the segments' dtype; or as given, in its own dtype."""
    if isinstance(window, (str, tuple)):
        return jnp.asarray(get_window(window, nperseg), dtype)
    win = jnp.asarray(window)
    if get_aval(win).ndim != 1:
        raise ValueError(f"the window must be a 1-D array, got shape {get_aval(win).shape}.")
    if get_aval(win).shape[0] != nperseg:
        raise ValueError(f"the window has {get_aval(win).shape[0]} points, not nperseg="
                         f"{nperseg}.")
    return win
