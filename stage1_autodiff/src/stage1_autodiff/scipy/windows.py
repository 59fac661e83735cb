"""The windows that ``jax.scipy.signal``'s spectral functions taper each segment with, named
as SciPy names them: ``get_window("hann", 8)``, ``get_window(("kaiser", 8.0), 8)``. As with
SciPy's ``get_window``, a window is periodic (the symmetric window of ``M + 1`` points
without its last, the one a DFT of ``M`` points wants) unless its name ends in
``_symmetric``.

A window is a constant, computed once on the host in float64 with NumPy; the caller converts
it to the signal's dtype. The common windows are here (the cosine sums Hann, Hamming,
Blackman, Blackman-Harris, Nuttall and flat top; boxcar, triangular, Bartlett, cosine,
Tukey, Kaiser, Gaussian). For any other name, JAX asks SciPy's ``get_window``, and so do we:
SciPy's rarer windows (Chebyshev, DPSS, Taylor, ...) and SciPy's errors for names that
nobody knows.

NB: JAX's is ``_triage_segments`` in ``jax/_src/third_party/scipy/signal_helper.py``, which
calls SciPy's ``get_window`` (``scipy/signal/windows/_windows.py``) for every window but Hann.

Example:
    >>> from stage1_autodiff.scipy.windows import get_window
    >>> get_window("hann", 4)
    array([0. , 0.5, 1. , 0.5])
    >>> get_window("hann_symmetric", 5)
    array([0. , 0.5, 1. , 0.5, 0. ])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["get_window"]


def general_cosine(M: int, a: Any) -> np.ndarray:
    """The symmetric sum of cosines ``sum_k a_k cos(k x)`` for ``x`` from -pi to pi: Hann
    is ``a = (0.5, 0.5)``, Hamming ``(0.54, 0.46)``, Blackman ``(0.42, 0.5, 0.08)``."""
    x = np.linspace(-np.pi, np.pi, M)
    return sum(a_k * np.cos(k * x) for k, a_k in enumerate(a))


def triang(M: int) -> np.ndarray:
    """The triangle that does not reach zero at its ends (a Bartlett window that does)."""
    n = np.arange(1, (M + 1) // 2 + 1)
    if M % 2 == 0:
        half = (2 * n - 1.0) / M
        return np.r_[half, half[::-1]]
    half = 2 * n / (M + 1.0)
    return np.r_[half, half[-2::-1]]


def bartlett(M: int) -> np.ndarray:
    n = np.arange(M)
    return np.where(n <= (M - 1) / 2, 2 * n / (M - 1), 2 - 2 * n / (M - 1))


def tukey(M: int, alpha: float = 0.5) -> np.ndarray:
    """Flat in the middle, a Hann taper over a fraction ``alpha`` of the points: boxcar at
    ``alpha = 0``, Hann at ``alpha = 1``."""
    if alpha <= 0:
        return np.ones(M)
    if alpha >= 1:
        return general_cosine(M, (0.5, 0.5))
    n = np.arange(M)
    width = int(np.floor(alpha * (M - 1) / 2))
    rise = 0.5 * (1 + np.cos(np.pi * (-1 + 2 * n[:width + 1] / alpha / (M - 1))))
    fall = 0.5 * (1 + np.cos(np.pi * (-2 / alpha + 1 + 2 * n[M - width - 1:] / alpha / (M - 1))))
    return np.r_[rise, np.ones(M - 2 * width - 2), fall]


def kaiser(M: int, beta: float) -> np.ndarray:
    n = np.arange(M)
    alpha = (M - 1) / 2
    return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2)) / np.i0(float(beta))


def gaussian(M: int, std: float) -> np.ndarray:
    n = np.arange(M) - (M - 1) / 2
    return np.exp(-n ** 2 / (2 * std * std))


# name: (the symmetric window of M points from M and the parameters, whether it takes
# parameters: False, True, or "optional"), SciPy's words
WINDOWS: dict[str, tuple[Callable[..., np.ndarray], bool | str]] = {
    "boxcar": (np.ones, False),
    "triang": (triang, False),
    "bartlett": (bartlett, False),
    "cosine": (lambda M: np.sin(np.pi / M * (np.arange(M) + 0.5)), False),
    "hann": (lambda M: general_cosine(M, (0.5, 0.5)), False),
    "hamming": (lambda M: general_cosine(M, (0.54, 0.46)), False),
    "blackman": (lambda M: general_cosine(M, (0.42, 0.50, 0.08)), False),
    "blackmanharris": (lambda M: general_cosine(M, (0.35875, 0.48829, 0.14128, 0.01168)),
                       False),
    "nuttall": (lambda M: general_cosine(M, (0.3635819, 0.4891775, 0.1365995, 0.0106411)),
                False),
    "flattop": (lambda M: general_cosine(
        M, (0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368)), False),
    "general_hamming": (lambda M, alpha: general_cosine(M, (alpha, 1 - alpha)), True),
    "general_cosine": (general_cosine, True),
    "tukey": (tukey, "optional"),
    "kaiser": (kaiser, True),
    "gaussian": (gaussian, True),
}
ALIASES = {
    "box": "boxcar", "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar",
    "triangle": "triang", "tri": "triang", "bart": "bartlett", "brt": "bartlett",
    "halfcosine": "cosine", "han": "hann", "hamm": "hamming", "ham": "hamming",
    "black": "blackman", "blk": "blackman", "blackharr": "blackmanharris",
    "bkh": "blackmanharris", "nutl": "nuttall", "nut": "nuttall", "flat": "flattop",
    "flt": "flattop", "general hamming": "general_hamming", "general cosine": "general_cosine",
    "tuk": "tukey", "ksr": "kaiser", "gauss": "gaussian",
    "gss": "gaussian",
}


def get_window(window: str | tuple[Any, ...], M: int) -> np.ndarray:
    """The window named ``window`` (a name, or a tuple of a name and its parameters) of
    ``M`` points in float64, periodic unless the name ends in ``_symmetric``, as SciPy's
    ``get_window(window, M)``."""
    # NB: JAX makes its Hann window itself, of any length; SciPy's get_window wants M >= 1.
    if M < 1 and window != "hann":
        raise ValueError(f"a window of {M} points: the length must be a positive integer.")
    name, args = (window, ()) if isinstance(window, str) else (window[0], window[1:])
    if not isinstance(name, str):
        return _scipy_window(window, M)
    symmetric = name.endswith("_symmetric")
    base = name.removesuffix("_symmetric").removesuffix("_periodic")
    base = ALIASES.get(base, base)
    if base not in WINDOWS:
        return _scipy_window(window, M)
    make, takes_parameters = WINDOWS[base]
    if args and not takes_parameters:
        raise ValueError(f"the {base!r} window takes no parameters, got {window!r}.")
    if not args and takes_parameters is True:
        raise ValueError(f"the {base!r} window needs parameters, as a tuple ({base!r}, ...), got "
                         f"{window!r}.")
    if M <= 1:
        return np.ones(M)
    if symmetric:
        return make(M, *args)
    return make(M + 1, *args)[:-1]


def _scipy_window(window: Any, M: int) -> np.ndarray:
    try:
        from scipy.signal import get_window as scipy_get_window
    except ImportError as error:  # stage 1 alone: NumPy only
        raise ImportError(f"the window {window!r} comes from SciPy's get_window: install "
                          f"scipy.") from error
    return scipy_get_window(window, M)
