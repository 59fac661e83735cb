"""Stage 1 benchmark: what a tape costs, on a scalar and on an MLP.

0. One eager op on a small array, ``x + y`` on two (3,) float32 arrays, outside any
   transformation: what every primitive costs before any tape. Compared with NumPy's own
   ``+``, PyTorch and JAX eager.
1. ``grad(tanh)(1.0)``, with the course's ``tanh(x) = (1 - exp(-2x)) / (1 + exp(-2x))`` and
   with ``jnp.tanh``: almost all of it is per-primitive overhead. Compared with HIPS autograd,
   PyTorch (CPU) and JAX eager, each when installed.
2. One gradient of a 784-512-10 MLP on a batch of 128 (float32, tanh hidden layer, softmax
   cross-entropy on integer labels) with ``value_and_grad``, against a hand-written NumPy
   forward and backward pass of the same math, and PyTorch. The gradients are checked equal
   before anything is timed. Then the SGD update ``p - lr * g`` over the parameter pytree.

PyTorch and JAX are timed in child processes of their own, so that neither their imports nor
their thread pools touch the timings of ours and NumPy (see benchmarks/README.md).

Run from the repository root:

    PYTHONPATH=stage1_autodiff/src python benchmarks/bench_stage1.py [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections.abc import Callable
from importlib.metadata import version

import numpy as np
from common import (  # benchmarks/common.py
    Timing,
    add_malloc_options,
    keep_freed_memory,
    machine_summary,
    malloc_summary,
    print_table,
    time_in_child,
    time_rows,
    verdict,
)

import stage1_autodiff as jax
from stage1_autodiff import numpy as jnp

EAGER_OP_TARGET_S = 5e-6  # per call of x + y on a small array, outside transformations
TANH_TARGET_S = 50e-6  # per call of grad(tanh)(1.0)
TANH_VS_AUTOGRAD = 0.5  # ours / HIPS autograd, for grad(tanh)(1.0), at most
MLP_TARGET_RATIO = 1.3  # ours / NumPy, for the MLP gradient
SIZES, BATCH, LR = (784, 512, 10), 128, 0.1
SMALL = (np.arange(3, dtype=np.float32), np.full(3, 2.0, np.float32))  # the eager op's x, y
TANH_GRAD_AT_1 = 1 - np.tanh(1.0) ** 2

Rows = list[tuple[str, Callable[[], object] | str]]  # (name, function to time, or a note)
TimedRows = list[tuple[str, Timing | str]]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def course_tanh(np_module):
    """The course's tanh, written with any NumPy-like module."""
    def tanh(x):
        y = np_module.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)
    return tanh


def library_tanh(np_module):
    return np_module.tanh


TANH_CASES = {
    "grad(tanh)(1.0), tanh = (1 - exp(-2x)) / (1 + exp(-2x))": course_tanh,
    "grad(jnp.tanh)(1.0)": library_tanh,
}
EAGER_OP_TITLE = "one eager op: x + y, two (3,) float32 arrays"
MLP_TITLE = (f"MLP {'-'.join(map(str, SIZES))} loss and gradient, batch {BATCH}, float32, "
             f"tanh, softmax cross-entropy")
SGD_TITLE = "SGD update p - lr * g over the MLP's parameters"


# ------------------------------------------------------------------------------------------
# The MLP, three ways
# ------------------------------------------------------------------------------------------


def make_problem(seed: int = 0):
    """float32 parameters [(W1, b1), (W2, b2)], inputs and integer labels, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        w = rng.standard_normal((fan_in, fan_out), dtype=np.float32)
        params.append((w / np.float32(np.sqrt(fan_in)), np.zeros(fan_out, np.float32)))
    x = rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32)
    labels = rng.integers(0, SIZES[-1], size=BATCH).astype(np.int32)
    return params, x, labels


def ours_loss(params, x, labels):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    log_probs = jax.nn.log_softmax(logits)
    one_hot = jax.nn.one_hot(labels, SIZES[-1])
    return -jnp.mean(jnp.sum(one_hot * log_probs, axis=-1))


def numpy_value_and_grad(params, x, labels):
    """The same loss and its gradient by hand, in float32 throughout."""
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp_shifted = np.exp(shifted)
    total = exp_shifted.sum(axis=-1, keepdims=True)
    log_probs = shifted - np.log(total)
    one_hot = (labels[:, None] == np.arange(SIZES[-1])).astype(np.float32)
    loss = -np.mean(np.sum(one_hot * log_probs, axis=-1))
    d_logits = (exp_shifted / total - one_hot) / np.float32(BATCH)  # softmax minus targets
    d_h = d_logits @ w2.T
    d_z1 = d_h * (1 - h * h)
    grads = [(x.T @ d_z1, d_z1.sum(axis=0)), (h.T @ d_logits, d_logits.sum(axis=0))]
    return loss, grads


def numpy_sgd(params, grads):
    return [(w - LR * gw, b - LR * gb) for (w, b), (gw, gb) in zip(params, grads)]


def torch_value_and_grad(torch):
    def value_and_grad(params, x, labels):
        (w1, b1), (w2, b2) = params
        h = torch.tanh(x @ w1 + b1)
        log_probs = torch.log_softmax(h @ w2 + b2, dim=-1)
        one_hot = torch.nn.functional.one_hot(labels, SIZES[-1]).to(torch.float32)
        loss = -(one_hot * log_probs).sum(dim=-1).mean()
        flat = [p for layer in params for p in layer]
        g = torch.autograd.grad(loss, flat)
        return loss, [(g[0], g[1]), (g[2], g[3])]
    return value_and_grad


def checked_numpy_problem():
    """The problem and NumPy's loss and gradient, which the others are checked against."""
    np_params, np_x, np_labels = make_problem()
    np_loss, np_grads = numpy_value_and_grad(np_params, np_x, np_labels)
    leaves = [np_loss] + [g for layer in np_grads for g in layer]
    assert all(leaf.dtype == np.float32 for leaf in leaves), "NumPy left float32"
    return np_params, np_x, np_labels, np_loss, np_grads


