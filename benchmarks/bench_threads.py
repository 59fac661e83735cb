"""How the MLP step's time depends on threads, on a quiet machine and on a busy one.

Numba's parallel loops and OpenBLAS's matrix products each start a thread per core. On 2
cores with one of them taken by another process, the two pools and the other process take
turns on one core. This script measures it (issue 17, item 7): the MLP 784-512-512-10 step at
batch 256, ``jit(value_and_grad)`` and stage-1 eager, and JAX's, each in a fresh process
started with one thread setting, with and without a busy-looping process beside it ("load").
The target's ratio to JAX comes from rounds that alternate ours and JAX's, its verdict from
their median.

Run: ``python benchmarks/bench_threads.py [--quick]``. The settings are environment variables
of the child processes only: a diagnosis of which default to choose, not a tuned figure.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import print_verdicts, verdict  # benchmarks/common.py

HERE = Path(__file__).resolve().parent
SETTINGS = {
    "default": {},
    "OPENBLAS_NUM_THREADS=1": {"OPENBLAS_NUM_THREADS": "1"},
    "NUMBA_NUM_THREADS=1": {"NUMBA_NUM_THREADS": "1"},
    "both 1": {"OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"},
}

TARGET_RATIO = 1.2  # issue 17: ours jit / JAX's jit, the MLP step, quiet and under load

CHILD = """
import sys, timeit
sys.path.insert(0, {here!r})
import numpy as np
import bench_stage2 as b
which, number = sys.argv[1], int(sys.argv[2])
np_params, np_x, np_labels = b.mlp_problem()
if which == "jax":
    import jax, jax.numpy as jnp
    run = jax.jit(jax.value_and_grad(b.mlp_loss(jnp, jax.nn)))
    block = jax.block_until_ready
else:
    import stage2_jit as jax, stage2_jit.numpy as jnp, stage1_autodiff
    run = (jax.jit(jax.value_and_grad(b.mlp_loss(jnp, jax.nn)), backend="cpu")
           if which == "jit" else stage1_autodiff.value_and_grad(
               b.mlp_loss(stage1_autodiff.numpy, stage1_autodiff.nn)))
    block = lambda x: x
params = [tuple(jnp.asarray(p) for p in layer) for layer in np_params]
x, labels = jnp.asarray(np_x), jnp.asarray(np_labels)
block(run(params, x, labels))
best = min(timeit.repeat(lambda: block(run(params, x, labels)), number=number, repeat=5))
print(best / number)
"""


def _busy() -> None:
    while True:
        pass


def measure(which: str, env: dict[str, str], number: int) -> float:
    done = subprocess.run([sys.executable, "-c", CHILD.format(here=str(HERE)), which,
                           str(number)], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return float(done.stdout.strip().splitlines()[-1])


def measure_both(which: str, env: dict[str, str], number: int) -> tuple[float, float]:
    """Seconds per step in a fresh process: on the machine as it is, then beside a process
    that keeps one core busy."""
    quiet = measure(which, env, number)
    hog = multiprocessing.get_context("spawn").Process(target=_busy, daemon=True)
    hog.start()
    time.sleep(0.5)
    try:
        return quiet, measure(which, env, number)
    finally:
        hog.terminate()


def target_rounds(number: int, rounds: int) -> list[tuple[float, float]] | None:
    """The target's ratio, ours jit (default settings) / JAX's, quiet and under load, from
    ``rounds`` rounds that alternate the two: one fresh process each runs at a different
    moment, and under load the moment moves a single figure by 10-20%."""
    ratios = []
    for _ in range(rounds):
        try:
            ours, jax = measure_both("jit", {}, number), measure_both("jax", {}, number)
        except (RuntimeError, subprocess.TimeoutExpired):  # JAX not installed, say
            return None
        ratios.append((ours[0] / jax[0], ours[1] / jax[1]))
        print(f"  round {len(ratios)}: ours / JAX {ratios[-1][0]:.2f}x quiet, "
              f"{ratios[-1][1]:.2f}x under load")
    return ratios


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions")
    args = parser.parse_args(argv)
    number, rounds = (2, 1) if args.quick else (20, 5)
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    print(f"{'':26s}{'quiet':>12s}{'load (1 busy process)':>24s}")
    rows = [(f"ours jit, {name}", "jit", env) for name, env in SETTINGS.items()]
    rows += [(f"stage-1 eager, {name}", "eager", env) for name, env in SETTINGS.items()
             if name in ("default", "OPENBLAS_NUM_THREADS=1")]
    rows += [("JAX 0.10.2 jax.jit", "jax", {})]
    for label, which, env in rows:
        try:
            quiet, loaded = measure_both(which, env, number)
            print(f"  {label:36s}{quiet * 1e3:8.2f} ms{loaded * 1e3:14.2f} ms")
        except (RuntimeError, subprocess.TimeoutExpired) as e:  # JAX not installed, say
            print(f"  {label:36s} unavailable: {str(e).strip().splitlines()[-1][:60]}")
    title = f"target (issue 17): ours jit (default settings) / JAX <= {TARGET_RATIO}"
    print(f"\n{title}, in {rounds} rounds of ours then JAX:")
    ratios = target_rounds(number, rounds)
    if ratios is None:
        print(f"{title}: not measured, JAX is unavailable")
        return
    print_verdicts([(f"MLP step, {condition}", f"{median:.2f}x", f"<= {TARGET_RATIO}x",
                     verdict(median <= TARGET_RATIO))
                    for condition, median in zip(
                        ("quiet, median of the rounds", "under load, median of the rounds"),
                        np.median(ratios, axis=0))],
                   title)


if __name__ == "__main__":
    sys.exit(main())
