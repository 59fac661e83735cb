"""The stage-2 laws' random-program generator (``draw_program``), for the stage-3 laws: it
lives in the stage-2 tests' folder, which this puts on ``sys.path``."""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "stage2"))

from test_jit_laws import draw_program, f32, i32  # noqa: E402, F401
