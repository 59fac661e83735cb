"""Seeded random programs through every transformation each stage offers, against JAX.

Each case is (stage, transformation, seed): the program of that seed (``random_programs.py``;
stage 1 has no structured control flow, so its programs leave it out), run through the
transformation with ``stageN`` bound to ``jax``/``jnp``/``lax`` and with JAX. A failure prints
the smallest program still showing the mismatch, as a script (``oracle.Mismatch``).

The number of programs is fixed so the whole folder runs in CI in a few minutes; longer runs
are ``python tools/differential.py --minutes 10 --stage 4``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jax")

import numpy as np  # noqa: E402
from oracle import (  # noqa: E402
    BY_NAME,
    TRANSFORMS,
    Outcome,
    Transform,
    check,
    inputs_for,
    ours,
    real_jax,
    run,
    shrink,
)
from random_programs import COMPLEX, FEATURES, draw_program, written  # noqa: E402

# Programs per stage and transformation. Stage 4 runs every transformation; the earlier stages
# run theirs on the first few of the same programs (JAX's results are computed once).
SEEDS = {1: range(4), 2: range(4), 3: range(4), 4: range(10)}
OUT_OF_BOUNDS_SEEDS = range(6)
OUT_OF_BOUNDS_FEATURES = ("elementwise", "indexing", "updates", "shapes")
COMPLEX_SEEDS = range(2000, 2006)
COMPLEX_FEATURES = ("elementwise", "broadcasting", "reductions", "matmul", *(COMPLEX,) * 3)
COMPLEX_TRANSFORMS = ("eager", "jit", "vmap", "grad", "jvp", "vjp", "jacrev", "vmap_of_grad")


def features_of(stage: int) -> tuple[str, ...]:
    return tuple(f for f in FEATURES if stage >= 2 or f != "control")


# Cases that differ from JAX, by (stage, transformation, seed), each with its reason: an area
# issue 15 is fixing ("being fixed"), or one reported to the lead. Strict: when the fix lands,
# the case passes unexpectedly and its line here is deleted.
KNOWN: dict[tuple[int, str, int], str] = {}
KNOWN_OUT_OF_BOUNDS: dict[tuple[str, int], str] = {}


def cases() -> list:
    found = []
    for stage, seeds in SEEDS.items():
        for transform in TRANSFORMS:
            if transform.stage > stage:
                continue
            for seed in seeds:
                reason = KNOWN.get((stage, transform.name, seed))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                found.append(pytest.param(stage, transform, seed, marks=marks,
                                          id=f"stage{stage}-{transform.name}-{seed}"))
    return found


def assert_agrees(program, transform: Transform, stage: int) -> None:
    mismatch = check(program, transform, stage)
    if mismatch is not None:
        pytest.fail(f"stage {stage}, {transform.name}, program {program.seed}: "
                    f"{'; '.join(mismatch.problems)}\n\nSmallest reproducer:\n"
                    f"{shrink(mismatch).reproducer()}", pytrace=False)


@pytest.mark.parametrize("stage, transform, seed", cases())
def test_random_program_equals_jax(stage: int, transform: Transform, seed: int) -> None:
    program = draw_program(seed, features=features_of(stage))
    assert_agrees(program, transform, stage)


def out_of_bounds_cases() -> list:
    found = []
    for name in ("eager", "jit", "vmap", "grad"):
        for seed in OUT_OF_BOUNDS_SEEDS:
            reason = KNOWN_OUT_OF_BOUNDS.get((name, seed))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            found.append(pytest.param(BY_NAME[name], seed, marks=marks, id=f"{name}-{seed}"))
    return found


@pytest.mark.parametrize("transform, seed", out_of_bounds_cases())
def test_out_of_bounds_reads_and_updates_equal_jax(transform: Transform, seed: int) -> None:
    """Programs of indexing and ``.at[]`` updates whose indices are often out of bounds
    (Python ints and arrays, past either end): JAX drops such updates and clamps reads."""
    program = draw_program(seed + 1000, features=OUT_OF_BOUNDS_FEATURES, out_of_bounds=True)
    assert_agrees(program, transform, 4)


@pytest.mark.parametrize("transform", [BY_NAME[name] for name in COMPLEX_TRANSFORMS],
                         ids=COMPLEX_TRANSFORMS)
@pytest.mark.parametrize("seed", COMPLEX_SEEDS)
def test_programs_through_complex_values_equal_jax(transform: Transform, seed: int) -> None:
    """Programs whose values pass through complex numbers (phases, FFTs, conjugate products)
    and come back as floats: the derivatives through them were once silently zero."""
    assert_agrees(draw_program(seed, features=COMPLEX_FEATURES), transform, 4)


def test_the_seeds_reach_every_feature() -> None:
    """The programs above hold every kind of line the generator draws, after dead lines are
    dropped (so a change to the generator cannot leave a feature untested unnoticed)."""
    seen = {line.feature for seed in SEEDS[4] for line in draw_program(seed).lines}
    assert seen >= set(FEATURES), set(FEATURES) - seen
    seen = {line.feature for seed in OUT_OF_BOUNDS_SEEDS
            for line in draw_program(seed + 1000, features=OUT_OF_BOUNDS_FEATURES,
                                     out_of_bounds=True).lines}
    assert seen >= {"indexing", "updates"}, seen
    lines = [line for seed in COMPLEX_SEEDS
             for line in draw_program(seed, features=COMPLEX_FEATURES).lines]
    made = {line.target.kind for line in lines if line.feature == COMPLEX}
    assert made == {"c", "f"}, made  # complex values made, and floats made from them


# ------------------------------------------------------------------------------------------
# Mismatches the random programs have met, each as the small program that shows it, so each
# stays checked whatever the seeds above draw
# ------------------------------------------------------------------------------------------

FOUND = {
    # a scatter-min of repeated indices, both updates equal: the tie's cotangent is split
    # between them (each gets half), as in JAX
    "scatter_min_tie": ("grad", written(
        {"x": np.array([0.5, 2.0, 1.0], np.float32), "u": np.array([0.3, 0.3], np.float32)},
        "v = x.at[jnp.array([1, 1])].min(u)"), None),
    "scatter_max_tie": ("grad", written(
        {"x": np.array([0.5, -2.0, 1.0], np.float32), "u": np.array([0.3, 0.3], np.float32)},
        "v = x.at[jnp.array([-2, 1])].max(u)"), None),
    # an update equal to the operand's element it meets: the cotangent is split between
    # the two, as in JAX
    "scatter_max_tie_with_operand": ("grad", written(
        {"x": np.array([1.5], np.float32)}, "v = x.at[jnp.array([-1])].max(x)"), None),
    # Jacobians of a weakly typed output: weak, as in JAX (jacfwd: every block, typed as
    # the output; jacrev: the block of the weak input, typed as the input)
    "jacfwd_weak_type": ("jacfwd", written(
        {"a": np.array(1.0, np.float32), "b": 0.5}, "v = jnp.tanh(b)"), None),
    "jacrev_weak_type": ("jacrev", written(
        {"a": np.array(1.0, np.float32), "b": 0.5}, "v = jnp.tanh(b)"), None),
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])
    for name, (_, _, reason) in FOUND.items()])
def test_found_program_equals_jax(name: str) -> None:
    transform, program, _ = FOUND[name]
    assert_agrees(program, BY_NAME[transform], 4)


def test_scatter_mul_of_repeated_indices_has_the_true_gradient_or_refuses() -> None:
    """``x.at[[0, 0]].mul(y)`` multiplies ``x[0]`` by ``y[0] * y[1]``. JAX refuses to
    differentiate it (NotImplementedError: the indices might repeat); ours must refuse too,
    or give JAX's gradient of the same product written without the repeat."""
    args = {"x": np.array([2.0, 3.0, 4.0], np.float32), "y": np.array([5.0, 7.0], np.float32)}
    repeated = written(args, "v = x.at[jnp.array([0, 0])].mul(y)")
    product = written(args, "v = x.at[0].mul(y[0] * y[1])")
    grad = BY_NAME["grad"]
    got = run(ours(4), repeated, grad, inputs_for(repeated))
    if isinstance(got.error, NotImplementedError):
        return
    want: Outcome = run(real_jax(), product, grad, inputs_for(product))
    assert got.error is None and want.error is None, (got, want)
    for g, w in zip(got.value, want.value):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
