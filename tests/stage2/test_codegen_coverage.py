"""Every primitive of stages 1 and 2 has a code generation rule on each backend, or stands on
that backend's fallback list with its reason (the program then runs on the interpreter, or on
the host): a primitive cannot silently miss a rule."""

import sys

import pytest
from stage1_autodiff.core import Primitive

import stage2_jit  # noqa: F401 -- every stage-2 primitive made
from stage2_jit import codegen_cpu, codegen_cuda, coverage


def stage1_and_2_primitives() -> list[Primitive]:
    found: dict[int, Primitive] = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("stage1_autodiff", "stage2_jit"):
            found.update({id(v): v for v in vars(module).values() if isinstance(v, Primitive)})
    return sorted(found.values(), key=lambda prim: prim.name)


BACKENDS = {
    "cpu": (codegen_cpu.has_cpu_rule, coverage.CPU_FALLBACK),
    "cuda": (codegen_cuda.has_cuda_rule, coverage.CUDA_MISSING),
}


def test_the_scan_finds_the_primitives_of_both_stages():
    names = {prim.name for prim in stage1_and_2_primitives()}
    assert {"exp", "gather", "sort", "jit", "while", "debug_print"} <= names


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_every_primitive_has_a_rule_or_a_reason(backend):
    has_rule, fallback = BACKENDS[backend]
    missing = [prim.name for prim in stage1_and_2_primitives()
               if not has_rule(prim) and prim not in fallback]
    assert not missing, f"{backend}: no rule and no listed reason for {missing}"


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_listed_primitive_has_no_rule_and_a_reason(backend):
    has_rule, fallback = BACKENDS[backend]
    for prim, reason in fallback.items():
        assert not has_rule(prim), f"{backend}: {prim} has a rule, yet is on the fallback list"
        assert len(reason) > 20, f"{backend}: say why {prim} has no rule"


def test_the_check_notices_a_primitive_without_a_rule():
    stray = Primitive("made_up_for_this_test")
    try:
        assert not codegen_cpu.has_cpu_rule(stray)
        assert not codegen_cuda.has_cuda_rule(stray)
    finally:
        from stage1_autodiff.core import all_primitives
        all_primitives.remove(stray)
