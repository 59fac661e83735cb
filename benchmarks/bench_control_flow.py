"""Control-flow benchmark: an ODE integrator under ``jit``, written with ``lax.fori_loop`` and
``lax.scan``, whose loops the CPU backend generates as real loops.

The problem: a pendulum, state ``(theta, omega)``, ``d/dt (theta, omega) = (omega,
-g/L sin theta)``, integrated with classical Runge-Kutta (RK4), ``dt = 0.01``, 1,000 steps,
float32, the state a pair of scalars.

1. ``jit`` of the integrator written with ``lax.fori_loop`` (the final state), against the
   same code as a Python loop of NumPy operations on NumPy scalars, and against ``jax.jit`` of
   the same code in JAX. Diagnostic rows: our generated Numba kernel without ``jit``'s
   dispatch, and two hand-written Numba loops that show where the time goes (the step in
   registers; the step as a function that returns new 1-element arrays, the generated
   code's shape).
2. The same with ``lax.scan``, which also returns the trajectory (two (1000,) arrays).
3. Batched (diagnostic, no target): ``jit(vmap(integrate))`` over 256 initial states, against
   the NumPy loop on (256,) arrays and ``jax.jit(jax.vmap(...))``.
4. Gradient (diagnostic, no target): ``jit(grad(...))`` of the final angle of the scan's
   trajectory with respect to the pendulum's length, against ``jax.jit(jax.grad(...))`` and a
   central finite difference in NumPy (two float64 integrations).

Every result is checked against the same computation in float64 NumPy (the gradient against
the central difference) before anything is timed. JAX is timed in a child process of its own
(see benchmarks/README.md). A summary table ends the run: each target, the ratio measured and
met or MISSED. The speed-ups over NumPy of 1 to 3 are drawn to
course/assets/bench_control_flow.png (not with ``--quick``).

Run from the repository root:

    PYTHONPATH=stage1_autodiff/src:stage2_jit/src:stage3_vmap/src \\
        python benchmarks/bench_control_flow.py [--quick]
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import textwrap
from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np
import stage3_vmap.numpy as jnp
from common import (  # benchmarks/common.py
    Timing,
    Verdicts,
    finish,
    format_seconds,
    print_table,
    print_verdicts,
    start,
    time_in_child,
    time_rows,
    verdict,
)
from plotting import PlotPanel, speedups, write_course_plot  # benchmarks/plotting.py

import stage3_vmap as jax

# Targets (from issue 7); a verdict is printed for each, never tuned to pass.
VS_NUMPY = 20.0  # NumPy's Python loop / ours, at least
VS_JAX = 2.0  # ours / jax.jit, at most

G, LENGTH, DT = 9.81, 1.0, 0.01  # gravity (m/s²), pendulum length (m), time step (s)
THETA0, OMEGA0 = 1.0, 0.0  # the single pendulum's initial state (rad, rad/s)
FD_STEP = 1e-4  # the central difference's step in the length (float64)


class Sizes(NamedTuple):
    """The problem sizes of a run: the full ones, or small ones for ``--quick``."""
    steps: int  # RK4 steps
    batch: int  # initial states in the batched variant


FULL = Sizes(steps=1000, batch=256)
QUICK = Sizes(steps=100, batch=16)

Rows = list[tuple[str, Callable[[], object] | str]]  # (name, function to time, or a note)
TimedRows = list[tuple[str, Timing | str]]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None



def fori_title(steps: int) -> str:
    return f"pendulum, RK4, {steps} steps, float32, lax.fori_loop: the final state"


def scan_title(steps: int) -> str:
    return f"pendulum, RK4, {steps} steps, float32, lax.scan: the final state and trajectory"


def batched_title(sizes: Sizes) -> str:
    return (f"batched (diagnostic): {sizes.batch} pendulums, RK4, {sizes.steps} steps, "
            f"float32, lax.fori_loop")


def grad_title(steps: int) -> str:
    return (f"gradient (diagnostic): d theta({steps} steps) / d length, through the lax.scan "
            f"version")


# ------------------------------------------------------------------------------------------
# The computation, written once for any NumPy-like module and loop functions
# ------------------------------------------------------------------------------------------


def pendulum(np_module, fori_loop, scan, steps: int, dt: float = DT):
    """The integrators: ``integrate(theta0, omega0, g, length)`` -> the final
    ``(theta, omega)`` through ``fori_loop``; ``trajectory(...)`` -> ``(final state,
    (thetas, omegas))`` through ``scan``; ``final_angle(length, theta0, omega0, g)`` -> the
    last angle of the trajectory."""
    def derivative(theta, omega, g, length):
        return omega, -(g / length) * np_module.sin(theta)

    def rk4_step(state, g, length):
        theta, omega = state
        k1 = derivative(theta, omega, g, length)
        k2 = derivative(theta + 0.5 * dt * k1[0], omega + 0.5 * dt * k1[1], g, length)
        k3 = derivative(theta + 0.5 * dt * k2[0], omega + 0.5 * dt * k2[1], g, length)
        k4 = derivative(theta + dt * k3[0], omega + dt * k3[1], g, length)
        return (theta + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
                omega + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]))

    def integrate(theta0, omega0, g, length):
        return fori_loop(0, steps, lambda i, state: rk4_step(state, g, length),
                         (theta0, omega0))

    def trajectory(theta0, omega0, g, length):
        def step(state, _):
            state = rk4_step(state, g, length)
            return state, state
        return scan(step, (theta0, omega0), None, length=steps)

    def final_angle(length, theta0, omega0, g):
        _, (thetas, _) = trajectory(theta0, omega0, g, length)
        return thetas[-1]

    return integrate, trajectory, final_angle


def python_fori_loop(lower: int, upper: int, body: Callable, init):
    """``lax.fori_loop`` as the Python loop it stands for."""
    value = init
    for i in range(lower, upper):
        value = body(i, value)
    return value


def python_scan(f: Callable, init, xs, length: int):
    """``lax.scan`` with ``xs=None`` as a Python loop; each step's ``y`` (a tuple) is stacked."""
    carry, ys = init, []
    for _ in range(length):
        carry, y = f(carry, None)
        ys.append(y)
    return carry, tuple(np.array(column) for column in zip(*ys))


