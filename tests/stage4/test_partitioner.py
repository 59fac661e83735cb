"""The partitioner's law: sharded equals unsharded. Every primitive, eagerly and under ``jit``,
on the 1-D mesh of 8 and the 2-D mesh of 4x2 devices, with input shardings hypothesis
chooses; then random programs. A layout the sharding rules refuse (explicit mode's errors)
is allowed; a wrong value or a type that differs between eager and ``jit`` is not."""

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stage4_sharding.cost_model import KINDS, CollectiveCost
from stage4_sharding.partitioner import partition
from stage4_sharding.sharding import NamedSharding, P
from stage4_sharding.sharding_rules import ShardingTypeError, sharding_rules

import stage4_sharding as jax
from stage1_autodiff import prims as primitives
from stage4_sharding import lax, runtime
from stage4_sharding import numpy as jnp

laws = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

MESHES = {"1-D (8)": ((8,), ("d",)), "2-D (4x2)": ((4, 2), ("x", "y"))}


def mesh_for(name: str):
    shape, names = MESHES[name]
    return jax.make_mesh(shape, names)


# ------------------------------------------------------------------------------------------
# convert, through reshard (Task 4.2)
# ------------------------------------------------------------------------------------------


@pytest.fixture
def free_collectives(monkeypatch):
    """The runtime without the ring cost model, which is Task 4.3, after this one: every
    collective still runs and is recorded, at no cost."""
    def free(primitive, operand, axes, group_size, params):
        kind = KINDS.get(primitive)
        return kind and CollectiveCost(primitive, kind, axes, group_size, operand, 0.0, 0.0, 0.0)

    monkeypatch.setattr(runtime, "collective_cost", free)


CUBE = np.arange(128.0, dtype=np.float32).reshape(8, 4, 4)


@pytest.mark.task4_2
@pytest.mark.parametrize("source, target, moves", [
    (P("data", "model"), P("data", "model"), []),
    (P("data", "model"), P(None, "model", "data"), ["all_to_all"]),  # data moves to dim 2
    (P("data", "model"), P(("data", "model")), ["all_gather"]),
    (P("data", "model"), P("model", "data"), ["all_gather", "all_gather"]),
    (P("data", "model"), P(), ["all_gather", "all_gather"]),
    (P("data"), P(("data", "model")), []),  # split further: a free slice
    (P(), P("model", None, "data"), []),
    (P(("data", "model")), P("data"), ["all_gather", "all_gather"]),  # whole, then a slice
], ids=lambda value: str(value).replace("PartitionSpec", "P").replace("'", ""))
def test_convert_moves_blocks_with_the_fewest_collectives(free_collectives, source, target,
                                                           moves):
    grid = jax.make_mesh((4, 2), ("data", "model"))
    cube = jax.device_put(CUBE, NamedSharding(grid, source))
    with jax.record_collectives() as log:
        moved = jax.sharding.reshard(cube, NamedSharding(grid, target))
    np.testing.assert_array_equal(np.asarray(moved), CUBE)
    # (reshard types its result with one spec entry per dim, as JAX's does)
    assert moved.sharding.spec == P(*target, *[None] * (CUBE.ndim - len(target)))
    assert [c.primitive for c in log] == moves
    for shard in moved.addressable_shards:
        index = NamedSharding(grid, target).devices_indices_map(CUBE.shape)[shard.device]
        assert shard.index == index
        np.testing.assert_array_equal(np.asarray(shard.data), CUBE[index])


rng = np.random.default_rng(0)
F = rng.standard_normal((8, 16)).astype(np.float32)
G = rng.standard_normal((8, 16)).astype(np.float32)
INTS = rng.integers(0, 50, (8, 16)).astype(np.int32)
J = rng.integers(1, 5, (8, 16)).astype(np.int32)
B = rng.random((8, 16)) > 0.5
C = rng.random((8, 16)) > 0.3
U = rng.integers(0, 2**32, (8, 16), dtype=np.uint64).astype(np.uint32)
IDX = np.array([[3], [0], [7], [3]], np.int32)


