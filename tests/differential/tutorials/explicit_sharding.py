"""A tensor-parallel MLP layer in explicit sharding mode: the types carry the layouts, an
ambiguous contraction is given its ``out_sharding``, and a function under ``auto_axes``
leaves its intermediates' layouts to the compiler; the gradient under ``jit``."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, auto_axes
from jax.sharding import PartitionSpec as P


def main():
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    rng = np.random.default_rng(1)
    with jax.sharding.set_mesh(mesh):
        x = jax.device_put(rng.standard_normal((16, 8)).astype(np.float32), P("data", None))
        w1 = jax.device_put(rng.standard_normal((8, 6)).astype(np.float32) / 3,
                            NamedSharding(mesh, P(None, "model")))
        w2 = jax.device_put(rng.standard_normal((6, 4)).astype(np.float32) / 3,
                            P("model", None))

        @auto_axes
        def scores(h, w):
            return jnp.tanh(h) @ w

        def loss(w1, w2, x):
            h = x @ w1
            out = jnp.dot(jnp.tanh(h), w2, out_sharding=P("data", None))
            again = scores(h, w2, out_sharding=P("data", None))
            return jnp.mean(out ** 2) + jnp.mean(again * out), h

        (value, h), grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(
            w1, w2, x)
        types = [str(jax.typeof(a)) for a in (x, w1, w2, grads[0], grads[1])]
        return value, grads, types, str(jax.sharding.get_abstract_mesh())
