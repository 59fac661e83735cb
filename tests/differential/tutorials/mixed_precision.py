"""Mixed precision and quantisation: a bfloat16 forward pass with float32 master weights,
float16 loss scaling with a finite check, int8 weights with an int32 accumulating
dot_general, and the dtypes and weak types each step produces."""
import jax
import jax.numpy as jnp
from jax import lax


def forward(w, x):
    h = jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16))
    return jax.nn.relu(h).astype(jnp.float32).sum()


def scaled_grad(w, x, scale):
    g = jax.grad(lambda w: forward(w.astype(jnp.float16), x) * scale)(w) / scale
    finite = jnp.all(jnp.isfinite(g))
    return jnp.where(finite, g, 0.0), finite


def quantize(w):
    s = jnp.max(jnp.abs(w)) / 127
    return jnp.clip(jnp.round(w / s), -127, 127).astype(jnp.int8), s


def main():
    k1, k2 = jax.random.split(jax.random.key(29))
    w = jax.random.normal(k1, (8, 4))
    x = jax.random.normal(k2, (5, 8))
    value = jax.jit(forward)(w, x)
    g, finite = scaled_grad(w, x, 1024.0)
    q, s = quantize(w)
    xq, xs = quantize(x)
    acc = lax.dot_general(xq, q, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    deq = acc.astype(jnp.float32) * s * xs
    return value, g, finite, q, acc, deq, (x @ w), jnp.bfloat16(1.5) * 2, jnp.float16(2) + 1.0