@jax.custom_vjp
def clipped_square(v):
    return v * v


clipped_square.defvjp(lambda v: (v * v, v), lambda v, ct: (jnp.clip(2 * v * ct, -1.0, 1.0),))


@jax.custom_jvp
def safe_square(v):
    return v * v


safe_square.defjvp(lambda p, t: (safe_square(p[0]), 2.0 * p[0] * t[0]))


def _special_functions(t):
    """Stage 1's special_functions.py primitives, on positive operands."""
    sp = jax.scipy.special
    return (sp.gammainc(t, 1.5), sp.gammaincc(t, 1.5), lax.igamma_grad_a(t, t),
            sp.betainc(t, 2.0, 0.5), sp.zeta(t + 1, t), sp.i0e(t), sp.i1e(t), sp.erfcx(t),
            sp.dawsn(t), sp.expi(t), sp.spence(t), sp.expn(2, t), *sp.sici(t),
            *sp.fresnel(t), sp.owens_t(t, 0.5), sp.hyp1f1(t, 2.0, 0.5),
            sp.hyp2f1(t, 1.0, 2.0, 0.5))


# Each case: the function and its inputs. Together they bind every primitive with a
# sharding rule (checked below).
_M = np.random.default_rng(5).standard_normal((8, 3, 3)).astype(np.float32)
SPD8 = _M @ _M.transpose(0, 2, 1) + 3 * np.eye(3, dtype=np.float32)  # 8 matrices, 3x3


