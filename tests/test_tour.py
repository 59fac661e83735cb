"""The tour's words and its start (tour.py): ratios read right, and a Python without the
stages gets the install command, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import tour  # noqa: E402


def test_a_ratio_below_one_says_slower():
    assert tour.speedup(10.0, 2.0) == "5.0x faster"
    assert tour.speedup(1.0, 2.0) == "2.0x slower"
    assert tour.speedup(7107.0, 1.0) == "7107x faster"


def test_the_best_block_of_a_training_loop_leaves_out_a_busy_moment():
    times = [1.0] * 20 + [9.0] * 10
    assert tour.best_block(times, blocks=3) == 1.0


def test_without_the_stages_installed_the_tour_says_how_to_install(tmp_path):
    """From the repository's root, a Python whose site-packages lack the stages would find
    their folders as namespace packages; the tour must not take them for the stages."""
    result = subprocess.run([sys.executable, "-S", "-c",
                             "import sys; sys.argv = ['tour.py']; import runpy; "
                             "runpy.run_path('tour.py', run_name='__main__')"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "No stage is installed" in result.stdout
    assert "pip install -e" in result.stdout and "Traceback" not in result.stderr
