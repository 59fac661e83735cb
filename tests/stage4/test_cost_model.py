"""The communication cost model: each collective's bytes and time by its ring algorithm, the
compiled program's report, what the runtime records, and three training programs against
their analytic optimum (data parallelism, FSDP, Megatron-style tensor parallelism)."""

import numpy as np
import pytest
from stage1_autodiff.core import ShapedArray
from stage4_sharding.cost_model import collective_cost, report
from stage4_sharding.sharding import NamedSharding, P

import stage4_sharding as jax
from stage4_sharding import examples

F32 = np.dtype(np.float32)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("data",))


@pytest.fixture
def link():
    """A known latency and bandwidth, restored afterwards."""
    before = (jax.config.jax_collective_latency, jax.config.jax_link_bandwidth)
    jax.config.update("jax_collective_latency", 1e-5)
    jax.config.update("jax_link_bandwidth", 1e9)
    yield
    jax.config.update("jax_collective_latency", before[0])
    jax.config.update("jax_link_bandwidth", before[1])


@pytest.mark.task4_3
@pytest.mark.parametrize("primitive, sent, seconds", [
    ("psum", 2 * 7 / 8 * 4096, 2 * 7 * (1e-5 + 4096 / 8 / 1e9)),
    ("pmax", 2 * 7 / 8 * 4096, 2 * 7 * (1e-5 + 4096 / 8 / 1e9)),
    ("all_gather", 7 * 4096, 7 * (1e-5 + 4096 / 1e9)),
    ("psum_scatter", 7 / 8 * 4096, 7 * (1e-5 + 4096 / 8 / 1e9)),
    ("all_to_all", 7 / 8 * 4096, 7 * (1e-5 + 4096 / 8 / 1e9)),
    ("ppermute", 4096, 1e-5 + 4096 / 1e9),
])
def test_ring_formulas(link, primitive, sent, seconds):
    cost = collective_cost(primitive, ShapedArray((32, 32), F32), ("data",), 8, {})
    assert cost.bytes_sent == pytest.approx(sent) and cost.bytes_received == pytest.approx(sent)
    assert cost.seconds == pytest.approx(seconds)


@pytest.mark.task4_3
def test_no_communication_in_a_group_of_one_or_for_positional_ops():
    assert collective_cost("psum", ShapedArray((4,), F32), ("a",), 1, {}).bytes_sent == 0
    assert collective_cost("axis_index", ShapedArray((), F32), ("a",), 8, {}) is None


@pytest.mark.task4_3
def test_static_costs_equal_what_the_runtime_records(mesh):
    x = jax.device_put(np.ones((64, 32), np.float32), NamedSharding(mesh, P("data")))
    w = np.ones((32, 16), np.float32)
    f = jax.jit(lambda v, w: jax.reshard(v @ w, NamedSharding(mesh, P())).sum(1) + v.sum())
    compiled = f.lower(x, w).compile()
    with jax.record_collectives() as log:
        f(x, w)
    assert [(c.kind, c.bytes_sent) for c in log] == \
        [(c.kind, c.bytes_sent) for c in compiled.collectives()]
    assert compiled.cost_analysis()["bytes sent"] == sum(c.bytes_sent for c in log)
    text = compiled.communication_report()
    assert "all-gather" in text and "sent per device" in text


@pytest.mark.task4_3
def test_the_report_is_a_table(mesh):
    cost = collective_cost("psum", ShapedArray((8,), F32), ("data",), 8, {})
    lines = report([cost, cost]).splitlines()
    assert lines[0].split()[:3] == ["collective", "primitive", "axes"]
    assert lines[2].split()[:4] == ["all-reduce", "psum", "data", "8"]
    assert lines[-1].startswith("2 collectives, 112 B sent per device")


def run_and_log(step, args):
    with jax.record_collectives() as log:
        out = step(*args)
    return out, log


@pytest.mark.task4_3
def test_data_parallel_training_is_one_all_reduce_of_the_gradients(mesh):
    sizes = examples.SMALL
    step, args = examples.data_parallel(mesh, sizes)
    grads, log = run_and_log(step, args)
    assert {c.kind for c in log} == {"all-reduce"}
    assert len(log) == len(grads)  # one per gradient
    assert sum(c.bytes_sent for c in log) == examples.data_parallel_optimum(mesh, sizes)
    expected = jax.grad(examples.mlp_loss)(examples.init_params(sizes), examples.init_batch(sizes))
    for name in expected:
        np.testing.assert_allclose(np.asarray(grads[name]), np.asarray(expected[name]),
                                   rtol=1e-4, atol=1e-6)
        assert str(jax.typeof(grads[name])) == str(jax.typeof(expected[name]))  # replicated


