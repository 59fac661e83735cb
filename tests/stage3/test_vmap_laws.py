"""vmap's laws, on random programs from the stage-2 generator (``draw_program``: 5-30 ops
over 1-3 inputs, elementwise, reductions, reshapes, transposes, matmuls, takes, constants):

1. ``vmap(f)`` equals stacking ``f`` over the examples (``loop``), for float and int
   programs, every input batched at a random axis or some left unbatched, out_axes 0 or -1.
2. It composes with the other transformations, each again equal to the loop:
   ``vmap∘grad``, ``grad∘vmap`` (of a sum), ``jvp∘vmap``, ``vmap∘jvp``, ``vmap∘vmap``,
   ``jit∘vmap`` and ``vmap∘jit``.
"""

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from stage2_programs import draw_program, f32, i32
from test_vmap_api import assert_trees_close, insert_axis, loop

import stage3_vmap as jax
from stage3_vmap import numpy as jnp

laws = settings(max_examples=15, deadline=None)
jit_laws = settings(max_examples=5, deadline=None)  # each example compiles its kernels
seeds = st.integers(0, 2**32 - 1)


def new_values(rng: np.random.Generator, shape: tuple, dtype: np.dtype) -> jax.Array:
    """Values in the generator's ranges: floats in [-2, 2), ints in [-4, 5)."""
    if dtype == f32:
        return jnp.asarray(rng.uniform(-2.0, 2.0, shape).astype(np.float32))
    return jnp.asarray(rng.integers(-4, 5, shape).astype(np.int32))


def batch(data, inputs: list, size: int, dtype: np.dtype,
          all_batched: bool) -> tuple[list, tuple]:
    """``size`` examples of the program's inputs and their ``in_axes``: a batched input gets
    new values with the batch at a random axis (negative ones too); an unbatched one (None,
    where allowed; at least one input stays batched) is the input as drawn, a Python scalar
    maybe."""
    rng = np.random.default_rng(data.draw(seeds, label="batch seed"))
    mask = [True] * len(inputs)
    if not all_batched:
        mask = data.draw(st.lists(st.booleans(), min_size=len(inputs), max_size=len(inputs)),
                         label="batched")
        if not any(mask):
            mask[data.draw(st.integers(0, len(inputs) - 1))] = True
    batched, in_axes = [], []
    for x, is_batched in zip(inputs, mask):
        if not is_batched:
            batched.append(x)
            in_axes.append(None)
            continue
        rank = np.ndim(x)
        axis = data.draw(st.integers(-(rank + 1), rank), label="in_axis")
        batched.append(new_values(rng, insert_axis(np.shape(x), axis, size), dtype))
        in_axes.append(axis)
    return batched, tuple(in_axes)


def float_program(data) -> tuple[Any, list]:
    """A smooth float32 program whose inputs are all float32 Arrays (for derivatives)."""
    program, inputs = draw_program(data, f32, smooth=True)
    return program, [jnp.asarray(x, jnp.float32) for x in inputs]


sizes = st.integers(1, 3)

# ------------------------------------------------------------------------------------------
# 1. vmap(f) == the loop, on random programs
# ------------------------------------------------------------------------------------------


@laws
@given(data=st.data(), dtype=st.sampled_from([f32, i32]), smooth=st.booleans(), size=sizes,
       all_batched=st.booleans(), out_axes=st.sampled_from([0, -1]))
