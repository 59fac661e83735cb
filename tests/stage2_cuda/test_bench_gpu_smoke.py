"""The GPU benchmark runs under Numba's CUDA simulator (``--smoke``): every result it would
time is checked against NumPy first, so this catches a benchmark, or a GPU path of ``jit``,
that has silently gone wrong before a GPU machine is spent on it. Speed is never asserted.

Run in its own process, with numba-cuda installed:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/stage2_cuda
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba.cuda")
from numba import config  # noqa: E402

if not config.ENABLE_CUDASIM:
    pytest.skip("set NUMBA_ENABLE_CUDASIM=1 to run the CUDA backend tests",
                allow_module_level=True)

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_stage2_gpu.py"
CASES = ["x*x + x*2.0", "jnp.sum(x, axis=1)", "jax.nn.softmax(x, axis=1)", "x @ y, float32",
         "x + 1.0, end to end"]


def test_gpu_benchmark_smoke_checks_every_case_and_prints_the_table(tmp_path):
    env = dict(os.environ, JAX_FROM_NUMPY_CACHE_DIR=str(tmp_path), NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, str(BENCHMARK), "--smoke"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    header = next(line for line in done.stdout.splitlines() if line.split()[:1] == ["case"])
    assert header.split() == ["case", "ours", "ceiling", "/", "reference", "ratio", "target",
                              "verdict"]
    table = done.stdout[done.stdout.index(header):]
    for case in CASES:
        assert f"  {case}  " in table, f"no row for {case!r}"
    assert "failed" not in done.stdout


def test_control_flow_gpu_benchmark_smoke_checks_every_case(tmp_path):
    script = BENCHMARK.parent / "bench_control_flow_gpu.py"
    env = dict(os.environ, JAX_FROM_NUMPY_CACHE_DIR=str(tmp_path), NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, str(script), "--smoke"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "every result matched NumPy's" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][2:]
    assert [row.split(",")[0] for row in rows] == ["| 16 pendulums", "| RNN scan",
                                                   "| 1 pendulum"]
