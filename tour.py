"""The tour: what each installed stage can do, on real work, with results and timings.

Run it with ``python tour.py`` after the README's install command. Each stage adds a section;
a stage that is not installed is skipped with a note. Timings are the best of several runs,
and the tour prints the machine's load with them. In a student repository, the tour stops at
the first task still to do and lists the tasks that remain.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

MEASURED: dict[str, float] = {}  # timings one section reports for a later one to compare


def banner(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def progress(items: Iterable[int], total: int, label: str,
             status: Callable[[], str]) -> Iterator[int]:
    """A text progress bar: redrawn in place on a terminal, a few lines otherwise."""
    interactive = sys.stdout.isatty()
    start = time.perf_counter()
    for done, item in enumerate(items, 1):
        yield item
        if interactive or done == total or done % max(1, total // 4) == 0:
            filled = int(30 * done / total)
            bar = "#" * filled + "-" * (30 - filled)
            line = (f"{label} [{bar}] {done:>4}/{total} {status()} "
                    f"({time.perf_counter() - start:.1f}s)")
            print(f"\r{line}" if interactive else line, end="" if interactive else "\n",
                  flush=True)
    if interactive:
        print()


def speedup(before: float, after: float) -> str:
    """``after`` against ``before`` in words: "3.2x faster", or "1.5x slower" when it is."""
    ratio = before / after
    factor = ratio if ratio >= 1 else 1 / ratio
    shown = f"{factor:.0f}" if factor >= 10 else f"{factor:.1f}"
    return f"{shown}x {'faster' if ratio >= 1 else 'slower'}"


def load() -> str:
    """The machine's cores and load, printed with the timings: timings on a busy machine
    are slower, and their ratios move."""
    try:
        one_minute = f"load average {os.getloadavg()[0]:.2f}"
    except OSError:  # not on every platform
        one_minute = "load unknown"
    return f"{os.cpu_count()} cores, {one_minute}"


def best_block(times: list[float], blocks: int = 10) -> float:
    """Seconds per step of a training loop: the mean of its fastest block of steps (of
    ``blocks`` in a row), so that a moment when the machine was busy does not count."""
    size = max(1, len(times) // blocks)
    return min(sum(times[i:i + size]) / size for i in range(0, len(times) - size + 1, size))


def timed(fun: Callable[[], object], repeat: int = 200) -> float:
    """Seconds per call, the best of a few rounds of ``repeat`` calls."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fun()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


# ------------------------------------------------------------------------------------------
# Stage 1: autodiff
# ------------------------------------------------------------------------------------------


def tour_stage1() -> None:
    import stage1_autodiff.numpy as jnp

    import stage1_autodiff as jax

    banner("Stage 1: a JAX-style API on primitives, with tape-based autodiff")

    def tanh(x):
        y = jnp.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)

    print("tanh(x) = (1 - exp(-2x)) / (1 + exp(-2x)), written with jax.numpy\n")
    d1 = jax.grad(tanh)
    d2 = jax.grad(d1)
    d3 = jax.grad(d2)
    print(f"  grad(tanh)(1.0)             = {d1(1.0)}")
    print(f"  grad(grad(tanh))(1.0)       = {d2(1.0)}")
    print(f"  grad(grad(grad(tanh)))(1.0) = {d3(1.0)}")
    print(f"  one call of grad(tanh): {timed(lambda: d1(1.0)) * 1e6:.1f} µs")

    print("\nA small MLP on a synthetic classification set made with jax.random:")
    inputs, labels = make_blobs(jax, jnp, jax.random.key(0), num_classes=4, per_class=256)
    print(f"  {inputs.shape[0]} points in {inputs.shape[1]} dims, 4 classes")
    params = init_mlp(jax, jnp, jax.random.key(1), [2, 64, 64, 4])

    def loss_fn(params, inputs, labels):
        logits = mlp(jnp, jax, params, inputs)
        log_probs = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))

    value_and_grad = jax.value_and_grad(loss_fn)
    learning_rate, steps = 0.5, 300
    losses, times = [float(loss_fn(params, inputs, labels))], []
    for _ in progress(range(steps), steps, "  training", lambda: f"loss {losses[-1]:.4f}"):
        start = time.perf_counter()
        loss, grads = value_and_grad(params, inputs, labels)
        params = jax.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)
        losses.append(float(loss))
        times.append(time.perf_counter() - start)
    predictions = jnp.argmax(mlp(jnp, jax, params, inputs), axis=1)
    accuracy = float(jnp.mean((predictions == labels).astype(jnp.float32)))
    print(f"  loss {losses[0]:.4f} -> {losses[-1]:.4f}, training accuracy {accuracy:.1%}, "
          f"{best_block(times) * 1e3:.2f} ms per step ({load()})")
    MEASURED["stage 1 step"] = best_block(times)