CASES: dict[str, tuple[Callable, tuple]] = {
    "unary": (lambda x: (
        -x, jnp.exp(x), jnp.log(jnp.abs(x) + 1), jnp.sin(x), jnp.cos(x), jnp.tan(x * 0.1),
        jnp.tanh(x), jax.nn.sigmoid(x), jnp.sqrt(jnp.abs(x)), jnp.abs(x), jnp.sign(x),
        jnp.floor(x), jnp.ceil(x), x ** 3, lax.erf_inv(jnp.tanh(x) * 0.5),
        jnp.log1p(jnp.abs(x)), jnp.expm1(x), lax.stop_gradient(x), jnp.copy(x), jnp.sinh(x),
        jnp.cosh(x), jax.ad_checkpoint.checkpoint_name(x, "x"),
        jnp.arcsin(jnp.tanh(x) * 0.5), jnp.arccos(jnp.tanh(x) * 0.5), jnp.arctan(x),
        jnp.arcsinh(x), jnp.arccosh(jnp.abs(x) + 1.5), jnp.arctanh(jnp.tanh(x) * 0.5),
        jnp.cbrt(x), jnp.exp2(x), lax.rsqrt(jnp.abs(x) + 1), lax.erf(x), lax.erfc(x),
        lax.lgamma(jnp.abs(x) + 0.5), lax.digamma(jnp.abs(x) + 0.5),
        lax.polygamma(jnp.ones_like(x), jnp.abs(x) + 0.5), lax.clamp(-0.5, x, 0.5),
        lax.nextafter(x, jnp.zeros_like(x)), lax.reduce_precision(x, 5, 2),
        *_special_functions(jnp.abs(x) + 0.5)), (F,)),
    "binary": (lambda x, y: (
        x + y, x - y, x * y, x / (jnp.abs(y) + 1), lax.rem(x, jnp.abs(y) + 1),
        jnp.power(jnp.abs(x) + 0.5, y), jnp.maximum(x, y), jnp.minimum(x, y),
        jnp.arctan2(x, y), x == y, x != y, x < y, x <= y, x > y, x >= y,
        jnp.where(x > y, x, -x), jnp.where(x > 0, 1.0, x)), (F, G)),
    "integer": (lambda i, j: (
        i & j, i | j, i ^ j, ~i, i << j, i >> j, lax.shift_right_logical(i, j),
        i.astype(np.float32), lax.bitcast_convert_type(i, np.float32)), (INTS, J)),
    "boolean": (lambda a, b: (a & b, a | b, ~a, jnp.any(a, axis=1), jnp.all(b, axis=0)),
                (B, C)),
    "reductions": (lambda x: (
        x.sum(0), x.sum(1), x.sum(), x.max(0), x.min(1), jnp.prod(x * 0.1 + 1, axis=0),
        jnp.argmax(x, 0), jnp.argmin(x, 1)), (F,)),
    "contractions": (lambda x, y: (
        jnp.matmul(x, y.T), jnp.matmul(x.T, y, out_sharding=P()),
        # batch dims split alike (JAX refuses a split on one side only)
        jnp.einsum("bij,bjk->bik", x.reshape(8, 4, 4), jnp.sin(x).reshape(8, 4, 4))), (F, G)),
    "shapes": (lambda x, y: (  # dim 0 may stay split
        x.T, x[None], jnp.reshape(x, (8, 4, 4)), jnp.squeeze(x[:, None], 1),
        jnp.broadcast_to(x[:, :1], (8, 16)), x[:, ::2],
        lax.pad(x, np.float32(0), ((0, 0, 0), (1, 2, 1))), jnp.flip(x, 1), jnp.tile(x, (1, 2)),
        jnp.concatenate([x, x * 2.0], 1), lax.sort(x, dimension=1), jnp.arange(16.0) + x),
        (F, G)),
    "moved dims": (lambda x, y: (  # dim 0 may stay split, and its elements change devices
        jnp.reshape(x, (128,)), jnp.flip(x, 0), jnp.concatenate([x, x * 2.0], 0),
        lax.pad(x, np.float32(0), ((4, 4, 0), (0, 0, 0)))[3:11], x[::-1] + y), (F, G)),
    "whole dims": (lambda x, y: (  # dim 0 must be whole (or split as y is), as in JAX
        x[1:5], lax.pad(x, np.float32(0), ((1, 1, 0), (0, 0, 0))),
        jnp.concatenate([x, y], 0), lax.sort(x, dimension=0)), (F, G)),
    "indexing": (lambda x, y: (  # gathers and scatters, rows indexed (some repeated)
        x[IDX[:, 0]], x[IDX[:2]], x.at[IDX[:, 0]].add(y[:4]), x.at[IDX[:, 0]].set(y[:4]),
        x.at[IDX[:, 0]].multiply(y[:4]), x.at[IDX[:, 0]].min(y[:4]),
        x.at[IDX[:, 0]].max(y[:4])), (F, G)),
    "column updates": (lambda x, y: (  # a column of every row: dim 0 may stay split
        x.at[:, 3].add(y[:, 0]), x.at[..., np.array([1, 20, -1])].set(y[:, :3]),
        x[:, np.array([0, 15, 16])], jnp.take(x, np.array([2, 99]), axis=1)), (F, G)),
    "programs": (lambda x: (jax.jit(lambda v: jnp.sin(v).sum(1))(x), clipped_square(x),
                            jax.grad(lambda v: clipped_square(v).sum())(x)), (F,)),
    "custom_jvp and remat": (lambda x: (
        safe_square(x), jax.grad(lambda v: safe_square(v).sum())(x),
        jax.checkpoint(jnp.sin)(x), jax.grad(lambda v: jax.checkpoint(jnp.sin)(v).sum())(x)),
        (F,)),
    "control flow": (lambda x: (
        lax.cond(x.sum() > 0, lambda u: u * 2.0, jnp.sin, x),
        lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) + i, x),
        lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5), (0, x))[1],
        lax.scan(lambda c, r: (c + r, c * r), x.T[0] * 0.0, x.T)), (F,)),
    "scans and windows": (lambda x, y: (  # dim 1 scanned, sorted or sliced: dim 0 may be split
        lax.cumsum(x, 1), lax.cumprod(x * 0.1 + 1.0, 1, reverse=True), lax.cummax(x, 1),
        lax.cummin(x, 1), *lax.top_k(x, 3), lax.dynamic_slice(x, (0, 5), (8, 4)),
        lax.dynamic_update_slice(x, y[:, :4] * 2.0, (0, 9))), (F, G)),
    "pooling and convolution": (lambda x, y: (  # windows along dim 1: dim 0 may be split
        lax.reduce_window(x, -jnp.inf, lax.max, (1, 3), (1, 2), "SAME"),
        lax.reduce_window(x, 0.0, lax.add, (1, 2), (1, 1), "VALID"),
        lax.reduce_window(x, jnp.inf, lax.min, (1, 2), (1, 2), "VALID"),
        lax.conv_general_dilated(x.reshape(8, 4, 4), y[:2, :12].reshape(2, 4, 3), (1,),
                                 "SAME")), (F, G)),
    "complex and fft": (lambda x, y: (  # dim 1 transformed: dim 0 may stay split
        jnp.real(lax.complex(x, y)), jnp.imag(lax.complex(x, y)), jnp.abs(lax.complex(x, y)),
        jnp.conj(lax.complex(x, y)), jnp.fft.fft(x), jnp.fft.ifft(lax.complex(x, y)),
        jnp.fft.irfft(jnp.fft.rfft(x), 16)), (F, G)),
    "linear algebra": (lambda x: (  # batches of 3x3 matrices: only dim 0 can be split
        lax.linalg.cholesky(x), lax.linalg.triangular_solve(x, x, left_side=True, lower=True),
        *lax.linalg.lu(x), *lax.linalg.qr(x), lax.linalg.eigh(x)[1],
        lax.linalg.svd(x, compute_uv=False), *lax.linalg.eig(x)), (SPD8,)),
    "random": (lambda u, v: (*primitives.threefry2x32(u, v, v, u),
                             jax.random.normal(jax.random.key(0), (8, 16))), (U, U[::-1])),
    "random samplers": (lambda a: (  # gamma per element, its gradient in a, poisson
        jax.random.gamma(jax.random.key(1), a),
        jax.grad(lambda a: jax.random.gamma(jax.random.key(1), a).sum())(a),
        jax.random.poisson(jax.random.key(2), a)), (np.abs(F) + 0.5,)),
}


