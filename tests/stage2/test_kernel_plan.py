"""The kernel plan: fusion's decisions as plain data, which both renderers follow.

``fusion.plan_kernels`` decides what is stored, what each step computes and inlines, what runs
in parallel and which row reductions share one GPU kernel; ``lower().as_text()`` prints it.
The renderers only spell it: the laws here check that the plan is what the source does, and
that the layout keeps analysis apart from rendering (issue 16).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from stage2_jit.codegen_cpu import CpuWriter
from stage2_jit.codegen_cuda import CudaWriter
from stage2_jit.fusion import PARALLEL_MIN_ELEMENTS, plan_kernels
from stage2_jit.kernel_writer import KernelWriter
from stage2_jit.passes import prepare_program

import stage2_jit as jax

SOURCE = Path(jax.__file__).parent


def _program(f, *args):
    _, program = prepare_program(jax.make_jaxpr(f)(*args))
    return program


def _sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("# ") and not
            line.startswith("# Generated") and line[2:3].islower()]


def test_as_text_prints_the_plan_between_the_optimized_jaxpr_and_the_source():
    text = jax.jit(jax.nn.softmax).lower(jnp.ones((8, 4))).as_text()
    headings = [line.split(" (")[0] for line in text.splitlines()
                if line in ("# jaxpr", "# optimized jaxpr") or line.startswith(
                    ("# kernel plan", "# generated source"))]
    assert headings == ["# jaxpr", "# optimized jaxpr", "# kernel plan", "# generated source"]


def test_softmax_on_the_cpu_is_four_steps_in_one_loop_over_rows():
    program = _program(jax.nn.softmax, jnp.ones((1000, 100)))
    writer = CpuWriter(program)
    source = writer.write()
    steps = writer.plan.steps
    assert [s.how for s in steps] == ["reduction", "loop", "reduction", "loop"]
    assert [s.joins for s in steps] == [None, 0, 0, 0]
    assert source.count("for i0 in prange(") == 1  # the one merged loop over rows
    assert all(s.parallel for s in steps)  # 100,000 elements: worth threads


def test_every_stored_value_is_computed_by_exactly_one_step():
    def f(x, w):
        h = jnp.tanh(x @ w)
        return jax.nn.softmax(h) + jnp.flip(h, axis=0), jnp.argmax(h, axis=1)

    program = _program(f, jnp.ones((16, 8)), jnp.ones((8, 8)))
    for writer in (CpuWriter, CudaWriter):
        plan = writer(program).plan
        computed = [v for step in plan.steps for e in step.eqns for v in e.outvars
                    if v in plan.materialized]
        assert sorted(map(str, computed)) == sorted(map(str, plan.materialized))
        inlined = {id(e) for step in plan.steps for e in step.inlined}
        stored_by = {id(e) for step in plan.steps for e in step.eqns}
        assert not any(id(e) in stored_by for step in plan.steps for e in step.inlined
                       if e.outvars[0] in plan.materialized), "a stored value is inlined"
        assert inlined  # the elementwise work is inlined somewhere


def test_the_parallel_choice_follows_the_work():
    small = plan_kernels(_program(lambda x: x * 2.0, jnp.ones(100))).steps
    large = plan_kernels(_program(lambda x: x * 2.0, jnp.ones(PARALLEL_MIN_ELEMENTS))).steps
    assert [s.parallel for s in small] == [False] and [s.parallel for s in large] == [True]


def test_a_gpu_row_group_stores_only_what_is_read_outside_it():
    program = _program(jax.nn.softmax, jnp.ones((8, 4)))
    plan = plan_kernels(program, rows=True, flat_loops=True)
    assert [s.how for s in plan.steps] == ["rows"]
    (step,) = plan.steps
    assert step.stored == {program.outvars[0]}  # the exponentials are recomputed, not stored
    assert not (step.row_values - step.stored) & plan.materialized


def test_a_row_group_whose_scalars_are_read_at_other_rows_is_not_one_kernel():
    def shifted(x):  # row i subtracts the maximum of row n - 1 - i
        return x - jnp.flip(jnp.max(x, axis=1, keepdims=True), axis=0)

    x = jnp.asarray(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    plan = plan_kernels(_program(shifted, x), rows=True, flat_loops=True)
    assert "rows" not in [s.how for s in plan.steps]
    aligned = plan_kernels(_program(lambda v: v - jnp.max(v, axis=1, keepdims=True), x),
                           rows=True, flat_loops=True)
    assert [s.how for s in aligned.steps] == ["rows"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module or ""} | {a.name for a in node.names if not node.module}
    return found


def test_renderers_are_siblings_and_analysis_knows_no_backend():
    assert not issubclass(CudaWriter, CpuWriter) and not issubclass(CpuWriter, CudaWriter)
    assert CpuWriter.__bases__ == (KernelWriter,) == CudaWriter.__bases__
    assert "codegen_cuda" not in _imports(SOURCE / "codegen_cpu.py")
    assert "codegen_cpu" not in _imports(SOURCE / "codegen_cuda.py")
    for shared in ("fusion.py", "kernel_writer.py", "loop_rules.py"):
        assert not {"codegen_cpu", "codegen_cuda"} & _imports(SOURCE / shared), shared


@pytest.mark.parametrize("writer", [CpuWriter, CudaWriter], ids=["cpu", "cuda"])
def test_each_renderer_spells_select_and_extremum_once(writer):
    # The shared rules (select_n, max, min, the reductions' and scatters' extrema) are built
    # on the renderer's own select and extremum: changing them changes every use.
    dtype = np.dtype(np.int32)
    assert writer.extremum(">", "a", "b", dtype).count("a > b") == 1
    combine = writer(_program(lambda x: jnp.max(x), jnp.ones(3, jnp.int32))).reduction_combine
    from stage1_autodiff import prims as p
    assert writer.extremum(">", "{x}", "{acc}", dtype) in combine(p.reduce_max_p, dtype)
