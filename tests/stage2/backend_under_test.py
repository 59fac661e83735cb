"""The backend the stage-2 backend tests run on: ``cpu`` by default; ``cuda`` when the suite
is rerun under Numba's CUDA simulator, as CI does in a process of its own:

    JAX_DEFAULT_BACKEND=cuda NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/stage2

Tests about the CPU backend's own source (its loops, its cache, its compiler) are marked
``cpu_only``; everything else (the laws, every rule's programs) runs on either backend.
"""

import pytest
from stage2_jit.runtime import CpuExecutable

from stage2_jit import config

BACKEND = {"gpu": "cuda"}.get(config.jax_default_backend, config.jax_default_backend)

cpu_only = pytest.mark.skipif(BACKEND != "cpu", reason="about the CPU backend's own source")


def generated_executable_type() -> type:
    """The class of a backend's generated executable (what a program with no fallback gets)."""
    if BACKEND == "cuda":
        from stage2_jit.runtime import CudaExecutable
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


def leading_gather_numbers(operand_ndim: int, indices_shape: tuple) -> tuple:
    """Dimension numbers (and slice sizes' shape rule) of the commonest gather: index
    vectors of length k pick ``operand[i_0, ..., i_{k-1}, ...]``, the rest whole."""
    from stage2_jit import lax
    k, nb = indices_shape[-1], len(indices_shape) - 1
    return lax.GatherDimensionNumbers(tuple(range(nb, nb + operand_ndim - k)), tuple(range(k)),
                                      tuple(range(k)))


def gather_leading(operand, indices, **params):
    """``lax.gather`` of the leading ``k`` dims (see ``leading_gather_numbers``)."""
    from stage2_jit import lax
    k = indices.shape[-1]
    numbers = leading_gather_numbers(operand.ndim, indices.shape)
    return lax.gather(operand, indices, numbers, (1,) * k + tuple(operand.shape[k:]), **params)


def scatter_leading(scatter):
    """``scatter`` (any of lax's) into the leading ``k`` dims: updates of shape
    ``indices.shape[:-1] + operand.shape[k:]``."""
    from stage2_jit import lax

    def scatter_rows(operand, indices, updates, **params):
        dn = leading_gather_numbers(operand.ndim, indices.shape)
        numbers = lax.ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims,
                                              dn.start_index_map)
        return scatter(operand, indices, updates, numbers, **params)
    return scatter_rows
