"""Programs run under ``mpiexec`` by test_multiprocess.py; also in one process, for the
results they must equal. ``python programs.py NAME OUT`` runs program NAME and (process 0)
writes its results to the ``.npz`` file OUT; every process checks what it can see itself.

The examples are stage 4's own (stage4_sharding/examples.py): data parallelism, FSDP and
tensor parallelism, on a mesh of all the job's devices, and shard_map with every collective.
"""

from __future__ import annotations

import sys

import numpy as np
from stage4_sharding.experimental import multihost_utils
from stage4_sharding.sharding import NamedSharding, P

import stage4_sharding as jax
from stage4_sharding import examples


def whole(x) -> np.ndarray:
    """A global array's value, gathered from every process when this one lacks blocks."""
    if x.is_fully_addressable:
        return np.asarray(x)
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def training(mesh_shape=(8,), names=("data",)) -> dict[str, np.ndarray]:
    mesh = jax.make_mesh(mesh_shape, names)
    sizes = examples.MlpSizes(batch=64, inputs=32, hidden=64, outputs=16, blocks=2)
    out = {}
    for name, make in (("dp", examples.data_parallel), ("fsdp", examples.fsdp),
                       ("tp", examples.tensor_parallel)):
        step, args = make(mesh, sizes)
        result = step(*args)
        out.update({f"{name}.{k}": whole(leaf)
                    for k, leaf in enumerate(jax.tree_util.tree_leaves(result))})
    return out


def collectives() -> dict[str, np.ndarray]:
    """shard_map with every collective, over an axis that crosses processes and one that
    does not."""
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    data = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    x = jax.make_array_from_callback((16, 8), NamedSharding(mesh, P("x", "y")),
                                     lambda index: data[index])

    def body(block):
        lax = jax.lax
        return (lax.psum(block, "x"), lax.pmax(block, "x"), lax.pmin(block, ("x", "y")),
                lax.pmean(block, "y"), lax.all_gather(block, "x", tiled=True),
                lax.psum_scatter(block, "x", scatter_dimension=0, tiled=True) * 1.0,
                lax.all_to_all(block, "x", 0, 0, tiled=True),
                lax.ppermute(block, "x", [(i, (i + 1) % 4) for i in range(4)]),
                block * 0 + lax.axis_index("x"))

    specs = (P("x", "y"),) * 9
    outs = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=specs,
                                 check_vma=False))(x)
    return {f"c{k}": whole(o) for k, o in enumerate(outs)}


def costs() -> dict[str, np.ndarray]:
    """The cost model's bytes per device for one all-reduce over all devices: sent, and
    sent across processes."""
    from stage4_sharding.cost_model import totals
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    x = jax.device_put(np.ones((jax.device_count(), 1024), np.float32),
                       NamedSharding(mesh, P("data")))
    with jax.record_collectives() as log:
        whole(jax.jit(lambda v: v.sum(axis=0))(x))
    total = totals(log)
    return {"sent": np.float64(total["bytes sent"]),
            "across": np.float64(total.get("bytes sent across processes", 0.0))}


