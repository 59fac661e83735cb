"""Stage 3 benchmark: what ``vmap`` buys over a Python loop, and what it costs against NumPy
written for the batch and against JAX.

1. Pairwise L1 distances, ``vmap(vmap(l1, (0, None)), (None, 0))`` with
   ``l1 = lambda x, y: jnp.sum(jnp.abs(x - y))``, between two sets of (100, 3) and of
   (2000, 64) float32 points: eager ``vmap`` against NumPy broadcasting, ``jit(vmap)``
   against ``jax.jit(jax.vmap)``, and both against a Python loop of ``l1`` over the pairs
   (for 2000 points the loop is timed on a few rows and scaled to all of them).
2. Per-example gradients ``vmap(grad(loss), in_axes=(None, 0, 0))`` of a tanh MLP with softmax
   cross-entropy, batch 256, eager and under ``jit``, against a Python loop of ``grad`` over
   the examples, the same gradients by hand in NumPy, and
   ``jax.jit(jax.vmap(jax.grad(loss), ...))``. Two sizes: a small 64-128-128-10 MLP, where a
   loop pays Python's overhead on every example, and stage 2's 784-512-512-10, where the
   per-example weight gradients alone are 680 MB a call and memory traffic bounds everyone.

Every result is checked equal to NumPy's before it is timed. JAX is timed in a child process
of its own (see benchmarks/README.md). A summary table ends the run: each target, the ratio
measured and met or MISSED. The speed-ups over the Python loops are drawn to
course/assets/bench_stage3.png (not with ``--quick``).

Run from the repository root:

    PYTHONPATH=stage1_autodiff/src:stage2_jit/src:stage3_vmap/src \\
        python benchmarks/bench_stage3.py [--quick]
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import stage3_vmap.numpy as jnp
from common import (  # benchmarks/common.py
    Timing,
    Verdicts,
    finish,
    print_table,
    print_verdicts,
    start,
    time_in_child,
    time_rows,
    verdict,
)
from plotting import PlotPanel, speedups, write_course_plot  # benchmarks/plotting.py

import stage3_vmap as jax

# Targets (from issue 5); a verdict is printed for each, never tuned to pass.
PAIRWISE_VS_NUMPY = 1.5  # eager vmap / NumPy broadcasting, at most
PAIRWISE_VS_JAX = 1.5  # jit(vmap) / jax.jit(jax.vmap), at most
PAIRWISE_VS_LOOP = 50.0  # Python loop / ours, at least
PER_EXAMPLE_VS_LOOP = 20.0  # Python loop of grad / ours, at least
PER_EXAMPLE_VS_JAX = 2.0  # ours / jax.jit(jax.vmap(jax.grad)), at most


class Sizes(NamedTuple):
    """The problem sizes of a run: the full ones, or small ones for ``--quick``."""
    pairwise: tuple[tuple[int, int], ...]  # (points, dims) of each pairwise problem
    loop_pairs: int  # about how many l1 calls the timed loop makes (whole rows of pairs)
    mlps: tuple[tuple[int, ...], ...]  # layer sizes of each MLP
    batch: int


FULL = Sizes(pairwise=((100, 3), (2000, 64)), loop_pairs=10_000,
             mlps=((64, 128, 128, 10), (784, 512, 512, 10)), batch=256)
QUICK = Sizes(pairwise=((20, 3), (200, 16)), loop_pairs=400,
              mlps=((8, 16, 16, 4), (32, 64, 64, 10)), batch=16)

Rows = list[tuple[str, Callable[[], object] | str]]  # (name, function to time, or a note)
TimedRows = list[tuple[str, Timing | str]]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None



def pairwise_title(shape: tuple[int, int]) -> str:
    return f"pairwise L1 distances between two sets of {shape} float32 points"


def mlp_title(sizes: tuple[int, ...], batch: int) -> str:
    return (f"per-example gradients of a {'-'.join(map(str, sizes))} tanh MLP, batch {batch}, "
            f"float32, softmax cross-entropy")


# ------------------------------------------------------------------------------------------
# The computations, written once for any NumPy-like module
# ------------------------------------------------------------------------------------------


def l1_distance(np_module):
    def l1(x, y):
        return np_module.sum(np_module.abs(x - y))
    return l1


def pairwise(vmap, l1):
    """``result[i, j] = l1(x[j], y[i])``: the inner vmap runs over x, the outer over y."""
    return vmap(vmap(l1, (0, None)), (None, 0))


def example_loss(np_module, nn, num_classes: int):
    """The loss of one example: ``x`` a vector, ``label`` an integer scalar."""
    def loss(params, x, label):
        *hidden, (w_out, b_out) = params
        h = x
        for w, b in hidden:
            h = np_module.tanh(h @ w + b)
        log_probs = nn.log_softmax(h @ w_out + b_out)
        return -np_module.sum(nn.one_hot(label, num_classes) * log_probs)
    return loss


def numpy_pairwise(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(x[None, :, :] - y[:, None, :]).sum(axis=-1)


def numpy_per_example_grads(params, x, labels) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each example's gradient by hand, all examples at once: a weight's gradient is the
    outer product of the layer's input and the gradient at its output, per example."""
    hs = [x]
    for w, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ w + b))
    w_out, b_out = params[-1]
    logits = hs[-1] @ w_out + b_out
    exp_shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    one_hot = (labels[:, None] == np.arange(w_out.shape[1])).astype(np.float32)
    d = exp_shifted / exp_shifted.sum(axis=-1, keepdims=True) - one_hot  # softmax - targets
    grads = []
    for layer in reversed(range(len(params))):
        h = hs[layer]
        grads.append((h[:, :, None] * d[:, None, :], d))
        if layer > 0:
            d = (d @ params[layer][0].T) * (1 - h * h)
    return grads[::-1]