def make_blobs(jax, jnp, key, num_classes: int, per_class: int):
    """Gaussian blobs around points on a circle: a small, honest classification task."""
    angles = 2 * jnp.pi * jnp.arange(num_classes) / num_classes
    centers = jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=1) * 2.0
    noise = jax.random.normal(key, (num_classes, per_class, 2))
    points = centers[:, None, :] + 0.8 * noise
    labels = jnp.broadcast_to(jnp.arange(num_classes)[:, None], (num_classes, per_class))
    return points.reshape(-1, 2), labels.reshape(-1)


def init_mlp(jax, jnp, key, sizes: list[int]):
    params = []
    layer_keys = jax.random.split(key, len(sizes) - 1)
    for layer_key, (n_in, n_out) in zip(layer_keys, zip(sizes, sizes[1:])):
        w = jax.random.normal(layer_key, (n_in, n_out)) * jnp.sqrt(1.0 / n_in)
        params.append((w, jnp.zeros(n_out)))
    return params


def mlp(jnp, jax, params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def sharded_loss(jax):
    """Stage 4's loss: the MLP's cross-entropy on a batch of inputs and one-hot targets."""
    def loss_fn(params, batch):
        inputs, targets = batch
        log_probs = jax.nn.log_softmax(mlp(jax.numpy, jax, params, inputs))
        return -jax.numpy.mean(jax.numpy.sum(log_probs * targets, axis=1))
    return loss_fn


# ------------------------------------------------------------------------------------------
# Stage 2: jit
# ------------------------------------------------------------------------------------------


def tour_stage2() -> None:
    import numpy as np
    import stage2_jit.numpy as jnp

    import stage2_jit as jax
    from stage2_jit import tiers

    banner("Stage 2: tracing to jaxprs, and jit to fused Numba kernels")

    def f(x):
        return x * x + x * 2.0

    print("f(x) = x*x + x*2.0 traced to a jaxpr:\n")
    print(jax.make_jaxpr(f)(jnp.ones((4, 4))))
    print("\nthe loop the CPU backend generates for it (one pass over memory):\n")
    source = jax.jit(f, backend="cpu").lower(jnp.ones((4, 4))).as_text()
    loop = source[source.index("def program"):].split("    else:")[0]
    print("\n".join("    " + line for line in loop.splitlines()))

    x = jnp.asarray(np.random.default_rng(0).random((5000, 5000), dtype=np.float32))
    f_jit = jax.jit(f, backend="cpu")
    start = time.perf_counter()
    f_jit(x).block_until_ready()
    first = time.perf_counter() - start
    tiers.wait()  # the kernel compiles in the background while the first calls interpret
    ready = time.perf_counter() - start
    eager = timed(lambda: f(x), repeat=1)
    compiled = timed(lambda: f_jit(x).block_until_ready(), repeat=3)
    print(f"\n5000x5000 float32: eager {eager * 1e3:.1f} ms, jit {compiled * 1e3:.1f} ms "
          f"({speedup(eager, compiled)}; best of 3 runs each, {load()})")
    print(f"  first call {first * 1e3:.0f} ms, on the interpreter (NumPy, a block at a time), "
          f"then the kernel compiled\n  in the background; the kernel was ready "
          f"{ready:.2f} s after the call began\n  (stage2_jit/tiers.py: both tiers give the "
          f"same bits)")
    print("  (each result's 100 MB come from the runtime's pool, the memory of results that "
          "have died:\n  no page faults; the course page 'Buffers and the runtime' and "
          "benchmarks/bench_buffers.py)")

    print("\nThe MLP training step under jit(value_and_grad), one fused Numba kernel:")
    inputs, labels = make_blobs(jax, jnp, jax.random.key(0), num_classes=4, per_class=256)
    params = init_mlp(jax, jnp, jax.random.key(1), [2, 64, 64, 4])

    def loss_fn(params, inputs, labels):
        log_probs = jax.nn.log_softmax(mlp(jnp, jax, params, inputs))
        return -jnp.mean(jnp.sum(log_probs * jax.nn.one_hot(labels, 4), axis=1))

    @jax.jit
    def step(params, inputs, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, inputs, labels)
        return loss, jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)

    start = time.perf_counter()
    loss, params = step(params, inputs, labels)  # jit's default backend: "cpu"
    first = time.perf_counter() - start
    print(f"  first call {first * 1e3:.0f} ms, on the interpreter while the kernel compiles "
          f"(or loads)")
    tiers.wait()
    steps, times = 300, []
    for _ in progress(range(steps), steps, "  training", lambda: f"loss {float(loss):.4f}"):
        start = time.perf_counter()
        loss, params = step(params, inputs, labels)
        times.append(time.perf_counter() - start)
    per_step = best_block(times)
    print(f"  final loss {float(loss):.4f}, {per_step * 1e3:.2f} ms per step ({load()})")
    if "stage 1 step" in MEASURED:
        print(f"  stage 1 eager took {MEASURED['stage 1 step'] * 1e3:.2f} ms per step: jit is "
              f"{speedup(MEASURED['stage 1 step'], per_step)}")
    tour_control_flow(jax, jnp, np)
    tour_stage2_cuda(jax, jnp, f)


