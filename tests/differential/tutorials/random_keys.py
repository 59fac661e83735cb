"""New-style typed PRNG keys as a data loader and an initialiser use them: jax.random.key,
key_data and wrap_key_data round trips, split under vmap, fold_in inside lax.scan, raw
bits, randint with array bounds, permutation and shuffle along an axis, choice along an
axis, orthogonal matrices, points in a ball, Rademacher signs, Hutchinson's trace
estimator, and keys carried through jit."""
import jax
import jax.numpy as jnp
from jax import lax


def hutchinson_trace(key, matvec, dim, samples):
    vs = jax.random.rademacher(key, (samples, dim), dtype=jnp.float32)
    return jnp.mean(jax.vmap(lambda v: v @ matvec(v))(vs))


def epoch_batches(key, data, batch):
    perm = jax.random.permutation(key, data.shape[0])
    return data[perm].reshape(-1, batch, data.shape[1])


@jax.jit
def keyed_scan(key, xs):
    def body(carry, x):
        k = jax.random.fold_in(key, carry)
        noise = jax.random.normal(k, x.shape)
        return carry + 1, x + 0.1 * noise
    return lax.scan(body, 0, xs)


def main():
    key = jax.random.key(2025)
    raw = jax.random.key_data(key)
    rebuilt = jax.random.wrap_key_data(raw)
    same = jnp.array_equal(jax.random.key_data(rebuilt), raw)
    legacy = jax.random.PRNGKey(2025)

    keys = jax.random.split(key, 4)
    grandkeys = jax.vmap(lambda k: jax.random.split(k, 3))(keys)
    per_key = jax.vmap(lambda k: jax.random.uniform(k, (2,)))(grandkeys.reshape(-1))

    k = jax.random.split(jax.random.key(5), 10)
    data = jnp.arange(24.0).reshape(8, 3)
    draws = {
        "bits32": jax.random.bits(k[0], (3,)),
        "bits8": jax.random.bits(k[0], (4,), dtype=jnp.uint8),
        "randint": jax.random.randint(k[1], (2, 3), jnp.array([0, 10, -5]),
                                      jnp.array([3, 20, 5])),
        "randint_u8": jax.random.randint(k[1], (5,), 0, 256, dtype=jnp.uint8),
        "perm_axis1": jax.random.permutation(k[2], data, axis=1, independent=True),
        "perm_rows": jax.random.permutation(k[2], data),
        "choice_axis": jax.random.choice(k[3], data, (2,), replace=False, axis=1),
        "orthogonal": jax.random.orthogonal(k[4], 3),
        "ball": jax.random.ball(k[5], 2, p=2, shape=(4,)),
        "rademacher": jax.random.rademacher(k[6], (6,)),
        "laplace": jax.random.laplace(k[7], (3,)),
        "logistic": jax.random.logistic(k[7], (3,)),
        "exponential": jax.random.exponential(k[8], (3,)),
        "t": jax.random.t(k[8], 4.0, (3,)),
        "cauchy": jax.random.cauchy(k[9], (2,)),
        "bernoulli": jax.random.bernoulli(k[9], jnp.array([0.1, 0.5, 0.9])),
    }
    q = draws["orthogonal"]
    a = jnp.diag(jnp.arange(1.0, 6.0)) + 0.1
    trace_est = hutchinson_trace(jax.random.key(3), lambda v: a @ v, 5, 64)
    batches = epoch_batches(jax.random.key(8), data, 4)
    count, noisy = keyed_scan(jax.random.key(1), jnp.zeros((4, 2)))
    jit_split = jax.jit(lambda k: jax.random.key_data(jax.random.split(k)))(key)
    return {"raw": raw, "same": same, "legacy": legacy, "per_key": per_key,
            "draws": draws, "qtq": q.T @ q, "trace": (trace_est, jnp.trace(a)),
            "batches": batches, "scan": (count, noisy), "jit_split": jit_split,
            "keys_shape": jnp.array(grandkeys.shape),
            "key_dtype": str(jax.random.key_impl(key))}
