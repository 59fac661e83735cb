"""The backend the stage-2 backend tests run on: ``cpu`` by default; ``cuda`` when the suite
is rerun under Numba's CUDA simulator, as CI does in a process of its own:

    JAX_DEFAULT_BACKEND=cuda NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/stage2

Tests about the CPU backend's own source (its loops, its cache, its compiler) are marked
``cpu_only``; everything else (the laws, every rule's programs) runs on either backend.
"""

import pytest
from stage2_jit.codegen_cpu import CpuExecutable

from stage2_jit import config

BACKEND = {"gpu": "cuda"}.get(config.jax_default_backend, config.jax_default_backend)

cpu_only = pytest.mark.skipif(BACKEND != "cpu", reason="about the CPU backend's own source")


def generated_executable_type() -> type:
    """The class of a backend's generated executable (what a program with no fallback gets)."""
    if BACKEND == "cuda":
        from stage2_jit.codegen_cuda import CudaExecutable
        return CudaExecutable
    return CpuExecutable


def examples(on_cpu: int) -> int:
    """Hypothesis examples per test: fewer on the simulator, whose threads are OS threads."""
    return on_cpu if BACKEND == "cpu" else max(3, on_cpu // 3)


def trips(on_cpu: int) -> int:
    """Loop trips for a test whose point is not the count: fewer on the simulator, where each
    trip launches the body's kernels, each one a set of OS threads."""
    return on_cpu if BACKEND == "cpu" else max(5, on_cpu // 50)


not_on_simulator = pytest.mark.skipif(
    BACKEND == "cuda", reason="the CUDA simulator runs one kernel at a time: its fake CUDA "
    "module is swapped into a kernel's globals while it runs, so host threads collide")
