"""Settings for the whole test suite."""

import os
from pathlib import Path

# Compiled kernels go to a cache folder of the checkout (ignored by git), not the user's
# ~/.cache: the suite neither reads kernels from nor leaves them in a shared place, and a
# second local run reuses the first one's kernels (CI, from a clean checkout, compiles all).
os.environ.setdefault("JAX_FROM_NUMPY_CACHE_DIR",
                      str(Path(__file__).resolve().parent.parent / ".kernel-cache"))

# A new program's first calls may run on the interpreter while its kernel compiles
# (stage2_jit/tiers.py). The suite tests the kernels, so it compiles before the first call;
# tests/stage2/test_tiers.py turns tiers on.
os.environ.setdefault("JAX_FROM_NUMPY_TIERED", "0")
