"""Placing data and steering layouts the pre-explicit way, on a mesh of Auto axes: a
pytree of parameters put on devices with a matching pytree of NamedShardings (and a batch
with one sharding for every leaf), jax.jit given in_shardings and out_shardings (a
pytree prefix of the outputs), with_sharding_constraint on an intermediate, a replicated
output, numpy inputs placed by in_shardings, a put on one device, and what a sharding tells
about itself: its spec, whether it is replicated, its shard shape and its devices."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P


def main():
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def named(*spec):
        return NamedSharding(mesh, P(*spec))

    rng = np.random.default_rng(4)
    params = {"dense": {"kernel": rng.standard_normal((6, 8)).astype(np.float32) / 3,
                        "bias": np.zeros(8, np.float32)},
              "head": rng.standard_normal((8, 2)).astype(np.float32) / 3}
    layouts = {"dense": {"kernel": named(None, "model"), "bias": named("model")},
               "head": named("model", None)}
    params = jax.device_put(params, layouts)
    batch = {"x": rng.standard_normal((16, 6)).astype(np.float32),
             "y": rng.standard_normal((16, 2)).astype(np.float32)}
    batch = jax.device_put(batch, named("data"))  # one sharding for every leaf

    def forward(params, x):
        h = jnp.tanh(x @ params["dense"]["kernel"] + params["dense"]["bias"])
        h = jax.lax.with_sharding_constraint(h, named("data", "model"))
        return h @ params["head"], h

    def loss(params, batch):
        out, _ = forward(params, batch["x"])
        return jnp.mean((out - batch["y"]) ** 2)

    step = jax.jit(
        lambda params, batch: jax.value_and_grad(loss)(params, batch),
        in_shardings=(layouts, named("data")),
        out_shardings=(named(), layouts))
    value, grads = step(params, batch)

    acts = jax.jit(forward, in_shardings=(layouts, named("data")),
                   out_shardings=(named("data"), named("data", "model")))
    out, h = acts(params, batch["x"])
    from_numpy = acts(jax.tree.map(np.asarray, params), np.asarray(batch["x"]))[0]

    summed = jax.jit(lambda h: h.sum(0), out_shardings=named())(h)
    alone = jax.device_put(jnp.arange(6.0), jax.devices()[3])

    def describe(a):
        s = a.sharding
        return {"spec": str(s.spec), "replicated": s.is_fully_replicated,
                "shard": list(s.shard_shape(a.shape)), "devices": len(s.device_set),
                "shards": len(a.addressable_shards)}

    described = {"value": describe(value), "out": describe(out), "h": describe(h),
                 "from_numpy": describe(from_numpy), "summed": describe(summed),
                 "grads": jax.tree.map(describe, grads, is_leaf=lambda a: hasattr(a, "sharding")),
                 "params": jax.tree.map(describe, params,
                                        is_leaf=lambda a: hasattr(a, "sharding"))}
    single = {"is_single": isinstance(alone.sharding, SingleDeviceSharding),
              "count": len(alone.devices()),
              "on_mesh": sorted(d.id for d in h.sharding.device_set)}
    return value, grads, out, h, from_numpy, summed, described, single
