"""Every primitive of stage 1 under one name: the table a later stage reads its rules from
(``from stage1_autodiff import prims as p``; ``p.mul_p``, ``p.gather_p``, ``p.cholesky_p``).

``primitives.py`` makes the elementwise, shape and reduction primitives and the PRNG's hash;
each module below builds further primitives on those (``contraction.py``: ``dot_general``),
and none of them imports this one, so the modules read in one direction: ``primitives.py``
first, then any of these.

NB: JAX's primitives live beside their wrappers in ``jax/_src/lax/`` (``lax.py``,
``slicing.py``, ``control_flow/``, ``linalg.py``, ``fft.py``, ``convolution.py``,
``windowed_reductions.py``, ``special.py``).
"""

# The order is the table's: each module builds on those above it.
# isort: off
from .primitives import *  # noqa: F403 (elementwise, shape, reductions, threefry)
from .contraction import *  # noqa: F403 (dot_general)
from .slicing import *  # noqa: F403 (gather, the scatters, sort)
from .more_math import *  # noqa: F403 (sinh... asin... atanh, cbrt, exp2)
from .special import *  # noqa: F403 (erf_inv, rsqrt, erf, lgamma, digamma, clamp...)
from .special_functions import *  # noqa: F403 (igamma, igammac, betainc, zeta, bessel_i0e...)
from .cumulative import *  # noqa: F403 (cumsum, cumprod, cummax, cummin, reduce, top_k)
from .dynamic_slicing import *  # noqa: F403 (dynamic_slice, dynamic_update_slice)
from .windowed import *  # noqa: F403 (reduce_window_sum, _max, _min)
from .convolution import *  # noqa: F403 (conv_general_dilated)
from .complex_numbers import *  # noqa: F403 (real, imag, conj, complex)
from .fft import *  # noqa: F403 (fft)
from .linalg import *  # noqa: F403 (cholesky, triangular_solve, lu, qr, eigh, svd)
# isort: on