# ------------------------------------------------------------------------------------------
# Problems and checks
# ------------------------------------------------------------------------------------------


def pairwise_points(shape: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape, dtype=np.float32),
            rng.standard_normal(shape, dtype=np.float32))


def mlp_problem(sizes: tuple[int, ...], batch: int, seed: int = 2):
    """float32 parameters [(W, b), ...], inputs and integer labels, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = rng.standard_normal((fan_in, fan_out), dtype=np.float32)
        b = rng.standard_normal(fan_out, dtype=np.float32) * np.float32(0.1)
        params.append((w / np.float32(np.sqrt(fan_in)), b))
    x = rng.standard_normal((batch, sizes[0]), dtype=np.float32)
    labels = rng.integers(0, sizes[-1], size=batch).astype(np.int32)
    return params, x, labels


def check_close(name: str, got, want, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """A benchmark of a wrong computation is worthless: results must match first."""
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{name}: dtype {got.dtype}, not float32"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


def check_grads(name: str, grads, want) -> None:
    """Per-example gradients, [(W, b), ...] with the examples on axis 0, against NumPy's."""
    assert len(grads) == len(want), f"{name}: {len(grads)} layers, not {len(want)}"
    for layer, want_layer in zip(grads, want):
        for g, w in zip(layer, want_layer):
            check_close(f"{name} gradient", g, w, rtol=1e-4, atol=1e-5)


def stacked(per_example: list) -> list[tuple[np.ndarray, ...]]:
    """A loop's list of per-example gradient pytrees as one pytree stacked on axis 0."""
    return [tuple(np.stack([np.asarray(g[layer][i]) for g in per_example]) for i in range(2))
            for layer in range(len(per_example[0]))]


def generated(jitted, *args) -> bool:
    """Whether the CPU backend generated a kernel (False: it fell back to the interpreter)."""
    text = jitted.lower(*args).compile().as_text()
    return not text.startswith(("# Not generated", "# backend"))