def numpy_pendulum(steps: int):
    return pendulum(np, python_fori_loop, python_scan, steps)


def numpy_array_state(theta0, omega0, g, length, steps: int, dt: float = DT):
    """The same RK4 loop in NumPy with the state one (2,) array, as one would write it by
    hand; a diagnostic: NumPy's cost per operation is then that of an array's, not of a
    scalar's."""
    def derivative(state):
        return np.array([state[1], -(g / length) * np.sin(state[0])])

    state = np.array([theta0, omega0])
    for _ in range(steps):
        k1 = derivative(state)
        k2 = derivative(state + 0.5 * dt * k1)
        k3 = derivative(state + 0.5 * dt * k2)
        k4 = derivative(state + dt * k3)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state[0], state[1]


def central_difference(steps: int, length: float = LENGTH) -> float:
    """d theta_final / d length by a central difference of the float64 NumPy integrator."""
    final = numpy_pendulum(steps)[2]

    def at(length_value):
        return final(np.float64(length_value), np.float64(THETA0), np.float64(OMEGA0),
                     np.float64(G))
    return float((at(length + FD_STEP) - at(length - FD_STEP)) / (2 * FD_STEP))


# ------------------------------------------------------------------------------------------
# Hand-written Numba loops (diagnostics): where the generated code's time goes
# ------------------------------------------------------------------------------------------


