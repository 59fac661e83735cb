"""``jax.numpy``: stage 1's, unchanged (stage 2 adds interpreters, not functions)."""

import sys as _sys  # noqa: E402

from stage1_autodiff.numpy import *  # noqa: F403
from stage1_autodiff.numpy import (  # noqa: E402
    fft,
    indexing,  # noqa: F401
    linalg,
)

# ``import <stage>.numpy.linalg`` finds stage 1's modules (their functions are the same in
# every stage: primitives carry each stage's rules).
_sys.modules[f"{__name__}.fft"], _sys.modules[f"{__name__}.linalg"] = fft, linalg