def tour_control_flow(jax, jnp, np) -> None:
    """A loop that stays a loop: a pendulum stepped 1,000 times in lax.fori_loop."""
    print("\nStructured control flow: a pendulum, 1,000 steps of semi-implicit Euler in "
          "lax.fori_loop:")

    def integrate(sin, fori_loop, theta, omega):
        def step(i, state):
            theta, omega = state
            omega = omega - 0.01 * 9.81 * sin(theta)
            return theta + 0.01 * omega, omega
        return fori_loop(0, 1000, step, (theta, omega))

    def python_loop(lower, upper, body, state):
        for i in range(lower, upper):
            state = body(i, state)
        return state

    jitted = jax.jit(lambda t, w: integrate(jnp.sin, jax.lax.fori_loop, t, w))
    theta, omega = jitted(1.0, 0.0)
    start = (np.float32(1.0), np.float32(0.0))
    want = integrate(np.sin, python_loop, *start)
    print(f"  final angle {float(theta):.5f} rad (NumPy's Python loop: {want[0]:.5f})")
    line = next(line for line in jitted.lower(1.0, 0.0).as_text().splitlines()
                if "in range(1000)" in line)
    print(f"  the generated code has one loop, not 1,000 copies of the step: {line.strip()}")
    ours = timed(lambda: jitted(1.0, 0.0), repeat=50)
    numpy_time = timed(lambda: integrate(np.sin, python_loop, *start), repeat=3)
    print(f"  jit {ours * 1e6:.0f} µs, NumPy's loop {numpy_time * 1e3:.2f} ms: "
          f"{speedup(numpy_time, ours)} (benchmarks/bench_control_flow.py: RK4, and JAX)")