def draw_spec(data, shape, mesh, used: set[str]) -> P:
    """A spec for ``shape``: each dim whole or split over a mesh axis (or, on the 2-D mesh,
    both) that divides it and that no other dim of the arguments' specs of this draw uses."""
    entries = []
    for d, size in enumerate(shape):
        options = [None] + [name for name in mesh.axis_names
                            if name not in used and size % mesh.shape[name] == 0]
        if len(mesh.axis_names) == 2 and not used & set(mesh.axis_names) and \
                size % mesh.size == 0:
            options.append(tuple(mesh.axis_names))
        entry = data.draw(st.sampled_from(options), label=f"dim {d}")
        entries.append(entry)
        if entry is not None:
            used.update(entry if isinstance(entry, tuple) else (entry,))
    return P(*entries)


def flat(tree) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_leaves(tree)]


def assert_sharded_equals_unsharded(fun, inputs, sharded, jit_backend="interpreter"):
    mesh = next(x.sharding.mesh for x in sharded if isinstance(x, jax.Array)
                and isinstance(getattr(x, "sharding", None), NamedSharding))
    with jax.set_mesh(mesh):  # where out_sharding=P() names the mesh's axes, as in JAX
        expected = flat(fun(*[jnp.asarray(x) for x in inputs]))
    for run in (fun, jax.jit(fun, backend=jit_backend)):
        try:
            result = run(*sharded)
        except ShardingTypeError:
            return "refused"
        got = flat(result)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
    eager_types = [str(jax.typeof(r)) for r in jax.tree_leaves(fun(*sharded))]
    jit_types = [str(jax.typeof(r)) for r in jax.tree_leaves(jax.jit(fun)(*sharded))]
    assert eager_types == jit_types
    return "ran"