@numba.njit(cache=False, error_model="numpy")
def numba_scalars(theta, omega, g, length, dt, steps):
    """The RK4 loop by hand, float32 scalars (in registers), one function: a floor for any
    code Numba generates for this loop."""
    half, two, sixth = np.float32(0.5), np.float32(2.0), np.float32(1.0 / 6.0)
    c = -(g / length)
    for _ in range(steps):
        k1t, k1o = omega, c * np.sin(theta)
        k2t, k2o = omega + half * dt * k1o, c * np.sin(theta + half * dt * k1t)
        k3t, k3o = omega + half * dt * k2o, c * np.sin(theta + half * dt * k2t)
        k4t, k4o = omega + dt * k3o, c * np.sin(theta + dt * k3t)
        theta = theta + dt * sixth * (k1t + two * k2t + two * k3t + k4t)
        omega = omega + dt * sixth * (k1o + two * k2o + two * k3o + k4o)
    return theta, omega


@numba.njit(cache=False, error_model="numpy")
def _array_step(g, length, dt, i, theta, omega):
    """One RK4 step shaped as the generated step function: 1-element arrays in, and each
    result, and each intermediate that is read more than once, a new 1-element array."""
    half, two, sixth = np.float32(0.5), np.float32(2.0), np.float32(1.0 / 6.0)
    c = -(g[0] / length[0])
    i_out = np.empty((1,), dtype=np.int32)
    i_out[0] = i[0] + np.int32(1)
    k1o = np.empty((1,), dtype=np.float32)
    k1o[0] = c * np.sin(theta[0])
    k2o = np.empty((1,), dtype=np.float32)
    k2o[0] = c * np.sin(theta[0] + half * dt[0] * omega[0])
    k2t = omega[0] + half * dt[0] * k1o[0]
    k3o = np.empty((1,), dtype=np.float32)
    k3o[0] = c * np.sin(theta[0] + half * dt[0] * k2t)
    k3t = omega[0] + half * dt[0] * k2o[0]
    k4t = omega[0] + dt[0] * k3o[0]
    k4o = c * np.sin(theta[0] + dt[0] * k3t)
    theta_out = np.empty((1,), dtype=np.float32)
    theta_out[0] = theta[0] + dt[0] * sixth * (omega[0] + two * k2t + two * k3t + k4t)
    omega_out = np.empty((1,), dtype=np.float32)
    omega_out[0] = omega[0] + dt[0] * sixth * (k1o[0] + two * k2o[0] + two * k3o[0] + k4o)
    return i_out, theta_out, omega_out


@numba.njit(cache=False, error_model="numpy")
def numba_array_steps(theta, omega, g, length, dt, steps):
    """The loop of ``_array_step``, its carry 1-element arrays, as the generated kernel."""
    i = np.full(1, np.int32(0))
    for _ in range(steps):
        i, theta, omega = _array_step(g, length, dt, i, theta, omega)
    return theta, omega


ARRAY_STEP_ALLOCATIONS = 6  # the np.empty calls of _array_step


# ------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------


def check_close(name: str, got, want, rtol: float = 1e-4, atol: float = 1e-4,
                dtype=np.float32) -> None:
    """A benchmark of a wrong computation is worthless: results must match first."""
    got = np.asarray(got)
    assert got.dtype == dtype, f"{name}: dtype {got.dtype}, not {np.dtype(dtype)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


def check_state(name: str, got, want, dtype=np.float32) -> None:
    """A (theta, omega) pair against the float64 reference's."""
    assert len(got) == 2, f"{name}: {len(got)} results, not (theta, omega)"
    for value, expected, what in zip(got, want, ("theta", "omega")):
        check_close(f"{name}: {what}", value, expected, dtype=dtype)


def check_trajectory(name: str, got, want, dtype=np.float32) -> None:
    """``(final state, (thetas, omegas))`` against the reference's."""
    check_state(f"{name} final state", got[0], want[0], dtype)
    check_state(f"{name} trajectory", got[1], want[1], dtype)


def generated(jitted, *args) -> bool:
    """Whether the CPU backend generated a kernel (False: it fell back to the interpreter)."""
    text = jitted.lower(*args).compile().as_text()
    return not text.startswith(("# Not generated", "# backend"))


