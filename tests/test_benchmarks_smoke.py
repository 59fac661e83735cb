"""The benchmark scripts run (``--quick``): each checks its results against NumPy or stage 1
before timing, so this catches a benchmark that has silently gone wrong. Speed itself is
never asserted."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.slow
@pytest.mark.parametrize("script", ["bench_stage1.py", "bench_stage2.py", "bench_buffers.py",
                                    "bench_stage3.py", "bench_stage4.py"])
def test_benchmark_runs_quickly_and_checks_its_results(script, tmp_path):
    env = dict(os.environ, JAX_FROM_NUMPY_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "target" in done.stdout