def tour_stage2_cuda(jax, jnp, f) -> None:
    """The same function on the CUDA backend, when a GPU (or Numba's simulator) is there."""
    import numpy as np
    from stage2_jit.devices import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is not None:
        print(f"\nThe CUDA backend (jit(f, backend='cuda')) is not run here: {reason}.\n"
              "  Install it with: python -m pip install -e './stage2_jit[cuda]'")
        return
    from numba import config

    simulated = config.ENABLE_CUDASIM
    where = "Numba's CUDA simulator" if simulated else "the GPU"
    gpu = jax.devices("gpu")[0]
    n = 64 if simulated else 5000  # the simulator runs each CUDA thread as an OS thread
    host = np.random.default_rng(1).random((n, n), dtype=np.float32)
    x = jax.device_put(host, gpu)  # the array now lives on the device
    fast = jax.jit(f)  # no backend given: jit follows its argument to the GPU
    out = fast(x)
    np.testing.assert_allclose(np.asarray(out), host * host + host * 2.0, rtol=1e-6)
    print(f"\nOn the CUDA backend, run on {where} ({gpu}): x*x + x*2.0 on a {n}x{n} array "
          f"equals NumPy; the result stays on {out.device}.")
    text = jax.jit(lambda v: jax.nn.softmax(v, axis=-1)).lower(x).as_text()
    print(f"  softmax over rows compiles to {text.count('@cuda.jit')} kernel: a block per row "
          f"reads it, reduces it twice and writes the result once.")
    if not simulated:
        times = []
        for _ in range(20):
            start = time.perf_counter()
            fast(x).block_until_ready()
            times.append(time.perf_counter() - start)
        best = min(times)
        print(f"  {best * 1e3:.3f} ms per call ({2 * host.nbytes / best / 1e9:.0f} GB/s moved), "
              f"from the host's clock, launch included.")


# ------------------------------------------------------------------------------------------
# Stage 3: vmap
# ------------------------------------------------------------------------------------------


def tour_stage3() -> None:
    import numpy as np
    import stage3_vmap.numpy as jnp

    import stage3_vmap as jax

    banner("Stage 3: vmap, batching rules, and per-example gradients")

    def l1_distance(x, y):
        return jnp.sum(jnp.abs(x - y))

    pairwise = jax.vmap(jax.vmap(l1_distance, in_axes=(0, None)), in_axes=(None, 0))
    points = jax.random.normal(jax.random.key(0), (100, 3))
    print("l1_distance(x, y) = sum(abs(x - y)) on two points; for every pair of 100 points:\n"
          "  pairwise = vmap(vmap(l1_distance, in_axes=(0, None)), in_axes=(None, 0))\n"
          "traced: no loop left, the batching rules broadcast the points against each other\n")
    print(jax.make_jaxpr(pairwise)(points, points))

    rows = [points[i] for i in range(points.shape[0])]  # split once, outside the timing

    def loop():
        return jnp.stack([jnp.stack([l1_distance(x, y) for x in rows]) for y in rows])

    distances, looped = pairwise(points, points), loop()
    np.testing.assert_allclose(np.asarray(distances), np.asarray(looped), rtol=1e-6)
    pairwise_jit = jax.jit(pairwise)
    pairwise_jit(points, points)  # compiles
    t_loop = timed(loop, repeat=1)
    t_vmap = timed(lambda: pairwise(points, points), repeat=20)
    t_jit = timed(lambda: pairwise_jit(points, points), repeat=20)
    print(f"\n  a {distances.shape} matrix, equal to a Python loop over the "
          f"{len(rows) ** 2} pairs")
    print(f"  the loop {t_loop * 1e3:.0f} ms; vmap {t_vmap * 1e3:.2f} ms "
          f"({speedup(t_loop, t_vmap)}); jit(vmap) {t_jit * 1e6:.0f} µs "
          f"({speedup(t_loop, t_jit)})")
    tour_per_example_grads(jax, jnp)