@pytest.mark.parametrize("mesh_name", list(MESHES))
@pytest.mark.parametrize("case", list(CASES))
@laws
@given(data=st.data())
def test_sharded_equals_unsharded_for_every_primitive(case, mesh_name, data):
    fun, inputs = CASES[case]
    mesh = mesh_for(mesh_name)
    used: set[str] = set()
    specs = [draw_spec(data, x.shape, mesh, used if case != "contractions" else set())
             for x in inputs]
    sharded = [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(inputs, specs)]
    assert_sharded_equals_unsharded(fun, inputs, sharded)


@pytest.mark.parametrize("case", list(CASES))
def test_every_case_runs_fully_split_on_the_1d_mesh(case):
    """The first input split over all 8 devices (along dim 1 for indexing, which reads dim 0
    anywhere): only the ops that need dim 0 whole may refuse (the law above could pass by
    refusing)."""
    fun, inputs = CASES[case]
    mesh = mesh_for("1-D (8)")
    spec = P(None, "d") if case == "indexing" else P("d")
    sharded = [jax.device_put(inputs[0], NamedSharding(mesh, spec)),
               *map(jnp.asarray, inputs[1:])]
    outcome = assert_sharded_equals_unsharded(fun, inputs, sharded)
    assert outcome == ("refused" if case == "whole dims" else "ran")


def test_the_cases_bind_every_primitive_with_a_sharding_rule():
    bound = set()
    for fun, inputs in CASES.values():
        with jax.set_mesh(mesh_for("1-D (8)")):
            closed = jax.make_jaxpr(fun)(*inputs)
        bound |= {eqn.primitive for eqn in closed.jaxpr.eqns}
    # tested in test_shard_map.py etc., the callbacks in test_*_callback_against_jax.py
    programs = {"debug_print", "reshard", "shard_map", "pure_callback", "io_callback"}
    missing = {p.name for p in sharding_rules if p not in bound} - programs
    assert not missing


# ------------------------------------------------------------------------------------------
# Random programs
# ------------------------------------------------------------------------------------------

UNARY = [jnp.tanh, jnp.sin, lambda v: v * 0.5 + 1.0, jnp.abs, lambda v: jnp.maximum(v, 0.0)]


