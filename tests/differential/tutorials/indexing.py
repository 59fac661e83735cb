"""Indexing a data pipeline uses: .at[] updates with every mode, take and take_along_axis,
unique / nonzero / argwhere with size, searchsorted, interp, digitize, weighted bincount,
lexsort, histogram, and the gradients of the scatters."""
import jax
import jax.numpy as jnp


def main():
    x = jnp.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    idx = jnp.array([0, 2, 2, 7, 9])
    updates = {
        "add": x.at[idx].add(1.0, mode="drop"),
        "min": x.at[idx].min(0.5, mode="drop"),
        "max": x.at[idx].max(7.0, mode="clip"),
        "mul": x.at[1::2].multiply(2.0),
        "set": x.at[-1].set(-1.0),
        "get": x.at[idx].get(mode="fill", fill_value=-5.0),
    }
    grads = jax.grad(lambda x: jnp.sum(x.at[idx].add(x[:5] ** 2, mode="drop") ** 2))(x)
    u = jnp.unique(x, size=7, fill_value=0.0)
    vals, counts = jnp.unique(x, return_counts=True, size=7)
    found = {
        "nonzero": jnp.nonzero(x > 3, size=5, fill_value=-1)[0],
        "argwhere": jnp.argwhere(x.reshape(2, 4) > 2, size=6),
        "search": jnp.searchsorted(jnp.sort(x), jnp.array([0.0, 4.0, 10.0]), side="right"),
        "interp": jnp.interp(jnp.array([0.5, 2.5, 7.5]), jnp.arange(8.0), x),
        "digitize": jnp.digitize(x, jnp.array([2.0, 4.0, 6.0])),
        "bincount": jnp.bincount(jnp.array([0, 1, 1, 3]), weights=x[:4], length=5),
        "lexsort": jnp.lexsort((x, jnp.floor(x / 3))),
        "hist": jnp.histogram(x, bins=4, range=(0.0, 10.0))[0],
        "take": jnp.take(x, jnp.array([1, 20]), mode="clip"),
        "along": jnp.take_along_axis(x.reshape(2, 4), jnp.array([[3], [0]]), axis=1),
    }
    return updates, grads, u, vals, counts, found