def tour_per_example_grads(jax, jnp) -> None:
    """Per-example gradient norms of the tour's MLP: vmap of grad against a loop of grad."""
    import numpy as np

    print("\nPer-example gradients of the MLP, vmap(grad(loss), in_axes=(None, 0, 0)):")
    inputs, labels = make_blobs(jax, jnp, jax.random.key(0), num_classes=4, per_class=64)
    params = init_mlp(jax, jnp, jax.random.key(1), [2, 64, 64, 4])

    def loss(params, x, label):  # the loss of one example
        log_probs = jax.nn.log_softmax(mlp(jnp, jax, params, x))
        return -jnp.sum(log_probs * jax.nn.one_hot(label, 4))

    def norm(tree):
        return jnp.sqrt(sum(jnp.sum(leaf * leaf) for leaf in jax.tree_util.tree_leaves(tree)))

    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))
    examples = [(inputs[i], labels[i]) for i in range(inputs.shape[0])]

    def loop():
        return jnp.stack([norm(jax.grad(loss)(params, x, y)) for x, y in examples])

    norms, looped = jax.vmap(norm)(per_example(params, inputs, labels)), loop()
    np.testing.assert_allclose(np.asarray(norms), np.asarray(looped), rtol=1e-5, atol=1e-6)
    t_loop = timed(loop, repeat=1)
    t_vmap = timed(lambda: per_example(params, inputs, labels), repeat=10)
    shown = ", ".join(f"{float(n):.3f}" for n in np.asarray(norms)[:6])
    print(f"  {len(examples)} examples; gradient norms of the first six: {shown}, ...")
    print(f"  equal to a Python loop of grad; the loop {t_loop * 1e3:.0f} ms, vmap "
          f"{t_vmap * 1e3:.2f} ms ({speedup(t_loop, t_vmap)})")


# ------------------------------------------------------------------------------------------
# Stage 4: sharding
# ------------------------------------------------------------------------------------------


def tour_stage4() -> None:
    import numpy as np
    import stage4_sharding.numpy as jnp
    from stage4_sharding.cost_model import report
    from stage4_sharding.sharding import AxisType, set_mesh
    from stage4_sharding.sharding import PartitionSpec as P

    import stage4_sharding as jax

    banner("Stage 4: sharding over simulated devices, the SPMD partitioner, collectives")

    inputs, labels = make_blobs(jax, jnp, jax.random.key(0), num_classes=4, per_class=64)
    targets = jax.nn.one_hot(labels, 4)
    params = init_mlp(jax, jnp, jax.random.key(1), [2, 64, 64, 4])

    loss_fn = sharded_loss(jax)
    print(f"{jax.device_count()} simulated devices: {jax.devices()[:2]} ... each owns the "
          f"blocks put on it.\nThe MLP's gradient, data parallel: the batch split over a "
          f"mesh axis, the parameters on every device\n")
    print("  mesh = jax.make_mesh((8,), ('data',), axis_types=(AxisType.Explicit,))\n"
          "  set_mesh(mesh)\n"
          "  inputs, targets = jax.device_put((inputs, targets), P('data'))\n"
          "  grad_fn = jax.jit(jax.grad(loss_fn))\n"
          "  grads = grad_fn(params, (inputs, targets))\n"
          "(run here inside `with set_mesh(mesh):`, so that the mesh is current in that "
          "block only)")
    mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Explicit,))
    with set_mesh(mesh):  # the mesh is current inside the block only
        split_inputs, split_targets = jax.device_put((inputs, targets), P("data"))
        grad_fn = jax.jit(jax.grad(loss_fn))
        start = time.perf_counter()
        grads = grad_fn(params, (split_inputs, split_targets))
        first = time.perf_counter() - start
        with jax.record_collectives() as log:
            grads = grad_fn(params, (split_inputs, split_targets))
        text = grad_fn.lower(params, (split_inputs, split_targets)).as_text()

    how = ("each device's segment ran on the interpreter, its kernel compiling after it\n"
           "(stage2_jit/tiers.py; the same bits either way)" if jax.config.jax_from_numpy_tiered
           else "its kernels compiled first (tiers are off)")
    print(f"the first call took {first * 1e3:.0f} ms: {how}")
    first = split_inputs.addressable_shards[0]
    device, block = first.device, first.data
    print(f"\nthe inputs, {jax.typeof(split_inputs)}: {inputs.shape[0]} rows in 8 blocks, "
          f"one per device\n({device} holds rows 0 to {block.shape[0] - 1}, "
          f"a block of shape {block.shape}):")
    jax.debug.visualize_array_sharding(split_inputs)
    print(f"\na gradient, {jax.typeof(grads[0][0])} (dW of the first layer): whole, the same "
          f"on every device:")
    jax.debug.visualize_array_sharding(grads[0][0])

    print("\nwhat each device runs, grad_fn.lower(params, (inputs, targets)).as_text() "
          "(shortened):\nthe same program on its block of 32 rows, and an all-reduce (psum) "
          "of each gradient")
    local = text.split("# per-device program")[1].split("# collectives")[0].strip()
    lines = local.splitlines()[1:]  # the first line names the mesh
    shown, skipped = lines[:9], False  # the signature and the first layer
    for line in lines[8:-1]:
        if "psum" in line:
            shown += ["    ...", line] if skipped else [line]
            skipped = False
        else:
            skipped = True
    shown += (["    ..."] if skipped else []) + lines[-1:]
    print("\n".join("  " + line for line in shown))

    print("\nthe collectives one call ran (jax.record_collectives), bytes per device:")
    print("\n".join("  " + line for line in report(log).splitlines()))

    one_device = jax.grad(loss_fn)(params, (np.asarray(inputs), np.asarray(targets)))
    difference = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                     for a, b in zip(jax.tree_util.tree_leaves(grads),
                                     jax.tree_util.tree_leaves(one_device)))
    assert difference < 1e-5, difference
    print(f"\n  the gradients equal grad(loss_fn) on one device (unsharded NumPy inputs):\n"
          f"  max abs difference {difference:.1e}")
    print("  (benchmarks/bench_stage4.py times the step on 8 devices against 1, and counts the "
          "bytes\n  of data parallelism, FSDP and tensor parallelism against their optimum)")
    tour_processes()