def draw_program(data):
    """A program of 3-10 steps over two (8, 16) inputs: elementwise ops, broadcasts of
    reductions, transposes, reshapes and matrix products, each step's operands drawn from
    the values so far."""
    steps = []
    shapes = [(8, 16), (8, 16)]
    for _ in range(data.draw(st.integers(3, 10), label="length")):
        i = data.draw(st.integers(0, len(shapes) - 1))
        j = data.draw(st.integers(0, len(shapes) - 1))
        kind = data.draw(st.sampled_from(
            ["unary", "binary", "reduce", "transpose", "matmul", "reshape"]))
        if kind == "binary" and shapes[i] != shapes[j]:
            kind = "unary"
        if kind == "matmul" and shapes[i][-1] != shapes[j][0]:
            kind = "transpose"
        if kind == "reshape" and shapes[i] != (8, 16):
            kind = "reduce"
        if kind == "unary":
            f = data.draw(st.sampled_from(UNARY))
            steps.append(lambda vs, i=i, f=f: f(vs[i]))
            shapes.append(shapes[i])
        elif kind == "binary":
            op = data.draw(st.sampled_from([jnp.add, jnp.multiply, jnp.subtract]))
            steps.append(lambda vs, i=i, j=j, op=op: op(vs[i], vs[j]))
            shapes.append(shapes[i])
        elif kind == "reduce":  # keepdims, broadcast back: the shape stays
            axis = data.draw(st.integers(0, len(shapes[i]) - 1))
            steps.append(lambda vs, i=i, axis=axis: vs[i] - jnp.max(vs[i], axis, keepdims=True))
            shapes.append(shapes[i])
        elif kind == "transpose":
            steps.append(lambda vs, i=i: vs[i].T)
            shapes.append(shapes[i][::-1])
        elif kind == "matmul":
            steps.append(lambda vs, i=i, j=j: jnp.tanh(vs[i] @ vs[j]) * 0.1)
            shapes.append((shapes[i][0], shapes[j][-1]))
        else:
            steps.append(lambda vs, i=i: jnp.reshape(vs[i], (8, 4, 4)).sum(-1).T.reshape(8, 4)
                         @ jnp.ones((4, 16), np.float32))
            shapes.append((8, 16))

    def program(x, y):
        vals = [x, y]
        for step in steps:
            vals.append(step(vals))
        return vals[-1], vals[len(vals) // 2]
    return program


@pytest.mark.parametrize("mesh_name", list(MESHES))
@laws
@given(data=st.data())
def test_sharded_equals_unsharded_on_random_programs(mesh_name, data):
    program = draw_program(data)
    mesh = mesh_for(mesh_name)
    used: set[str] = set()
    specs = [draw_spec(data, (8, 16), mesh, used) for _ in range(2)]
    inputs = [F, G]
    sharded = [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(inputs, specs)]
    assert_sharded_equals_unsharded(program, inputs, sharded)


def test_random_programs_of_stage_2_on_the_2d_mesh():
    """Stage 2's random-program generator (the jit laws'), with inputs split where their
    small dims divide the mesh axes."""
    sys.path.append(str(Path(__file__).resolve().parent.parent / "stage2"))
    from test_jit_laws import draw_program as stage2_program
    from test_jit_laws import f32
    mesh = mesh_for("2-D (4x2)")
    ran = []

    @settings(max_examples=25, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def law(data):
        program, inputs = stage2_program(data, f32, True)
        used: set[str] = set()
        specs = [draw_spec(data, np.shape(x), mesh, used) for x in inputs]
        sharded = [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(inputs, specs)]
        ran.append(assert_sharded_equals_unsharded(program, inputs, sharded))

    law()
    assert "ran" in ran


def test_partitioned_program_is_cached_with_its_global_program():
    mesh = mesh_for("1-D (8)")
    x = jax.device_put(F, NamedSharding(mesh, P("d")))
    f = jax.jit(lambda v: jnp.tanh(v).sum(0))
    closed = f.lower(x).partitioned.global_program
    assert partition(closed, mesh) is partition(closed, mesh)


def test_every_primitive_has_a_partition_rule_or_runs_on_the_devices():
    """Only iota (no operands, replicated) takes the generic rule; the collectives and
    shard_slice are what the runtime runs between segments."""
    from stage1_autodiff.core import all_primitives
    from stage4_sharding.partitioner import partition_rules
    from stage4_sharding.runtime import DEVICE_PRIMITIVES
    generic = {p.name for p in all_primitives
               if p not in partition_rules and p not in DEVICE_PRIMITIVES}
    assert generic == {"iota"}



def test_loops_keep_their_carry_sharding_and_scan_steps_along_a_whole_dim():
    mesh = mesh_for("1-D (8)")
    x = jax.device_put(F, NamedSharding(mesh, P("d")))
    with pytest.raises(ShardingTypeError, match=r"scan: carry 0 is float32\[8\] going in "
                                                r"and float32\[8@d\] coming out"):
        jax.jit(lambda v: lax.scan(lambda c, r: (c + r, c), jnp.zeros(8), v.T))(x)
    with pytest.raises(ShardingTypeError, match="it steps along dim 0, which is split"):
        jax.jit(lambda v: lax.scan(lambda c, r: (c + r, c), jnp.zeros(16), v))(x)
    # the loop stays one loop in the per-device program (with collectives in its body too:
    # test_control_flow_collectives.py)
    text = jax.jit(lambda v: lax.fori_loop(0, 5, lambda i, c: c * 2.0, v)).lower(x).as_text()
    assert text.split("# per-device program")[1].count("scan[") == 1
