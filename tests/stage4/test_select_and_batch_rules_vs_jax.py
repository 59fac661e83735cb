"""The sharding rules where JAX is stricter than for elementwise ops, against JAX 0.10.2 in
explicit mode: ``select_n`` (``jnp.where``) wants its cases laid out alike and its predicate
a scalar or laid out as they are; a contraction wants its batch dims split alike on both
sides. Where JAX refuses, ours raises a ``ShardingTypeError``; where it runs, the result's
spec and values are JAX's (a scalar case of ``jnp.where`` takes the other operands' layout).
"""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices
from stage4_sharding.sharding_rules import ShardingTypeError

import stage4_sharding as ours
from stage4_sharding import numpy as jnp

real = jax_with_eight_cpu_devices()

import jax.numpy as real_jnp  # noqa: E402
from jax.sharding import AxisType  # noqa: E402

ROWS, BATCH = (8, 4), (8, 4, 4)
CASES = {  # name: (function of (numpy module, *args), specs, shapes)
    "where, cases split differently": (lambda n, c, a, b: n.where(c > 0, a, b),
                                       [(), (), ("d",)], [ROWS] * 3),
    "where, predicate split alone": (lambda n, c, a, b: n.where(c > 0, a, b),
                                     [("d",), (), ()], [ROWS] * 3),
    "where, predicate unsplit": (lambda n, c, a, b: n.where(c > 0, a, b),
                                 [(), ("d",), ("d",)], [ROWS] * 3),
    "where, all split alike": (lambda n, c, a, b: n.where(c > 0, a, b),
                               [("d",)] * 3, [ROWS] * 3),
    "where, a scalar case": (lambda n, c, a: n.where(c > 0, a, 1.0), [("d",)] * 2, [ROWS] * 2),
    "where, a scalar predicate": (lambda n, a, b: n.where(True, a, b), [("d",)] * 2, [ROWS] * 2),
    "add, one side split": (lambda n, a, b: a + b, [(), ("d",)], [ROWS] * 2),
    "matmul, batch split on the right only": (lambda n, a, b: a @ b, [(), ("d",)], [BATCH] * 2),
    "matmul, batch split on the left only": (lambda n, a, b: a @ b, [("d",), ()], [BATCH] * 2),
    "matmul, batch split alike": (lambda n, a, b: a @ b, [("d",), ("d",)], [BATCH] * 2),
    "matmul, contracting split on one side": (lambda n, a, b: a.T @ b, [(None, "d"), ()],
                                              [(8, 8), (8, 4)]),
}


def _run(lib, n, case: str):
    fun, specs, shapes = CASES[case]
    axis_types = {"axis_types": (AxisType.Explicit,)} if lib is real else {}
    mesh = lib.make_mesh((8,), ("d",), **axis_types)
    rng = np.random.default_rng(0)
    with lib.set_mesh(mesh):
        args = [lib.device_put(rng.standard_normal(shape).astype(np.float32),
                               lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec(*s)))
                for shape, s in zip(shapes, specs)]
        try:
            out = lib.jit(lambda *xs: fun(n, *xs))(*args)
        except Exception as error:  # noqa: BLE001 -- compared below
            return error
        return tuple(e for e in out.sharding.spec), np.asarray(out)


@pytest.mark.parametrize("case", list(CASES))
def test_as_strict_as_jax(case):
    theirs, mine = _run(real, real_jnp, case), _run(ours, jnp, case)
    if isinstance(theirs, Exception):
        assert isinstance(mine, ShardingTypeError), f"JAX raised {theirs!r}; ours gave {mine}"
        return
    assert not isinstance(mine, Exception), f"JAX ran; ours raised {mine!r}"
    strip = lambda spec: tuple(spec[:max([k + 1 for k, e in enumerate(spec) if e] or [0])])
    assert strip(mine[0]) == strip(theirs[0])
    np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-5, atol=1e-6)