def tour_processes() -> None:
    """The same kind of program on several processes, when the mpi extra is installed: the
    tour starts ``mpiexec -n 2`` on itself (``--processes``) and shows process 0's output."""
    import shutil
    import subprocess

    print("\nSeveral processes, one program (multi-controller SPMD, as JAX runs on many "
          "hosts):")
    mpiexec = shutil.which("mpiexec", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                           f"{os.environ.get('PATH', '')}")
    if importlib.util.find_spec("mpi4py") is None or mpiexec is None:
        print("  not run here: it needs the mpi extra (mpi4py and MPICH):\n"
              "  python -m pip install -e './stage4_sharding[mpi]'")
        return
    print(f"  {Path(mpiexec).name} -n 2 python tour.py --processes   (4 devices per process, "
          f"JAX_NUM_CPU_DEVICES=4)")
    result = subprocess.run([mpiexec, "-n", "2", sys.executable, __file__, "--processes"],
                            capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, JAX_NUM_CPU_DEVICES="4"))
    print("\n".join("  " + line for line in result.stdout.splitlines()))
    if result.returncode != 0:
        print(f"  the job failed (exit {result.returncode}):\n{result.stderr[-2000:]}")


def processes_main() -> int:
    """What each process of ``tour_processes``'s job runs; process 0 prints."""
    import numpy as np
    from stage4_sharding.cost_model import report
    from stage4_sharding.experimental import multihost_utils
    from stage4_sharding.sharding import NamedSharding
    from stage4_sharding.sharding import PartitionSpec as P

    import stage4_sharding as jax

    jax.distributed.initialize()  # finds the job mpiexec started
    show = print if jax.process_index() == 0 else (lambda *args, **kwargs: None)
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    show(f"process {jax.process_index()} of {jax.process_count()}: local devices "
         f"{jax.local_devices()} of {jax.device_count()}")
    inputs, labels = make_blobs(jax, jax.numpy, jax.random.key(0), num_classes=4, per_class=64)
    targets = jax.nn.one_hot(labels, 4)
    params = init_mlp(jax, jax.numpy, jax.random.key(1), [2, 64, 64, 4])

    loss_fn = sharded_loss(jax)
    rows = inputs.shape[0] // jax.process_count()  # each process loads its own rows
    mine = slice(jax.process_index() * rows, (jax.process_index() + 1) * rows)
    split = NamedSharding(mesh, P("data"))
    batch = [jax.make_array_from_process_local_data(split, np.asarray(a)[mine])
             for a in (inputs, targets)]
    show(f"the batch: {jax.typeof(batch[0])}, this process holds "
         f"{len(batch[0].addressable_shards)} of its 8 blocks")
    grad_fn = jax.jit(jax.grad(loss_fn))
    grad_fn(params, batch)
    with jax.record_collectives() as log:
        grads = grad_fn(params, batch)
    dw = multihost_utils.process_allgather(grads[0][0], tiled=True)
    alone = jax.grad(loss_fn)(params, (np.asarray(inputs), np.asarray(targets)))[0][0]
    show(f"dW of the first layer equals one process's: max abs difference "
         f"{float(np.max(np.abs(dw - np.asarray(alone)))):.1e}")
    show("the collectives of one step, bytes per device; 'across': what crosses processes")
    show("\n".join(report(log).splitlines()[-4:]))
    jax.distributed.shutdown()
    return 0


