"""Control flow on the GPU (issue 7): loops the CUDA backend keeps as loops, a host loop around
each body's fused kernels. No target: issue 7's targets are the CPU's (bench_control_flow.py);
this measures what the design costs and where it pays.

1. A batched pendulum: ``jit(vmap(integrate))`` over 2**20 initial states, RK4, 200 steps of
   ``lax.fori_loop``; each trip runs the RK4 step's fused kernels over the whole batch. Against
   the same loop in NumPy on (2**20,) arrays (on the host's CPU).
2. An RNN, ``lax.scan`` over 100 steps of ``h = tanh(h @ W + x_t)``, batch 1024, hidden 1024,
   collecting ``h.sum(axis=1)`` each step. Against the NumPy loop (BLAS on the host's CPU).
3. A single pendulum, 1,000 steps (launch-bound: a trip is a few kernel launches on a
   two-element state): the time per trip, which is the floor of any loop on this backend.

Every result is checked against NumPy (float64 where it matters) before it is timed. Ours are
timed by the wall clock around a call and ``block_until_ready``: the median of a few calls,
after a warm-up call that compiles the kernels. ``--smoke``: tiny sizes, one call each, to
check the script under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``); its times mean
nothing.

Run from the repository root (``benchmarks/run_gpu_check.sh`` runs it on a lent GPU machine):

    PYTHONPATH=stage1_autodiff/src:stage2_jit/src:stage3_vmap/src \\
        python benchmarks/bench_control_flow_gpu.py [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import stage3_vmap.numpy as jnp
from bench_control_flow import pendulum, python_fori_loop, python_scan  # benchmarks/
from common import format_seconds  # benchmarks/common.py
from stage2_jit.devices import cuda_unavailable_reason

import stage3_vmap as jax

G, LENGTH = 9.81, 1.0


class Sizes(NamedTuple):
    batch: int  # pendulums in the batched case
    batch_steps: int
    rnn: tuple[int, int, int]  # steps, batch, hidden
    steps: int  # the single pendulum's steps
    repeat: int


FULL = Sizes(batch=1 << 20, batch_steps=200, rnn=(100, 1024, 1024), steps=1000, repeat=5)
SMOKE = Sizes(batch=16, batch_steps=3, rnn=(3, 4, 8), steps=3, repeat=1)


def timed(call: Callable[[], Any], repeat: int) -> float:
    """The median seconds of ``repeat`` calls, each waited for (GPU arrays' kernels
    included), after one call that compiles (for NumPy, a warm-up)."""
    def once() -> float:
        start = time.perf_counter()
        jax.block_until_ready(call())
        return time.perf_counter() - start
    once()
    return statistics.median(once() for _ in range(repeat))


def check(name: str, got: Any, want: Any, rtol: float) -> None:
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol,
                                   err_msg=f"{name}: differs from NumPy")


def batched_pendulum(sizes: Sizes, gpu: Any) -> tuple[str, float, float]:
    rng = np.random.default_rng(0)
    theta = rng.uniform(-1.5, 1.5, sizes.batch).astype(np.float32)
    omega = np.zeros(sizes.batch, np.float32)
    integrate, _, _ = pendulum(jnp, jax.lax.fori_loop, jax.lax.scan, sizes.batch_steps)
    f = jax.jit(jax.vmap(integrate, in_axes=(0, 0, None, None)), backend="cuda")
    args = (jax.device_put(theta, gpu), jax.device_put(omega, gpu), np.float32(G),
            np.float32(LENGTH))
    reference, _, _ = pendulum(np, python_fori_loop, python_scan, sizes.batch_steps)
    want = reference(theta.astype(np.float64), omega.astype(np.float64), G, LENGTH)
    check("batched pendulum", f(*args), want, rtol=1e-3)
    ours = timed(lambda: f(*args), sizes.repeat)
    theirs = timed(lambda: reference(theta, omega, np.float32(G), np.float32(LENGTH)),
                         sizes.repeat)
    return (f"{sizes.batch} pendulums, RK4, {sizes.batch_steps} steps (fori_loop)", ours,
            theirs)


def rnn(sizes: Sizes, gpu: Any) -> tuple[str, float, float]:
    steps, batch, hidden = sizes.rnn
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    xs = rng.standard_normal((steps, batch, hidden)).astype(np.float32)
    h0 = np.zeros((batch, hidden), np.float32)

    def run(h, w, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h, axis=1)
        return jax.lax.scan(step, h, xs)

    def numpy_run(h, w, xs):
        sums = []
        for x in xs:
            h = np.tanh(h @ w + x)
            sums.append(h.sum(axis=1))
        return h, np.stack(sums)

    f = jax.jit(run, backend="cuda")
    args = [jax.device_put(a, gpu) for a in (h0, w, xs)]
    want = numpy_run(h0.astype(np.float64), w.astype(np.float64), xs.astype(np.float64))
    check("rnn", f(*args), want, rtol=2e-3)
    ours = timed(lambda: f(*args), sizes.repeat)
    theirs = timed(lambda: numpy_run(h0, w, xs), sizes.repeat)
    return f"RNN scan, {steps} steps, batch {batch}, hidden {hidden}", ours, theirs


def single_pendulum(sizes: Sizes) -> tuple[str, float, float]:
    integrate, _, _ = pendulum(jnp, jax.lax.fori_loop, jax.lax.scan, sizes.steps)
    f = jax.jit(integrate, backend="cuda")
    args = tuple(np.float32(a) for a in (1.0, 0.0, G, LENGTH))
    reference, _, _ = pendulum(np, python_fori_loop, python_scan, sizes.steps)
    check("single pendulum", f(*args), reference(1.0, 0.0, G, LENGTH), rtol=1e-3)
    ours = timed(lambda: f(*args), sizes.repeat)
    theirs = timed(lambda: reference(*args), sizes.repeat)
    return f"1 pendulum, RK4, {sizes.steps} steps (launch-bound)", ours, theirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, one call each (for the CUDA simulator)")
    options = parser.parse_args(argv)
    reason = cuda_unavailable_reason()
    if reason is not None:
        print(f"no CUDA: {reason}")
        return 1
    sizes = SMOKE if options.smoke else FULL
    gpu = jax.devices("gpu")[0]
    rows = [batched_pendulum(sizes, gpu), rnn(sizes, gpu), single_pendulum(sizes)]
    print("every result matched NumPy's\n")
    print("| case | ours (cuda) | NumPy loop (CPU) | NumPy / ours |\n| --- | --- | --- | --- |")
    for title, ours, theirs in rows:
        print(f"| {title} | {format_seconds(ours)} | {format_seconds(theirs)} "
              f"| {theirs / ours:.2f}× |")
    steps = sizes.steps
    print(f"\nsingle pendulum: {format_seconds(rows[2][1] / steps)} per trip")
    if options.smoke:
        print("(--smoke: the simulator's times mean nothing)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
