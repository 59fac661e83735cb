"""The maximum and minimum of floats as JAX computes them, where NumPy's differ: +0 is above
-0. Of two equal operands ``np.maximum`` returns the first, so ``np.maximum(-0.0, 0.0)`` is
-0.0, and ``np.max`` of ``[-0.0, 0.0]`` is whichever zero it met first. XLA's maximum is +0.0
in both cases and its minimum -0.0 (so are the compiled kernels': LLVM's ``maximum``), and a
zero's sign shows in ``1 / x``. The eager impls here compute NumPy's results and then correct
the zeros among them, which costs a comparison when a result has no zero.

NB: NaN is not a zero, so NumPy's NaN propagation is kept as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes


def _zeros_signed(out: Any, negative: Any) -> Any:
    """``out`` with its zeros given the sign ``negative()`` says (where it is a zero); not
    called for other dtypes (complex numbers have no sign bit)."""
    out = np.asarray(out)
    if dtypes.kind(out.dtype) != "f":
        return out
    zeros = out == 0
    if not zeros.any():
        return out
    signed = np.where(negative(), out.dtype.type(-0.0), out.dtype.type(0.0))
    return np.where(zeros, signed, out)


def maximum(x: Any, y: Any) -> Any:
    """``np.maximum``, with a zero result negative only when both operands are."""
    return _zeros_signed(np.maximum(x, y), lambda: np.signbit(x) & np.signbit(y))


def minimum(x: Any, y: Any) -> Any:
    """``np.minimum``, with a zero result negative when either operand is."""
    return _zeros_signed(np.minimum(x, y), lambda: np.signbit(x) | np.signbit(y))


def _is_zero_of_sign(x: np.ndarray, negative: bool) -> np.ndarray:
    return (x == 0) & (np.signbit(x) == negative)


def reduction(reduce: Any, largest: bool) -> Any:
    """``reduce`` (``np.max`` or ``np.min``, with its ``axis``) made to answer +0 for a
    maximum over a +0, -0 for a minimum over a -0."""
    def impl(x: np.ndarray, **kwargs: Any) -> Any:
        def negative() -> np.ndarray:  # a maximum over no +0, a minimum over a -0
            found = np.any(_is_zero_of_sign(x, not largest), axis=kwargs.get("axis"))
            return ~found if largest else found
        return _zeros_signed(reduce(x, **kwargs), negative)
    return impl


max_of, min_of = reduction(np.max, True), reduction(np.min, False)


def accumulation(ufunc: Any) -> Any:
    """A running maximum or minimum (``np.maximum.accumulate``...) whose zeros are signed
    as a maximum or minimum of everything up to them is."""
    largest = ufunc is np.maximum

    def accumulate(x: np.ndarray, axis: int, dtype: Any = None) -> Any:
        def negative() -> np.ndarray:
            seen = np.logical_or.accumulate(_is_zero_of_sign(x, not largest), axis=axis)
            return ~seen if largest else seen
        return _zeros_signed(ufunc.accumulate(x, axis=axis, dtype=dtype), negative)
    return accumulate