SECTIONS = [
    ("stage1_autodiff", tour_stage1),
    ("stage2_jit", tour_stage2),
    ("stage3_vmap", tour_stage3),
    ("stage4_sharding", tour_stage4),
]


INSTALL = ('python -m pip install -e ".[dev]" -e ./stage1_autodiff -e ./stage2_jit '
           '-e ./stage3_vmap -e ./stage4_sharding')
# A task's stub in a student repository (tools/make_student_repo.py writes them).
_STUB = re.compile(r"raise NotImplementedError\(\s*['\"]Task (?P<number>\d+\.\d+) "
                   r"\((?P<id>task\d+_\d+)\): (?P<what>.+?)\. See (?P<page>\S+?)['\"]\)")


def installed(module: str) -> bool:
    """Whether ``module`` is an installed package. Run from the repository's root, a stage's
    folder (``stage1_autodiff/``) would otherwise pass for a namespace package."""
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.origin not in (None, "namespace")


def tasks_to_do() -> list[str]:
    """The tasks whose stubs are still in the installed stages' source, in course order."""
    found = {}
    for module, _ in SECTIONS:
        if installed(module):
            folder = Path(importlib.util.find_spec(module).origin).parent
            for path in sorted(folder.rglob("*.py")):
                for stub in _STUB.finditer(path.read_text(encoding="utf-8")):
                    found.setdefault(stub["id"], f"  Task {stub['number']} ({stub['id']}): "
                                                 f"{stub['what']} ({stub['page']})")
    order = sorted(found, key=lambda i: tuple(int(n) for n in i.removeprefix("task").split("_")))
    return [found[task_id] for task_id in order]


def main() -> int:
    print(f"JAX from NumPy: a tour of the installed stages ({load()})")
    if not any(installed(module) for module, _ in SECTIONS):
        print("\nNo stage is installed in this Python environment. From the repository's root, "
              f"in a virtual environment:\n\n  {INSTALL}\n\nthen run python tour.py again.")
        return 1
    for module, section in SECTIONS:
        if not installed(module):
            banner(f"{module} is not installed: see the README's install command")
            continue
        try:
            section()
        except NotImplementedError as error:
            if not str(error).startswith("Task "):
                raise
            remaining = tasks_to_do()
            print(f"\n\nThe tour stops here: {error}\nThis is a student repository; "
                  f"{len(remaining)} tasks remain:\n" + "\n".join(remaining)
                  + "\nCheck one with python -m pytest -m TASK_ID, all with python tools/grade.py.")
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(processes_main() if "--processes" in sys.argv[1:] else main())