def step_allocations(jitted, *args) -> int | None:
    """How many arrays the generated step functions (``scan_body_*``) allocate per call, read
    from the generated source; None when there is no such function."""
    text = jitted.lower(*args).as_text()
    bodies = re.findall(r"\ndef scan_body_\d+\(.*?(?=\n# |\n@njit|\Z)", text, re.S)
    if not bodies:
        return None
    return sum(len(re.findall(r"np\.(?:empty|zeros|full)\(", body)) for body in bodies)


def kernel_alone(jitted, args: tuple) -> Callable[[], object] | str:
    """The Numba kernel of a cached jitted call, without ``jit``'s dispatch (the cache lookup,
    the arrays' checks and the wrapping of the results), or a note if the internals moved."""
    from stage2_jit.runtime import compile_jaxpr  # internals: for this diagnosis only

    try:
        entry, _ = jitted._lookup(args, {})
        executable = compile_jaxpr(entry.program, "cpu")
        arrays = [np.asarray(a) for a in (*entry.consts, *jax.tree_leaves(args))]
        kernel_args = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
        outputs = executable.output_buffers()  # made once: the kernel alone is timed
        return lambda: executable.kernel(executable.dims, *kernel_args, *outputs)
    except (AttributeError, TypeError) as e:
        return f"(unavailable: {e})"


# ------------------------------------------------------------------------------------------
# JAX, timed in a child process: {table title: (row name, function)}
# ------------------------------------------------------------------------------------------


def jax_rows(sizes: Sizes) -> dict[str, tuple[str, Callable[[], object]]]:
    import jax as real_jax
    real_jnp = real_jax.numpy
    lax = real_jax.lax
    version = real_jax.__version__
    integrate, trajectory, final_angle = pendulum(real_jnp, lax.fori_loop, lax.scan,
                                                  sizes.steps)
    np_integrate, np_trajectory, _ = numpy_pendulum(sizes.steps)
    f32 = np.float32
    args = tuple(real_jax.device_put(f32(v)) for v in (THETA0, OMEGA0, G, LENGTH))
    reference = tuple(np.float64(v) for v in (THETA0, OMEGA0, G, LENGTH))

    def timed(fn, *fn_args):
        return lambda: real_jax.block_until_ready(fn(*fn_args))

    rows = {}
    fori = real_jax.jit(integrate)
    check_state("JAX fori_loop", fori(*args), np_integrate(*reference))
    rows[fori_title(sizes.steps)] = (f"JAX {version} jit(fori_loop)", timed(fori, *args))

    scan = real_jax.jit(trajectory)
    check_trajectory("JAX scan", scan(*args), np_trajectory(*reference))
    rows[scan_title(sizes.steps)] = (f"JAX {version} jit(scan)", timed(scan, *args))

    thetas, omegas = batch_states(sizes.batch)
    batched = real_jax.jit(real_jax.vmap(integrate, in_axes=(0, 0, None, None)))
    b_args = (real_jax.device_put(thetas), real_jax.device_put(omegas), *args[2:])
    check_state("JAX jit(vmap(fori_loop))", batched(*b_args),
                np_integrate(thetas.astype(np.float64), omegas.astype(np.float64),
                             *reference[2:]))
    rows[batched_title(sizes)] = (f"JAX {version} jit(vmap(fori_loop))",
                                  timed(batched, *b_args))

    gradient = real_jax.jit(real_jax.grad(final_angle))
    g_args = (args[3], *args[:3])
    check_close("JAX jit(grad(scan))", gradient(*g_args), central_difference(sizes.steps))
    rows[grad_title(sizes.steps)] = (f"JAX {version} jit(grad(scan))",
                                     timed(gradient, *g_args))
    return rows


def jax_timed_rows(sizes: Sizes, repeat: int, min_time: float,
                   keep_memory: bool) -> dict[str, tuple[str, Timing | str]]:
    if not installed("jax"):
        return {}
    return time_in_child(functools.partial(jax_rows, sizes), repeat, min_time, keep_memory)


def jax_row(others: dict, title: str, name: str) -> tuple[str, Timing | str]:
    return others.get(title, (name, "not installed"))


