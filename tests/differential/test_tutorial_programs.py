"""Tutorial-style programs, each a script written for JAX (``tutorials/*.py``), run twice: as
written, on JAX 0.10.2, and with only the import swapped (``jax`` -> ``stage4_sharding``). The
results must agree leaf by leaf: structure, shape, dtype, weak type and values.

This is the README's promise checked on whole programs (regression, classifiers, attention,
GP regression, a CNN, an ODE in ``scan``, per-example gradients, ``custom_jvp``, remat,
cumulative sums and dynamic slices, Newton's method, data parallelism, Monte Carlo, a
``stax`` network trained with ``optimizers``, tensor parallelism with ``auto_axes``; a
transformer trained with Adam and donation, a VAE, HMC, k-means, EM, Sinkhorn, molecular
relaxation, spectral methods, least squares, sampling from many distributions, indexing and
scatters, batching idioms, mixed precision, custom rules, pytree modules, ``shard_map``; a
graph network, a normalizing flow, a diffusion model, REINFORCE, a masked bidirectional LSTM,
an N-body simulation, optimizers written out, integer hashing and bit tricks, a quantum
circuit, image processing, key arrays, a Laplace approximation, a state machine of branches).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("jax") is None:
    pytest.skip("JAX (the oracle) is not installed", allow_module_level=True)

import jax  # noqa: E402

PROGRAMS = sorted((Path(__file__).parent / "tutorials").glob("*.py"))

# The import lines of a JAX program, and what each becomes with the import swapped.
SWAPS = [
    (re.compile(r"^import jax$", re.M), "import stage4_sharding as jax"),
    (re.compile(r"^import jax\.(\S+) as (\w+)$", re.M), r"import stage4_sharding.\1 as \2"),
    (re.compile(r"^from jax(\.\S+)? import ", re.M), r"from stage4_sharding\1 import "),
]


def swapped(source: str) -> str:
    for pattern, replacement in SWAPS:
        source = pattern.sub(replacement, source)
    return source


def run(source: str, name: str):
    """Runs the program as a module of its own, as ``python program.py`` would: registered in
    ``sys.modules`` (``dataclasses`` looks its module up) and compiled without this file's
    ``from __future__ import annotations``, which ``compile`` would otherwise pass on."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, f"<{name}>", "exec", dont_inherit=True), module.__dict__)
        return module.main()
    finally:
        del sys.modules[name]


def leaves(tree):
    return jax.tree_util.tree_flatten(tree, is_leaf=lambda x: not isinstance(
        x, (list, tuple, dict)))


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_a_jax_program_runs_unchanged_and_agrees_with_jax(path):
    source = path.read_text()
    assert "stage4_sharding" not in source  # written for JAX
    expected = run(source, f"jax_{path.stem}")
    got = run(swapped(source), f"ours_{path.stem}")
    want_leaves, want_tree = leaves(expected)
    got_leaves, got_tree = leaves(got)
    assert got_tree == want_tree
    for k, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        g_np, w_np = np.asarray(g), np.asarray(w)
        where = f"{path.stem}: leaf {k}"
        if isinstance(w, str):  # a type or a mesh as printed
            assert g == w, where
            continue
        assert g_np.dtype == w_np.dtype and g_np.shape == w_np.shape, where
        assert getattr(g, "weak_type", None) == getattr(w, "weak_type", None), where
        np.testing.assert_allclose(g_np, w_np, rtol=2e-4, atol=2e-5, err_msg=where)


def test_the_swap_changes_every_import_of_jax_and_nothing_else():
    source = ("import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
              "from jax.scipy.linalg import cho_solve\nx = jax.jit(f)  # jax\n")
    assert swapped(source) == (
        "import stage4_sharding as jax\nimport stage4_sharding.numpy as jnp\n"
        "from stage4_sharding import lax\nfrom stage4_sharding.scipy.linalg import cho_solve\n"
        "x = jax.jit(f)  # jax\n")