def test_fsdp_all_gathers_parameters_and_reduce_scatters_gradients(mesh):
    sizes = examples.SMALL
    step, args = examples.fsdp(mesh, sizes)
    grads, log = run_and_log(step, args)
    gathered = sum(c.bytes_sent for c in log if c.kind == "all-gather")
    scattered = sum(c.bytes_sent for c in log if c.kind == "reduce-scatter")
    assert {c.kind for c in log} == {"all-gather", "reduce-scatter"}
    assert (gathered, scattered) == examples.fsdp_optimum(mesh, sizes)
    expected = jax.grad(examples.mlp_loss)(examples.init_params(sizes), examples.init_batch(sizes))
    for name in expected:  # the gradient has its parameter's sharding
        assert grads[name].sharding == args[0][name].sharding
        np.testing.assert_allclose(np.asarray(grads[name]), np.asarray(expected[name]),
                                   rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("blocks", [1, 3])
def test_tensor_parallel_forward_is_one_all_reduce_per_block(mesh, blocks):
    sizes = examples.MlpSizes(batch=16, inputs=32, hidden=64, outputs=32, blocks=blocks)
    forward, (params, x) = examples.tensor_parallel(mesh, sizes)
    out, log = run_and_log(forward, (params, x))
    assert [c.kind for c in log] == ["all-reduce"] * blocks
    assert sum(c.bytes_sent for c in log) == examples.tensor_parallel_optimum(mesh, sizes)
    whole = [{k: np.asarray(v) for k, v in block.items()} for block in params]
    with jax.set_mesh(mesh):  # out_sharding=P() names the mesh's axes, as in JAX
        expected = examples.tensor_parallel_forward(whole, np.asarray(x))
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-4, atol=1e-5)


def test_a_2d_mesh_data_and_tensor_parallel_step(mesh):
    """Data parallel over one axis, tensor parallel over the other: the activations'
    all-reduce runs over 'model' (groups of 2), the gradients' over 'data' (groups of 4)."""
    mesh2 = jax.make_mesh((4, 2), ("data", "model"))
    sizes = examples.MlpSizes(batch=16, inputs=8, hidden=16, outputs=8)
    forward, (params, x) = examples.tensor_parallel(mesh2, sizes)
    x = jax.device_put(np.asarray(x), NamedSharding(mesh2, P("data")))

    def loss(params, x):
        return (examples.tensor_parallel_forward(params, x) ** 2).mean()

    grads, log = run_and_log(jax.jit(jax.grad(loss)), (params, x))
    assert {(c.kind, c.axes, c.group_size) for c in log} >= {
        ("all-reduce", ("model",), 2), ("all-reduce", ("data",), 4)}
    whole = [{k: np.asarray(v) for k, v in block.items()} for block in params]
    with jax.set_mesh(mesh2):
        expected = jax.grad(loss)(whole, np.asarray(x))
    for got, want in zip(jax.tree_leaves(grads), jax.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-6)


def test_a_one_sided_contraction_moves_the_cheaper_operand(mesh):
    """x split along the contracted batch dim, the other side whole: gathering x would send
    7 of its blocks per device; slicing the other side (free) and all-reducing the small
    result sends 2 (N-1)/N of a result block. The partitioner picks the cheaper."""
    x = jax.device_put(np.ones((64, 16), np.float32), NamedSharding(mesh, P("data")))
    w = np.ones(16, np.float32)
    step = jax.jit(jax.grad(lambda w, x: (x @ w).sum())).lower(w, x).compile()
    assert [c.kind for c in step.collectives()] == ["all-reduce"]
    assert step.cost_analysis()["bytes sent"] == 2 * 7 / 8 * 16 * 4
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(lambda w, x: (x @ w).sum()))(w, x)),
                               np.full(16, 64.0))
    tall = np.ones((8, 4096), np.float32)  # the other way round: gathering is cheaper
    y = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("data")))
    compiled = jax.jit(lambda a, b: a.T @ b).lower(tall, y).compile()
    assert [c.kind for c in compiled.collectives()] == ["all-gather"]


def test_unchecked_replicated_outputs_show_the_first_devices_copy(mesh):
    f = jax.shard_map(lambda v: v * 0 + jax.lax.axis_index("data"), mesh=mesh,
                      in_specs=P(), out_specs=P(), check_vma=False)
    assert float(f(np.float32(1.0))) == 0.0