def loop_rows(points: int, loop_pairs: int) -> int:
    """How many rows of pairs the timed Python loop computes (all of them when few)."""
    return min(points, max(1, loop_pairs // points))


def scaled(timing: Timing, factor: float) -> Timing:
    return Timing(timing.best * factor, timing.median * factor)


# ------------------------------------------------------------------------------------------
# JAX, timed in a child process: {table title: (row name, function)}
# ------------------------------------------------------------------------------------------


def jax_rows(sizes: Sizes) -> dict[str, tuple[str, Callable[[], object]]]:
    import jax as real_jax
    real_jnp = real_jax.numpy
    rows = {}

    def timed(fn, *args):
        return lambda: real_jax.block_until_ready(fn(*args))

    distances = real_jax.jit(pairwise(real_jax.vmap, l1_distance(real_jnp)))
    for shape in sizes.pairwise:
        np_x, np_y = pairwise_points(shape)
        x, y = real_jax.device_put(np_x), real_jax.device_put(np_y)
        check_close(f"JAX pairwise {shape}", distances(x, y), numpy_pairwise(np_x, np_y))
        rows[pairwise_title(shape)] = (f"JAX {real_jax.__version__} jit(vmap)",
                                       timed(distances, x, y))

    for mlp in sizes.mlps:
        np_params, np_x, np_labels = mlp_problem(mlp, sizes.batch)
        params = real_jax.device_put(np_params)
        x, labels = real_jax.device_put(np_x), real_jax.device_put(np_labels)
        loss = example_loss(real_jnp, real_jax.nn, mlp[-1])
        per_example = real_jax.jit(real_jax.vmap(real_jax.grad(loss), in_axes=(None, 0, 0)))
        check_grads("JAX", per_example(params, x, labels),
                    numpy_per_example_grads(np_params, np_x, np_labels))
        rows[mlp_title(mlp, sizes.batch)] = (
            f"JAX {real_jax.__version__} jit(vmap(grad))",
            timed(per_example, params, x, labels))
    return rows


def jax_timed_rows(sizes: Sizes, repeat: int, min_time: float,
                   keep_memory: bool) -> dict[str, tuple[str, Timing | str]]:
    if not installed("jax"):
        return {}
    return time_in_child(functools.partial(jax_rows, sizes), repeat, min_time, keep_memory)


def jax_row(others: dict, title: str, name: str) -> tuple[str, Timing | str]:
    return others.get(title, (name, "not installed"))


# ------------------------------------------------------------------------------------------
# The tables
# ------------------------------------------------------------------------------------------


def bench_pairwise(shape: tuple[int, int], sizes: Sizes, timing, others: dict,
                   verdicts: Verdicts, plot: list[PlotPanel]) -> None:
    np_x, np_y = pairwise_points(shape)
    x, y = jnp.asarray(np_x), jnp.asarray(np_y)
    expected = numpy_pairwise(np_x, np_y)
    l1 = l1_distance(jnp)
    eager = pairwise(jax.vmap, l1)
    compiled = jax.jit(eager)
    check_close("eager vmap", eager(x, y), expected)
    check_close("jit(vmap)", compiled(x, y), expected)
    assert generated(compiled, x, y), "the CPU backend fell back to the interpreter"

    # The loop gets the rows split beforehand (not timed), and computes whole rows of pairs.
    rows = loop_rows(shape[0], sizes.loop_pairs)
    x_rows = [x[j] for j in range(shape[0])]
    y_rows = [y[i] for i in range(rows)]

    def loop():
        return [[l1(xj, yi) for xj in x_rows] for yi in y_rows]
    check_close("Python loop", np.asarray([[np.asarray(d) for d in row] for row in loop()]),
                expected[:rows])

    eager_timing, numpy_timing, jit_timing, loop_timing = (t for _, t in timing([
        ("eager", lambda: eager(x, y)),
        ("NumPy", lambda: numpy_pairwise(np_x, np_y)),
        ("jit", lambda: compiled(x, y)),
        ("loop", loop),
    ]))
    loop_timing = scaled(loop_timing, shape[0] / rows)
    jax_name, jax_timing = jax_row(others, pairwise_title(shape), "JAX jit(vmap)")
    timed = [
        ("stage3_vmap vmap (eager)", eager_timing),
        ("NumPy broadcasting", numpy_timing),
        ("stage3_vmap jit(vmap)", jit_timing),
        ("Python loop of l1, pair by pair" + (" (1)" if rows < shape[0] else ""), loop_timing),
        (jax_name, jax_timing),
    ]
    print_table(pairwise_title(shape), timed)
    loop_note = f" (the loop timed on {rows} rows, scaled)" if rows < shape[0] else ""
    plot.append(speedups(f"pairwise L1 distances, {shape[0]} points of {shape[1]}{loop_note}",
                         timed, "Python loop"))
    if rows < shape[0]:
        print(f"  (1) timed on {rows} of the {shape[0]} rows ({rows * shape[0]} calls of l1) "
              f"and scaled by {shape[0] / rows:g}")

    where = f"pairwise {shape}"
    t_jax = jax_timing.best if isinstance(jax_timing, Timing) else None
    add_at_most(verdicts, f"{where}: eager vmap / NumPy broadcasting", eager_timing.best,
                numpy_timing.best, PAIRWISE_VS_NUMPY)
    add_at_most(verdicts, f"{where}: jit(vmap) / jax.jit(jax.vmap)", jit_timing.best, t_jax,
                PAIRWISE_VS_JAX)
    add_at_least(verdicts, f"{where}: Python loop / eager vmap", loop_timing.best,
                 eager_timing.best, PAIRWISE_VS_LOOP)
    add_at_least(verdicts, f"{where}: Python loop / jit(vmap)", loop_timing.best,
                 jit_timing.best, PAIRWISE_VS_LOOP)


def bench_per_example(mlp: tuple[int, ...], sizes: Sizes, timing, others: dict,
                      verdicts: Verdicts, plot: list[PlotPanel]) -> None:
    np_params, np_x, np_labels = mlp_problem(mlp, sizes.batch)
    params = [tuple(jnp.asarray(p) for p in layer) for layer in np_params]
    x, labels = jnp.asarray(np_x), jnp.asarray(np_labels)
    expected = numpy_per_example_grads(np_params, np_x, np_labels)
    grad = jax.grad(example_loss(jnp, jax.nn, mlp[-1]))
    eager = jax.vmap(grad, in_axes=(None, 0, 0))
    compiled = jax.jit(eager)
    check_grads("eager vmap(grad)", eager(params, x, labels), expected)
    check_grads("jit(vmap(grad))", compiled(params, x, labels), expected)
    assert generated(compiled, params, x, labels), "the CPU backend fell back to the interpreter"

    examples = list(zip((x[i] for i in range(sizes.batch)),
                        (labels[i] for i in range(sizes.batch))))  # split before timing

    def loop():
        return [grad(params, xi, label) for xi, label in examples]
    check_grads("Python loop of grad", stacked(loop()), expected)

    title = mlp_title(mlp, sizes.batch)
    timed = timing([
        ("stage3_vmap vmap(grad) (eager)", lambda: eager(params, x, labels)),
        ("stage3_vmap jit(vmap(grad))", lambda: compiled(params, x, labels)),
        (f"Python loop of grad ({sizes.batch} calls)", loop),
        ("NumPy, backprop by hand", lambda: numpy_per_example_grads(np_params, np_x, np_labels)),
    ])
    timed.append(jax_row(others, title, "JAX jit(vmap(grad))"))
    print_table(title, timed)
    plot.append(speedups(f"per-example gradients, MLP {'-'.join(map(str, mlp))}, batch "
                         f"{sizes.batch}", timed, "Python loop"))
    megabytes = sum(g.nbytes for layer in expected for g in layer) / 1e6
    print(f"  the per-example gradients are {megabytes:.3g} MB per call")

    t = [timing.best if isinstance(timing, Timing) else None for _, timing in timed]
    t_eager, t_jit, t_loop, _, t_jax = t
    where = "MLP " + "-".join(map(str, mlp))
    add_at_least(verdicts, f"{where}: loop of grad / eager vmap(grad)", t_loop, t_eager,
                 PER_EXAMPLE_VS_LOOP)
    add_at_least(verdicts, f"{where}: loop of grad / jit(vmap(grad))", t_loop, t_jit,
                 PER_EXAMPLE_VS_LOOP)
    add_at_most(verdicts, f"{where}: eager vmap(grad) / JAX", t_eager, t_jax,
                PER_EXAMPLE_VS_JAX)
    add_at_most(verdicts, f"{where}: jit(vmap(grad)) / JAX", t_jit, t_jax, PER_EXAMPLE_VS_JAX)


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




# ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    load_at_start = os.getloadavg()[0]
    run = start(__doc__, "stage 3", argv, "")
    sizes = QUICK if run.quick else FULL

    def timing(rows: Rows) -> TimedRows:
        return time_rows(rows, repeat=run.repeat, min_time=run.min_time)

    others = jax_timed_rows(sizes, run.repeat, run.min_time, run.keep_memory)
    verdicts: Verdicts = []
    plot: list[PlotPanel] = []
    for shape in sizes.pairwise:
        bench_pairwise(shape, sizes, timing, others, verdicts, plot)
    for mlp in sizes.mlps:
        bench_per_example(mlp, sizes, timing, others, verdicts, plot)
    print_verdicts(verdicts, "targets (issue 5), each ratio of best times")
    if not run.quick:
        write_course_plot(plot, "bench_stage3", "Stage 3: vmap against a Python loop, NumPy "
                          "and JAX", "stage3_vmap", load_at_start)
    finish(run)


if __name__ == "__main__":
    main()
