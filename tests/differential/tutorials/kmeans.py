"""K-means with segment_sum, argmin over pairwise distances, a while_loop until the
assignments stop changing, and the inertia's gradient with respect to the centroids."""
import jax
import jax.numpy as jnp
from jax import lax

K = 3


def assign(points, centroids):
    d = jnp.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=-1)
    return jnp.argmin(d, axis=1), jnp.min(d, axis=1)


def update(points, labels):
    sums = jax.ops.segment_sum(points, labels, num_segments=K)
    counts = jax.ops.segment_sum(jnp.ones(points.shape[0]), labels, num_segments=K)
    return sums / jnp.maximum(counts, 1)[:, None]


@jax.jit
def kmeans(points, centroids):
    def cond(state):
        _, labels, old, i = state
        return jnp.logical_and(jnp.any(labels != old), i < 50)

    def body(state):
        centroids, labels, _, i = state
        centroids = update(points, labels)
        return centroids, assign(points, centroids)[0], labels, i + 1

    labels = assign(points, centroids)[0]
    state = (centroids, labels, jnp.full_like(labels, -1), 0)
    centroids, labels, _, iters = lax.while_loop(cond, body, state)
    return centroids, labels, iters


def main():
    k1, k2 = jax.random.split(jax.random.key(5))
    centers = jnp.array([[0.0, 0.0], [3.0, 3.0], [0.0, 4.0]])
    points = (centers[jax.random.randint(k1, (60,), 0, K)]
              + 0.4 * jax.random.normal(k2, (60, 2)))
    centroids, labels, iters = kmeans(points, points[:K])
    inertia_grad = jax.grad(lambda c: jnp.sum(assign(points, c)[1]))(centroids)
    order = jnp.argsort(centroids[:, 0] * 10 + centroids[:, 1])
    return centroids[order], jnp.bincount(labels, length=K), iters, inertia_grad
