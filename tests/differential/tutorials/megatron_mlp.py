"""A Megatron-style tensor-parallel transformer MLP block in explicit sharding mode: the
first matrix split by columns over "model", the second by rows, the hidden activations
sharded (data, model), the row-parallel product given its out_sharding by einsum, the
input resharded between layouts with jax.sharding.reshard, a residual and an RMS norm, and
an SGD training step under jit whose gradients keep the parameters' layouts."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def init(key, d, hidden):
    k1, k2 = jax.random.split(key)
    return {
        "w_in": jax.random.normal(k1, (d, hidden)) / jnp.sqrt(d),
        "w_out": jax.random.normal(k2, (hidden, d)) / jnp.sqrt(hidden),
        "scale": jnp.ones((d,)),
    }


def rms_norm(x, scale):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * scale


def block(params, x):
    h = jnp.einsum("bd,dh->bh", rms_norm(x, params["scale"]), params["w_in"])
    h = jax.nn.gelu(h)  # stays (data, model): no communication in the column-parallel half
    y = jnp.einsum("bh,hd->bd", h, params["w_out"], out_sharding=P("data", None))
    return x + y, h


def loss_fn(params, x, target):
    y, h = block(params, x)
    return jnp.mean((y - target) ** 2), h


@jax.jit
def train_step(params, x, target):
    (loss, h), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, target)
    new = jax.tree.map(lambda p, g: p - 0.2 * g, params, grads)
    return new, loss, grads, h


def main():
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    kp, kx, kt = jax.random.split(jax.random.key(3), 3)
    params = init(kp, 8, 16)
    layouts = {"w_in": P(None, "model"), "w_out": P("model", None), "scale": P()}
    with jax.sharding.set_mesh(mesh):
        params = jax.tree.map(lambda a, s: jax.device_put(a, NamedSharding(mesh, s)),
                              params, layouts)
        x = jax.device_put(jax.random.normal(kx, (16, 8)), P(("data", "model"), None))
        x_type = str(jax.typeof(x))
        x = jax.sharding.reshard(x, P("data", None))
        target = jax.device_put(jnp.sin(jax.random.normal(kt, (16, 8))), P("data", None))
        losses = []
        for _ in range(4):
            params, loss, grads, h = train_step(params, x, target)
            losses.append(loss)
        types = {k: str(jax.typeof(v)) for k, v in params.items()}
        grad_types = {k: str(jax.typeof(v)) for k, v in grads.items()}
        y, _ = jax.jit(block)(params, x)
        gathered = jax.sharding.reshard(y, P())
        return (losses, params, x_type, str(jax.typeof(x)), types, grad_types,
                str(jax.typeof(h)), str(jax.typeof(y)), str(jax.typeof(gathered)), y)