def batch_states(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """float32 initial angles in [-1.5, 1.5] rad and angular velocities in [-1, 1] rad/s."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1.5, 1.5, batch).astype(np.float32),
            rng.uniform(-1.0, 1.0, batch).astype(np.float32))


# ------------------------------------------------------------------------------------------
# The tables
# ------------------------------------------------------------------------------------------


MAIN_LABELS = ("ours", "NumPy", "JAX")  # the short names of the first rows of a table


def best(timing: Timing | str) -> float | None:
    return timing.best if isinstance(timing, Timing) else None


def per_step(what: str, rows: TimedRows, labels: tuple[str, ...], steps: int) -> str:
    """The best time of each of the first rows, named by ``labels``, divided by ``steps``,
    wrapped to lines of 100 characters."""
    parts = ", ".join(f"{label} {format_seconds(t.best / steps)}"
                      for label, (_, t) in zip(labels, rows) if isinstance(t, Timing))
    return textwrap.fill(f"{what}: {parts}", width=100, initial_indent="  ",
                         subsequent_indent="    ")


def bench_fori(sizes: Sizes, timing, others: dict, verdicts: Verdicts,
              plot: list[PlotPanel]) -> None:
    integrate = pendulum(jnp, jax.lax.fori_loop, jax.lax.scan, sizes.steps)[0]
    np_integrate = numpy_pendulum(sizes.steps)[0]
    f32 = np.float32
    args = tuple(jnp.asarray(f32(v)) for v in (THETA0, OMEGA0, G, LENGTH))
    np_args = tuple(f32(v) for v in (THETA0, OMEGA0, G, LENGTH))
    expected = np_integrate(*(np.float64(v) for v in (THETA0, OMEGA0, G, LENGTH)))
    compiled = jax.jit(integrate)
    check_state("jit(fori_loop)", compiled(*args), expected)
    assert generated(compiled, *args), "the CPU backend fell back to the interpreter"
    check_state("NumPy loop", np_integrate(*np_args), expected)
    check_state("NumPy loop, (2,) state", numpy_array_state(*np_args, sizes.steps), expected)
    hand_args = (*np_args, f32(DT), sizes.steps)
    check_state("Numba by hand, scalars", [f32(v) for v in numba_scalars(*hand_args)], expected)
    array_args = (*(np.full(1, v) for v in (*np_args, f32(DT))), sizes.steps)
    check_state("Numba by hand, array steps", [a[0] for a in numba_array_steps(*array_args)],
                expected)
    kernel = kernel_alone(compiled, args)
    if callable(kernel):
        check_state("our kernel alone", [np.asarray(o).reshape(()) for o in kernel()],
                    expected)

    title = fori_title(sizes.steps)
    timed = timing([
        ("stage3_vmap jit(fori_loop)", lambda: compiled(*args)),
        ("NumPy, a Python loop of scalars", lambda: np_integrate(*np_args)),
    ])
    timed.append(jax_row(others, title, "JAX jit(fori_loop)"))
    timed += timing([
        ("  NumPy, the state a (2,) array", lambda: numpy_array_state(*np_args, sizes.steps)),
        ("  our kernel alone, no dispatch", kernel),
        ("  Numba by hand: scalars, one loop", lambda: numba_scalars(*hand_args)),
        ("  Numba by hand: (1,)-array steps", lambda: numba_array_steps(*array_args)),
    ])
    print_table(title, timed)
    plot.append(speedups(f"fori_loop: a pendulum, {sizes.steps} RK4 steps", timed, "NumPy"))
    allocations = step_allocations(compiled, *args)
    print(per_step("per step", timed, (*MAIN_LABELS, "NumPy (2,)", "our kernel",
                                       "Numba scalars", "Numba (1,) arrays"), sizes.steps))
    print(f"  (1,)-array steps: a loop that calls a step function returning new (1,) arrays, "
          f"{ARRAY_STEP_ALLOCATIONS} allocations\n  a step; our generated step function "
          f"allocates {'?' if allocations is None else allocations} arrays a step")

    t_ours, t_numpy, t_jax = (best(t) for _, t in timed[:3])
    add_at_least(verdicts, "fori_loop: NumPy loop / jit", t_numpy, t_ours, VS_NUMPY)
    add_at_most(verdicts, "fori_loop: jit / jax.jit", t_ours, t_jax, VS_JAX)


def bench_scan(sizes: Sizes, timing, others: dict, verdicts: Verdicts,
              plot: list[PlotPanel]) -> None:
    trajectory = pendulum(jnp, jax.lax.fori_loop, jax.lax.scan, sizes.steps)[1]
    np_trajectory = numpy_pendulum(sizes.steps)[1]
    f32 = np.float32
    args = tuple(jnp.asarray(f32(v)) for v in (THETA0, OMEGA0, G, LENGTH))
    np_args = tuple(f32(v) for v in (THETA0, OMEGA0, G, LENGTH))
    expected = np_trajectory(*(np.float64(v) for v in (THETA0, OMEGA0, G, LENGTH)))
    compiled = jax.jit(trajectory)
    check_trajectory("jit(scan)", compiled(*args), expected)
    assert generated(compiled, *args), "the CPU backend fell back to the interpreter"
    check_trajectory("NumPy loop", np_trajectory(*np_args), expected)
    kernel = kernel_alone(compiled, args)
    if callable(kernel):
        theta, omega, thetas, omegas = kernel()
        check_trajectory("our kernel alone", ((theta.reshape(()), omega.reshape(())),
                                              (thetas, omegas)), expected)

    title = scan_title(sizes.steps)
    timed = timing([
        ("stage3_vmap jit(scan)", lambda: compiled(*args)),
        ("NumPy, a Python loop of scalars", lambda: np_trajectory(*np_args)),
    ])
    timed.append(jax_row(others, title, "JAX jit(scan)"))
    timed += timing([("  our kernel alone, no dispatch", kernel)])
    print_table(title, timed)
    plot.append(speedups(f"scan: {sizes.steps} RK4 steps and the trajectory", timed, "NumPy"))
    print(per_step("per step", timed, (*MAIN_LABELS, "our kernel"), sizes.steps))

    t_ours, t_numpy, t_jax = (best(t) for _, t in timed[:3])
    add_at_least(verdicts, "scan: NumPy loop / jit", t_numpy, t_ours, VS_NUMPY)
    add_at_most(verdicts, "scan: jit / jax.jit", t_ours, t_jax, VS_JAX)


def bench_batched(sizes: Sizes, timing, others: dict, verdicts: Verdicts,
                 plot: list[PlotPanel]) -> None:
    integrate = pendulum(jnp, jax.lax.fori_loop, jax.lax.scan, sizes.steps)[0]
    np_integrate = numpy_pendulum(sizes.steps)[0]
    f32 = np.float32
    np_thetas, np_omegas = batch_states(sizes.batch)
    args = (jnp.asarray(np_thetas), jnp.asarray(np_omegas), jnp.asarray(f32(G)),
            jnp.asarray(f32(LENGTH)))
    np_args = (np_thetas, np_omegas, f32(G), f32(LENGTH))
    expected = np_integrate(np_thetas.astype(np.float64), np_omegas.astype(np.float64),
                            np.float64(G), np.float64(LENGTH))
    compiled = jax.jit(jax.vmap(integrate, in_axes=(0, 0, None, None)))
    check_state("jit(vmap(fori_loop))", compiled(*args), expected)
    assert generated(compiled, *args), "the CPU backend fell back to the interpreter"
    check_state("NumPy loop over the batch", np_integrate(*np_args), expected)

    title = batched_title(sizes)
    timed = timing([
        ("stage3_vmap jit(vmap(fori_loop))", lambda: compiled(*args)),
        (f"NumPy, a Python loop of ({sizes.batch},)", lambda: np_integrate(*np_args)),
    ])
    timed.append(jax_row(others, title, "JAX jit(vmap(fori_loop))"))
    print_table(title, timed)
    plot.append(speedups(f"vmap of fori_loop: {sizes.batch} pendulums, {sizes.steps} steps",
                         timed, "NumPy"))
    print(per_step("per pendulum and step", timed, MAIN_LABELS, sizes.steps * sizes.batch))

    t_ours, t_numpy, t_jax = (best(t) for _, t in timed)
    add_diagnostic(verdicts, "batched: NumPy loop / jit(vmap)", t_numpy / t_ours)
    if t_jax is not None:
        add_diagnostic(verdicts, "batched: jit(vmap) / jax.jit(jax.vmap)", t_ours / t_jax)


def bench_grad(sizes: Sizes, timing, others: dict, verdicts: Verdicts) -> None:
    final_angle = pendulum(jnp, jax.lax.fori_loop, jax.lax.scan, sizes.steps)[2]
    f32 = np.float32
    args = tuple(jnp.asarray(f32(v)) for v in (LENGTH, THETA0, OMEGA0, G))
    expected = central_difference(sizes.steps)
    compiled = jax.jit(jax.grad(final_angle))
    check_close("jit(grad(scan))", compiled(*args), expected)
    assert generated(compiled, *args), "the CPU backend fell back to the interpreter"

    title = grad_title(sizes.steps)
    timed = timing([
        ("stage3_vmap jit(grad(scan))", lambda: compiled(*args)),
        ("NumPy, central difference (float64)", lambda: central_difference(sizes.steps)),
    ])
    timed.append(jax_row(others, title, "JAX jit(grad(scan))"))
    print_table(title, timed)
    print(f"  d theta / d length = {float(np.asarray(compiled(*args))):.6g} rad/m (ours), "
          f"{expected:.6g} (central difference, step {FD_STEP:g} m)")
    allocations = step_allocations(compiled, *args)
    print(f"  our generated step functions (forward and backward scans) allocate "
          f"{'?' if allocations is None else allocations} (1,) arrays a step")

    t_ours, _, t_jax = (best(t) for _, t in timed)
    if t_jax is not None:
        add_diagnostic(verdicts, "gradient: jit(grad) / jax.jit(jax.grad)", t_ours / t_jax)


def add_at_most(verdicts: Verdicts, what: str, t_ours: float, t_other: float | None,
                target: float) -> None:
    """A target ``ours / other <= target`` (ours no more than ``target`` times slower)."""
    if t_other is None:
        verdicts.append((what, "-", f"<= {target:g}x", "not measured (JAX not installed)"))
        return
    ratio = t_ours / t_other
    verdicts.append((what, f"{ratio:.2f}x", f"<= {target:g}x", verdict(ratio <= target)))


def add_at_least(verdicts: Verdicts, what: str, t_other: float, t_ours: float,
                 target: float) -> None:
    """A target ``other / ours >= target`` (ours at least ``target`` times faster)."""
    ratio = t_other / t_ours
    verdicts.append((what, f"{ratio:.1f}x", f">= {target:g}x", verdict(ratio >= target)))


def add_diagnostic(verdicts: Verdicts, what: str, ratio: float) -> None:
    verdicts.append((what, f"{ratio:.2f}x", "none", "diagnostic"))




# ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    load_at_start = os.getloadavg()[0]
    run = start(__doc__, "control-flow", argv, "")
    sizes = QUICK if run.quick else FULL

    def timing(rows: Rows) -> TimedRows:
        return time_rows(rows, repeat=run.repeat, min_time=run.min_time)

    others = jax_timed_rows(sizes, run.repeat, run.min_time, run.keep_memory)
    verdicts: Verdicts = []
    plot: list[PlotPanel] = []
    bench_fori(sizes, timing, others, verdicts, plot)
    bench_scan(sizes, timing, others, verdicts, plot)
    bench_batched(sizes, timing, others, verdicts, plot)
    bench_grad(sizes, timing, others, verdicts)
    print_verdicts(verdicts, "targets (issue 7), each ratio of best times")
    if not run.quick:
        write_course_plot(plot, "bench_control_flow", "Control flow: jit of lax loops against "
                          "NumPy's Python loop", "stage3_vmap", load_at_start)
    finish(run)


if __name__ == "__main__":
    main()