def test_vmap_equals_loop_on_random_programs(data, dtype, smooth, size, all_batched,
                                             out_axes):
    program, inputs = draw_program(data, dtype, smooth)
    args, in_axes = batch(data, inputs, size, dtype, all_batched)
    got = jax.vmap(program, in_axes, out_axes)(*args)
    assert_trees_close(got, loop(program, in_axes, out_axes)(*args), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# 2. Composition
# ------------------------------------------------------------------------------------------


@laws
@given(data=st.data(), size=sizes, all_batched=st.booleans())
def test_vmap_of_grad_equals_loop(data, size, all_batched):
    program, inputs = float_program(data)
    args, in_axes = batch(data, inputs, size, f32, all_batched)
    grad = jax.grad(program.loss, argnums=tuple(range(len(args))))
    assert_trees_close(jax.vmap(grad, in_axes)(*args), loop(grad, in_axes)(*args),
                       rtol=1e-5, atol=1e-5)


@laws
@given(data=st.data(), size=sizes, all_batched=st.booleans())
def test_grad_of_vmap_of_a_sum(data, size, all_batched):
    """The gradient of the summed batch: each example's gradient for a batched input (at its
    axis), the sum of them for an unbatched one."""
    program, inputs = float_program(data)
    args, in_axes = batch(data, inputs, size, f32, all_batched)
    argnums = tuple(range(len(args)))

    def total(*args):
        return jnp.sum(jax.vmap(program.loss, in_axes)(*args))

    per_example = loop(jax.grad(program.loss, argnums), in_axes)(*args)
    want = tuple(g.sum(axis=0) if axis is None else np.moveaxis(g, 0, axis)
                 for g, axis in zip(per_example, in_axes))
    assert_trees_close(jax.grad(total, argnums)(*args), want, rtol=1e-4, atol=1e-5)


@laws
@given(data=st.data(), size=sizes, all_batched=st.booleans())
def test_jvp_of_vmap_and_vmap_of_jvp(data, size, all_batched):
    program, inputs = float_program(data)
    args, in_axes = batch(data, inputs, size, f32, all_batched)
    rng = np.random.default_rng(data.draw(seeds, label="tangent seed"))
    tangents = [new_values(rng, np.shape(x), f32) for x in args]
    n = len(args)

    def one_jvp(*primals_and_tangents):
        return jax.jvp(program, primals_and_tangents[:n], primals_and_tangents[n:])

    want = loop(one_jvp, in_axes * 2)(*args, *tangents)
    got = jax.jvp(jax.vmap(program, in_axes), tuple(args), tuple(tangents))
    assert_trees_close(got, want, rtol=1e-5, atol=1e-5)
    assert_trees_close(jax.vmap(one_jvp, in_axes * 2)(*args, *tangents), want,
                       rtol=1e-5, atol=1e-5)


@laws
@given(data=st.data(), dtype=st.sampled_from([f32, i32]), outer=sizes, inner=sizes)
def test_vmap_of_vmap_equals_nested_loops(data, dtype, outer, inner):
    """Two batch axes, each input mapped by the inner vmap, the outer, both or neither."""
    program, inputs = draw_program(data, dtype, smooth=False)
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    args, inner_axes, outer_axes = [], [], []
    for x in inputs:
        rank, shape = np.ndim(x), np.shape(x)
        a_in = data.draw(st.none() | st.integers(-(rank + 1), rank), label="inner axis")
        shape = insert_axis(shape, a_in, inner)
        rank += a_in is not None
        a_out = data.draw(st.none() | st.integers(-(rank + 1), rank), label="outer axis")
        shape = insert_axis(shape, a_out, outer)
        args.append(new_values(rng, shape, dtype) if shape != np.shape(x) else x)
        inner_axes.append(a_in)
        outer_axes.append(a_out)
    sizes = dict(axis_size=inner), dict(axis_size=outer)
    inner_axes, outer_axes = tuple(inner_axes), tuple(outer_axes)
    got = jax.vmap(jax.vmap(program, inner_axes, -1, **sizes[0]), outer_axes, **sizes[1])(*args)
    want = loop(loop(program, inner_axes, -1, **sizes[0]), outer_axes, **sizes[1])(*args)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-5)


@jit_laws
@given(data=st.data(), dtype=st.sampled_from([f32, i32]), size=st.integers(2, 3),
       all_batched=st.booleans())
def test_jit_of_vmap_and_vmap_of_jit(data, dtype, size, all_batched):
    program, inputs = draw_program(data, dtype, smooth=False)
    args, in_axes = batch(data, inputs, size, dtype, all_batched)
    want = loop(program, in_axes)(*args)
    assert_trees_close(jax.jit(jax.vmap(program, in_axes))(*args), want, rtol=1e-5, atol=1e-5)
    assert_trees_close(jax.vmap(jax.jit(program), in_axes)(*args), want, rtol=1e-5, atol=1e-5)


@jit_laws
@given(data=st.data(), size=st.integers(2, 3))
def test_jit_of_vmap_of_grad(data, size):
    """Per-example gradients compiled: ``jit(vmap(grad(f)))`` equals the loop of ``grad``."""
    program, inputs = float_program(data)
    args, in_axes = batch(data, inputs, size, f32, all_batched=False)
    grad = jax.grad(program.loss, argnums=tuple(range(len(args))))
    assert_trees_close(jax.jit(jax.vmap(grad, in_axes))(*args), loop(grad, in_axes)(*args),
                       rtol=1e-5, atol=1e-5)
