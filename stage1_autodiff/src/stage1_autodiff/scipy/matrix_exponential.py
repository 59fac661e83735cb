"""``jax.scipy.linalg.expm``: the exponential of a square matrix, by scaling and squaring.

``e^A = (e^(A / 2^s))^(2^s)``: the matrix is scaled down until its 1-norm is below a bound
``theta``, where a rational (Padé) approximation ``r(A) = v(A)^-1 u(A)``'s error is below the
precision of the working float; then the result is squared ``s`` times. The degrees and bounds
are Higham's ("The scaling and squaring method for the matrix exponential revisited", SIAM
J. Matrix Anal. Appl., 2005): degree 7 for float32 (theta 3.93) and degree 13 for float64
(theta 5.37). Everything is matrix products, one solve and selects, so gradients, ``jit`` and
``vmap`` come from their rules; ``s`` counts as a constant (``stop_gradient``).

NB: JAX's is ``expm`` in ``jax/_src/scipy/linalg.py``, with a custom JVP through the Fréchet
derivative (``expm_frechet``); its result is the same matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from .. import prims as lax
from ..core import get_aval
from ..errors import ConcretizationTypeError, TracerIntegerConversionError
from ..numpy.promotion import as_value, promote_inexact

# The Padé numerator's coefficients b_0..b_m (the denominator's alternate in sign).
_PADE = {7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
         13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
              1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
              33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)}
_THETA = {7: 3.925724783138660, 13: 5.371920351148152}


# --8<-- [start:expm]
def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """``e^A`` of each square matrix in ``A`` (..., n, n); NaN where more than
    ``max_squarings`` squarings would be needed (the norm is too large, or not finite).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.linalg import expm
        >>> expm(jnp.array([[0.0, 1.0], [0.0, 0.0]]))
        Array([[1., 1.],
               [0., 1.]], dtype=float32)
    """
    del upper_triangular  # JAX's shortcut for triangular input; the result is the same
    (a,) = promote_inexact(as_value(A))
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
    degree = 7 if get_aval(a).dtype.itemsize <= 4 else 13
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1)  # each matrix's 1-norm
    squarings = lax.stop_gradient(jnp.maximum(0.0, jnp.ceil(jnp.log2(norm / _THETA[degree]))))
    scaled = a / jnp.exp2(squarings)[..., None, None].astype(a.dtype)
    r = _pade(scaled, degree)
    for i in range(_steps(squarings, max_squarings)):
        r = jnp.where((i < squarings)[..., None, None], r @ r, r)
    return jnp.where((squarings > max_squarings)[..., None, None], np.nan, r)
# --8<-- [end:expm]


def _steps(squarings: Any, max_squarings: int) -> int:
    """How many squarings the loop must offer: as many as the largest matrix needs when the
    counts are known (eager, grad), else ``max_squarings`` (under jit or vmap)."""
    try:
        needed = float(jnp.max(squarings)) if get_aval(squarings).size else 0.0
    except (ConcretizationTypeError, TracerIntegerConversionError):
        return max_squarings
    return int(min(needed, max_squarings)) if np.isfinite(needed) else 0


def _pade(a: Any, degree: int) -> Any:
    """The Padé approximant ``(v - u)^-1 (v + u)`` of ``e^a``: ``u`` the odd powers' terms,
    ``v`` the even ones', with the powers shared (Higham's evaluation scheme)."""
    b, n = _PADE[degree], get_aval(a).shape[-1]
    eye = jnp.eye(n, dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    if degree == 7:
        u = a @ (b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    else:
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2)
                 + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = (a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2)
             + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye)
    return jnp.linalg.solve(v - u, v + u)