def api() -> dict[str, np.ndarray]:
    """What each process sees of the job: devices, its blocks, the errors of a global
    array it does not hold whole; checked in every process (an error ends the job)."""
    count, here = jax.process_count(), jax.process_index()
    assert jax.device_count() == 8 and len(jax.local_devices()) == 8 // count
    assert all(d.process_index == here for d in jax.local_devices())
    assert [d.process_index for d in jax.devices()] == sorted(
        d.process_index for d in jax.devices())
    assert [d.id for d in jax.devices()] == list(range(8))  # on across processes
    mesh = jax.make_mesh((8,), ("data",))
    split = NamedSharding(mesh, P("data"))
    data = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    rows = slice(here * 8 // count, (here + 1) * 8 // count)  # this process's rows
    x = jax.make_array_from_process_local_data(split, data[rows])
    y = jax.device_put(data, split)  # the same global value on every process
    for array in (x, y):
        assert [s.device for s in array.addressable_shards] == jax.local_devices()
        assert array.is_fully_addressable == (count == 1)
        np.testing.assert_array_equal(whole(array), data)
    if count > 1:
        try:
            np.asarray(x)
        except RuntimeError as error:
            assert "spans non-addressable (non process local) devices" in str(error)
        else:
            raise AssertionError("np.asarray of a global array did not raise")
    stacked = multihost_utils.process_allgather(np.float32(here))
    np.testing.assert_array_equal(stacked, np.arange(count, dtype=np.float32))
    assert multihost_utils.process_allgather(np.float32(here), tiled=True).shape == (count,)
    total = x.sum()  # replicated: every process holds a copy of its one distinct block
    assert float(total) == 496.0
    if count > 1:
        try:
            multihost_utils.process_allgather(x)
        except ValueError as error:
            assert "only supports tiled=True" in str(error)
        else:
            raise AssertionError("process_allgather(global array) without tiled=True")
    # A mesh of some devices only: process 1's are left out (with 2 processes); every
    # process runs the program, and those that hold the result read it.
    part = jax.make_mesh((4,), ("data",), devices=jax.devices()[:4])
    y = jax.device_put(data[:4], NamedSharding(part, P("data")))
    part_total = jax.jit(lambda v: v.sum())(y)
    if part_total.is_fully_addressable:
        assert float(part_total) == float(data[:4].sum())
    _multihost_helpers(mesh, data, rows)
    return {"sum": np.float64(whole(x.sum()))}


def _multihost_helpers(mesh, data: np.ndarray, rows: slice) -> None:
    """multihost_utils' helpers: a broadcast, equality across processes, and the passage
    between this process's part of a global array and the global array."""
    count, here = jax.process_count(), jax.process_index()
    mine = {"step": np.int32(10 + here), "w": np.full(3, here, np.float32)}
    sent = multihost_utils.broadcast_one_to_all(mine)
    assert int(sent["step"]) == 10 and not sent["w"].any()
    last = multihost_utils.broadcast_one_to_all(mine, is_source=here == count - 1)
    assert int(last["step"]) == 10 + count - 1
    multihost_utils.assert_equal({"same": np.arange(3)}, "the same everywhere")
    multihost_utils.sync_global_devices("api")
    if count > 1:
        for check in (lambda: multihost_utils.assert_equal(np.int32(here), "differs"),
                      lambda: multihost_utils.sync_global_devices(f"name {here}")):
            try:
                check()
            except AssertionError:
                pass
            else:
                raise AssertionError("a value that differs between processes passed")
    local = {"x": data[rows], "b": np.ones(2, np.float32)}
    specs = {"x": P("data"), "b": P()}
    g = multihost_utils.host_local_array_to_global_array(local, mesh, specs)
    assert g["x"].shape == data.shape and g["b"].shape == (2,)
    np.testing.assert_array_equal(whole(g["x"]), data)
    back = multihost_utils.global_array_to_host_local_array(g, mesh, specs)
    np.testing.assert_array_equal(np.asarray(back["x"]), data[rows])
    assert back["x"].is_fully_addressable and np.asarray(back["b"]).shape == (2,)


def fail_on_one_process() -> dict[str, np.ndarray]:
    """Process 1 raises before a collective that process 0 waits in."""
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    x = jax.device_put(np.ones((jax.device_count(), 4), np.float32),
                       NamedSharding(mesh, P("data")))
    if jax.process_index() == 1:
        raise ValueError("process 1 fails here on purpose")
    return {"total": whole(x.sum())}


def different_programs() -> dict[str, np.ndarray]:
    """Process 1 runs another program than the others."""
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    x = jax.device_put(np.ones((jax.device_count(), 4), np.float32),
                       NamedSharding(mesh, P("data")))
    f = jax.jit(lambda v: v * 2.0 if jax.process_index() == 1 else v.sum(axis=0))
    return {"out": whole(f(x))}


def late_process() -> dict[str, np.ndarray]:
    """Process 1 arrives at a collective long after the timeout of the others."""
    import time
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    x = jax.device_put(np.ones((jax.device_count(), 4), np.float32),
                       NamedSharding(mesh, P("data")))
    if jax.process_index() == 1:
        time.sleep(60)
    return {"total": whole(jax.jit(lambda v: v.sum())(x))}


def main() -> None:
    name, path = sys.argv[1], sys.argv[2]
    if jax.distributed.launched_by_mpiexec():
        jax.distributed.initialize()
    programs = {"training": training, "collectives": collectives, "costs": costs, "api": api,
                "fail_on_one_process": fail_on_one_process,
                "different_programs": different_programs, "late_process": late_process}
    results = programs[name]()
    if jax.process_index() == 0:
        np.savez(path, **results)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