def check_grads_equal(name: str, loss, grads, np_loss, np_grads) -> None:
    """A benchmark of a wrong computation is worthless: gradients must match NumPy's first."""
    np.testing.assert_allclose(np.asarray(loss), np_loss, rtol=1e-4, atol=1e-5, err_msg=name)
    for layer, np_layer in zip(grads, np_grads):
        for g, np_g in zip(layer, np_layer):
            g = np.asarray(g)
            assert g.dtype == np.float32, f"{name}: gradient dtype {g.dtype}, not float32"
            np.testing.assert_allclose(g, np_g, rtol=1e-4, atol=1e-5, err_msg=name)


# ------------------------------------------------------------------------------------------
# Other frameworks, each timed in a child process: {table title: (row name, function)}
# ------------------------------------------------------------------------------------------


def torch_scalar_grad(torch, f):
    """PyTorch's grad of ``f`` at a Python float: a fresh leaf tensor each call, as we do."""
    def grad_f(x: float):
        x_t = torch.tensor(x, requires_grad=True)
        (g,) = torch.autograd.grad(f(x_t), x_t)
        return g
    return grad_f


def torch_rows() -> dict[str, tuple[str, Callable[[], object]]]:
    import torch
    name = f"PyTorch {torch.__version__}"
    x, y = (torch.from_numpy(a) for a in SMALL)
    rows = {EAGER_OP_TITLE: (name, lambda: x + y)}
    for title, make_f in TANH_CASES.items():
        grad_f = torch_scalar_grad(torch, make_f(torch))
        np.testing.assert_allclose(float(grad_f(1.0)), TANH_GRAD_AT_1, rtol=1e-5)
        rows[title] = (name, lambda grad_f=grad_f: grad_f(1.0))

    np_params, np_x, np_labels, np_loss, np_grads = checked_numpy_problem()
    params = [tuple(torch.tensor(p, requires_grad=True) for p in layer) for layer in np_params]
    x, labels = torch.tensor(np_x), torch.tensor(np_labels, dtype=torch.int64)
    value_and_grad = torch_value_and_grad(torch)
    loss, grads = value_and_grad(params, x, labels)
    grads = [[g.numpy() for g in layer] for layer in grads]
    check_grads_equal("PyTorch", loss.detach(), grads, np_loss, np_grads)
    rows[MLP_TITLE] = (name, lambda: value_and_grad(params, x, labels))

    flat_params = [torch.from_numpy(p) for layer in np_params for p in layer]
    flat_grads = [torch.from_numpy(g) for layer in np_grads for g in layer]
    rows[SGD_TITLE] = (name, lambda: [p - LR * g for p, g in zip(flat_params, flat_grads)])
    return rows


def jax_rows() -> dict[str, tuple[str, Callable[[], object]]]:
    import jax as real_jax
    x, y = (real_jax.numpy.asarray(a) for a in SMALL)
    rows = {EAGER_OP_TITLE: (f"JAX {real_jax.__version__} eager",
                             lambda: (x + y).block_until_ready())}
    for title, make_f in TANH_CASES.items():
        grad_f = real_jax.grad(make_f(real_jax.numpy))
        np.testing.assert_allclose(float(grad_f(1.0)), TANH_GRAD_AT_1, rtol=1e-5)
        rows[title] = (f"JAX {real_jax.__version__} eager",
                       lambda grad_f=grad_f: grad_f(1.0).block_until_ready())
    return rows


ALL_TITLES = (EAGER_OP_TITLE, *TANH_CASES, MLP_TITLE, SGD_TITLE)
FRAMEWORKS = (  # module, its rows, its name when missing, the tables it has a row in
    ("torch", torch_rows, "PyTorch (CPU)", ALL_TITLES),
    ("jax", jax_rows, "JAX eager", (EAGER_OP_TITLE, *TANH_CASES)),
)


def other_framework_rows(repeat: int, min_time: float, keep_memory: bool) -> dict[str, TimedRows]:
    """PyTorch's and JAX's timed rows for each table, or a note that one is not installed."""
    others: dict[str, TimedRows] = {title: [] for title in ALL_TITLES}
    for module, make_rows, name, titles in FRAMEWORKS:
        if installed(module):
            timed = time_in_child(make_rows, repeat, min_time, keep_memory)
        else:
            timed = {}
        for title in titles:
            others[title].append(timed.get(title, (name, "not installed")))
    return others


