"""Building global arrays the way a multi-host input pipeline does, here in one process:
make_array_from_callback asked for each device's block by index,
make_array_from_single_device_arrays from blocks put on their devices (found with
addressable_devices_indices_map), make_array_from_process_local_data, the shards seen
through addressable_shards (each a jax.Shard with its device, index, data and replica_id),
host_local_array_to_global_array and back, process_allgather, and a jitted reduction over
the assembled batch."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def describe(index):
    return [[s.start, s.stop] if s.start is not None else [0, -1] for s in index]


def main():
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    data = np.arange(48, dtype=np.float32).reshape(8, 6) / 7
    rows = NamedSharding(mesh, P("data", None))
    blocks = NamedSharding(mesh, P("data", "model"))

    requested = set()

    def load(index):
        requested.add(str(index))
        return data[index]

    by_callback = jax.make_array_from_callback(data.shape, rows, load)

    per_device = [jax.device_put(data[index], device)
                  for device, index in blocks.addressable_devices_indices_map(data.shape).items()]
    assembled = jax.make_array_from_single_device_arrays(data.shape, blocks, per_device)
    from_local = jax.make_array_from_process_local_data(rows, data)

    shards = sorted(by_callback.addressable_shards, key=lambda s: s.device.id)
    shard_info = [{"device": s.device.id, "index": describe(s.index), "replica": s.replica_id,
                   "shape": list(s.data.shape), "sum": s.data.sum(),
                   "is_shard": isinstance(s, jax.Shard)} for s in shards]
    block_sums = sorted(float(s.data.sum()) for s in assembled.addressable_shards)

    global_batch = multihost_utils.host_local_array_to_global_array(data, mesh, P("data"))
    back = multihost_utils.global_array_to_host_local_array(global_batch, mesh, P("data"))
    gathered = multihost_utils.process_allgather(assembled)

    @jax.jit
    def column_stats(x):
        return jnp.mean(x, axis=0), jnp.max(x, axis=0)

    means, maxes = column_stats(assembled)
    return (by_callback, assembled, from_local, sorted(requested), shard_info, block_sums,
            str(global_batch.sharding.spec), np.asarray(back), np.asarray(gathered),
            means, maxes, str(jax.typeof(assembled)), str(jax.typeof(by_callback)),
            jax.process_index(), jax.process_count(), by_callback.is_fully_addressable,
            [len(jax.local_devices()), jax.device_count()])
