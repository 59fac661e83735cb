"""Shared setup for the stage-3 tests: the stage-2 tests' folder on ``sys.path``, so the vmap
laws reuse its random-program generator (``from test_jit_laws import draw_program``)."""

import sys
from pathlib import Path

STAGE2_TESTS = str(Path(__file__).resolve().parent.parent / "stage2")
if STAGE2_TESTS not in sys.path:
    sys.path.append(STAGE2_TESTS)