# ------------------------------------------------------------------------------------------
# The tables
# ------------------------------------------------------------------------------------------


def bench_eager_op(timing, others: dict[str, TimedRows]) -> None:
    np_x, np_y = SMALL
    x, y = jnp.asarray(np_x), jnp.asarray(np_y)
    np.testing.assert_array_equal(np.asarray(x + y), np_x + np_y)
    timed = timing([("stage1_autodiff", lambda: x + y), ("NumPy", lambda: np_x + np_y)])
    timed += others[EAGER_OP_TITLE]
    print_table(EAGER_OP_TITLE, timed)
    print(f"  target <= {EAGER_OP_TARGET_S * 1e6:.0f} µs per call: "
          f"{verdict(timed[0][1].best <= EAGER_OP_TARGET_S)}")


def bench_tanh(timing, others: dict[str, TimedRows]) -> None:
    autograd = importlib.import_module("autograd") if installed("autograd") else None
    for title, make_f in TANH_CASES.items():
        ours = jax.grad(make_f(jnp))
        np.testing.assert_allclose(float(ours(1.0)), TANH_GRAD_AT_1, rtol=1e-5)
        rows: Rows = [("stage1_autodiff", lambda: ours(1.0))]
        if autograd is None:
            rows.append(("HIPS autograd", "not installed"))
        else:
            other = autograd.grad(make_f(importlib.import_module("autograd.numpy")))
            np.testing.assert_allclose(float(other(1.0)), TANH_GRAD_AT_1, rtol=1e-5)
            rows.append((f"HIPS autograd {version('autograd')}", lambda: other(1.0)))
        timed = timing(rows) + others[title]
        print_table(title, timed)
        ours_s = timed[0][1].best
        print(f"  target <= {TANH_TARGET_S * 1e6:.0f} µs per call: "
              f"{verdict(ours_s <= TANH_TARGET_S)}")
        if autograd is None:
            print(f"  target ours / autograd <= {TANH_VS_AUTOGRAD}: not measured "
                  f"(pip install autograd)")
        else:
            ratio = ours_s / timed[1][1].best
            print(f"  target ours / autograd <= {TANH_VS_AUTOGRAD}: {ratio:.2f}x, "
                  f"{verdict(ratio <= TANH_VS_AUTOGRAD)}")


def bench_mlp(timing, others: dict[str, TimedRows]) -> None:
    np_params, np_x, np_labels, np_loss, np_grads = checked_numpy_problem()
    params = jax.tree_map(jnp.asarray, np_params)
    x, labels = jnp.asarray(np_x), jnp.asarray(np_labels)
    ours = jax.value_and_grad(ours_loss)
    loss, grads = ours(params, x, labels)
    check_grads_equal("stage1_autodiff", loss, grads, np_loss, np_grads)

    timed = timing([
        ("stage1_autodiff value_and_grad", lambda: ours(params, x, labels)),
        ("NumPy, backprop by hand", lambda: numpy_value_and_grad(np_params, np_x, np_labels)),
    ])
    print_table(MLP_TITLE, timed + others[MLP_TITLE])
    ratio = timed[0][1].best / timed[1][1].best
    print(f"  target ours / NumPy <= {MLP_TARGET_RATIO}: {ratio:.2f}x, "
          f"{verdict(ratio <= MLP_TARGET_RATIO)}")
    bench_sgd(timing, others, params, grads, np_params, np_grads)


def bench_sgd(timing, others: dict[str, TimedRows], params, grads, np_params, np_grads) -> None:
    def ours_update():
        return jax.tree_map(lambda p, g: p - LR * g, params, grads)

    np_updated = numpy_sgd(np_params, np_grads)
    for p, np_p in zip(jax.tree_leaves(ours_update()), jax.tree_leaves(np_updated)):
        np.testing.assert_allclose(np.asarray(p), np_p, rtol=1e-5, atol=1e-6)
    timed = timing([("stage1_autodiff tree_map", ours_update),
                    ("NumPy", lambda: numpy_sgd(np_params, np_grads))])
    print_table(SGD_TITLE, timed + others[SGD_TITLE])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="few, short repetitions (a smoke test, not a measurement)")
    add_malloc_options(parser)
    args = parser.parse_args(argv)
    repeat, min_time = (2, 0.005) if args.quick else (7, 0.3)
    keep_memory = args.tuned_malloc and keep_freed_memory()

    def timing(rows: Rows) -> TimedRows:
        return time_rows(rows, repeat=repeat, min_time=min_time)

    print(f"stage 1 benchmark{' (--quick)' if args.quick else ''}: {machine_summary()}; "
          f"{malloc_summary(keep_memory)}")
    print("best and median of the repeats, per call; ours / this > 1 means ours is slower")
    others = other_framework_rows(repeat, min_time, keep_memory)
    bench_eager_op(timing, others)
    bench_tanh(timing, others)
    bench_mlp(timing, others)


if __name__ == "__main__":
    main()
