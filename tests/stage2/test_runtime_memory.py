"""The CPU runtime owns the memory of a program's results (issue 17).

A generated kernel writes its outputs, and the arrays it needs while it runs, into arrays the
runtime allocates and passes in (``CpuWriter.output_buffers`` and ``scratch``,
``CpuExecutable.output_buffers``), rather than allocating them itself; BLAS writes into them
too. Every call gets fresh arrays: a result a caller holds is never written by a later call.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from backend_under_test import cpu_only
from stage2_jit.codegen_cpu import generate_source
from stage2_jit.passes import prepare_program
from test_cpu_backend import PROGRAMS

import stage2_jit as jax
from stage2_jit import lax, random

MORE = {
    "gather": lambda x: x[jnp.array([2, 0, 0])] * 2.0,
    "scatter": lambda x: x.at[jnp.array([1, 1])].add(1.0),
    "sort": lambda x: lax.sort(x * 2.0, dimension=0),
    "argmax": lambda x: jnp.argmax(x, axis=1),
    "pad": lambda x: lax.pad(x, 0.0, [(1, 1, 0), (0, 2, 1)]) + 1.0,
    "concatenate": lambda x: jnp.concatenate([x, x * 2.0], axis=0),
    "random": lambda x: x + random.uniform(random.key(0), x.shape),
    "several outputs": lambda x: (jnp.sum(x, axis=0), x * 3.0, x),
    "BLAS output": lambda x: x @ x.T,
    "BLAS scratch": lambda x: jnp.tanh(x.T @ x) + jnp.sum(x.T @ x, axis=0),
    "rows into BLAS": lambda x: jnp.dot(jnp.stack([x, x]), x[0]) * 2.0,
}


def _returned_and_parameters(source: str) -> tuple[list[str], list[str]]:
    header = re.search(r"^def program\(dims, (.*)\):$", source, flags=re.MULTILINE)[1]
    returned = re.findall(r"^    return \((.*)\)$", source, flags=re.MULTILINE)[-1]
    return [n.strip() for n in returned.split(",") if n.strip()], header.split(", ")


@cpu_only
@pytest.mark.parametrize("name", [*PROGRAMS, *MORE])
def test_the_kernel_allocates_none_of_its_outputs_or_scratch_arrays(name):
    fun = {**PROGRAMS, **MORE}[name]
    x = jnp.asarray(np.random.default_rng(0).random((4, 3), dtype=np.float32))
    _, program = prepare_program(jax.make_jaxpr(fun)(x))
    source, writer = generate_source(program)
    returned, parameters = _returned_and_parameters(source)
    assert writer.output_buffers, "every program here has an output its loops write"
    for var in writer.output_buffers:
        name_in_source = writer.names[var]
        assert name_in_source in parameters and name_in_source in returned
        assert not re.search(rf"^    {name_in_source} = np\.empty\(", source, re.MULTILINE)
    # Nor the arrays it needs while it runs: those are parameters too, after the outputs.
    assert not re.search(r"^    v\d+ = np\.empty\(\(", source, re.MULTILINE)
    assert parameters[-len(writer.scratch):] == [n for n, _, _ in writer.scratch] or \
        not writer.scratch
    # The results agree with the interpreter, whoever allocated them.
    ours = jax.jit(fun, backend="cpu")(x)
    expected = jax.jit(fun, backend="interpreter")(x)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


@cpu_only
def test_an_elementwise_program_writes_its_result_into_a_runtime_array():
    source, writer = generate_source(jax.make_jaxpr(lambda x: x * x + x * 2.0)(
        jnp.ones((4, 3))).jaxpr)
    assert len(writer.output_buffers) == 1 and "np.empty" not in source


def test_each_call_returns_fresh_arrays():
    f = jax.jit(lambda x: (x * 2.0, jnp.sum(x, axis=1)))
    first = f(jnp.ones((3, 4)))
    kept = [np.array(a) for a in first]
    second = f(jnp.full((3, 4), 5.0))
    for held, copy in zip(first, kept):
        np.testing.assert_array_equal(np.asarray(held), copy)  # not overwritten
    assert not np.shares_memory(np.asarray(first[0]), np.asarray(second[0]))
