"""``jax.numpy``: stage 1's, unchanged (stage 2 adds interpreters, not functions)."""

from stage1_autodiff.numpy import *  # noqa: F403
from stage1_autodiff.numpy import indexing  # noqa: F401

import sys as _sys  # noqa: E402

from stage1_autodiff.numpy import fft, linalg  # noqa: E402

# ``import <stage>.numpy.linalg`` finds stage 1's modules (their functions are the same in
# every stage: primitives carry each stage's rules).
_sys.modules[f"{__name__}.fft"], _sys.modules[f"{__name__}.linalg"] = fft, linalg
