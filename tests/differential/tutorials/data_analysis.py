"""A small data-analysis notebook in jax.numpy: a polynomial trend by polyfit / polyval
(with weights), detrended signals cross-correlated with correlate and smoothed by
convolve in full / same / valid modes, summary statistics (percentile and quantile with
several methods, nanmean over missing values, cov and corrcoef, a weighted histogram
with density and histogram2d), PCA by the SVD with signs fixed, norms of several orders,
a phase unwrapped with unwrap, areas by trapezoid over a meshgrid, and the gradient of a
robust fit's loss through polyval."""
import jax
import jax.numpy as jnp


def fix_signs(vectors):
    """Flip each column so that its largest entry is positive (the SVD's sign is free)."""
    idx = jnp.argmax(jnp.abs(vectors), axis=0)
    signs = jnp.sign(vectors[idx, jnp.arange(vectors.shape[1])])
    return vectors * signs


def main():
    k1, k2, k3 = jax.random.split(jax.random.key(9), 3)
    t = jnp.linspace(0.0, 4.0, 41)
    signal = 0.5 * t ** 2 - t + jnp.sin(3 * t) + 0.1 * jax.random.normal(k1, t.shape)
    coef = jnp.polyfit(t, signal, 2)
    weighted = jnp.polyfit(t, signal, 3, w=1.0 / (1.0 + t))
    trend = jnp.polyval(coef, t)
    residual = signal - trend

    kernel = jnp.array([0.25, 0.5, 0.25])
    smooth = {mode: jnp.convolve(residual, kernel, mode=mode)
              for mode in ("full", "same", "valid")}
    xcorr = jnp.correlate(residual, jnp.sin(3 * t[:9]), mode="valid")
    lag = jnp.argmax(jnp.correlate(residual, residual[5:25], mode="full"))

    data = jax.random.normal(k2, (50, 3)) @ jnp.array([[1.0, 0.5, 0.0],
                                                         [0.0, 1.0, 0.3],
                                                         [0.0, 0.0, 0.2]])
    stats = {
        "pct": jnp.percentile(data, jnp.array([5.0, 50.0, 95.0]), axis=0),
        "q_lin": jnp.quantile(data[:, 0], 0.3),
        "q_near": jnp.quantile(data[:, 0], 0.3, method="nearest"),
        "q_mid": jnp.quantile(data[:, 0], jnp.array([0.1, 0.9]), method="midpoint"),
        "median": jnp.median(data, axis=0),
        "nanmean": jnp.nanmean(jnp.where(data > 1.5, jnp.nan, data), axis=0),
        "cov": jnp.cov(data, rowvar=False),
        "corr": jnp.corrcoef(data.T),
        "wcov": jnp.cov(data.T, aweights=jnp.linspace(1.0, 2.0, 50)),
    }
    counts, edges = jnp.histogram(data[:, 0], bins=6, range=(-3.0, 3.0),
                                  weights=jnp.abs(data[:, 1]), density=True)
    h2, xe, ye = jnp.histogram2d(data[:, 0], data[:, 1], bins=(4, 3))

    centered = data - data.mean(0)
    u, s, vt = jnp.linalg.svd(centered, full_matrices=False)
    components = fix_signs(vt.T)
    explained = s ** 2 / jnp.sum(s ** 2)
    projected = centered @ components[:, :2]

    m = data[:4, :3]
    norms = {str(o): jnp.linalg.norm(m, ord=o) for o in (None, "fro", "nuc", 1, -1, 2, jnp.inf)}
    vec_norms = jnp.stack([jnp.linalg.norm(data[0], ord=o) for o in (1, 2, 3, jnp.inf, 0)])

    phase = jnp.cumsum(jnp.full(20, 0.9))
    wrapped = jnp.angle(jnp.exp(1j * phase))
    unwrapped = jnp.unwrap(wrapped)

    x, y = jnp.meshgrid(jnp.linspace(0, 1, 11), jnp.linspace(0, 2, 21), indexing="xy")
    surface = jnp.exp(-x) * jnp.cos(y)
    area = jnp.trapezoid(jnp.trapezoid(surface, dx=0.1, axis=1), dx=0.1)
    area_x = jnp.trapezoid(t ** 2, t)

    def robust_loss(c):
        r = jnp.polyval(c, t) - signal
        return jnp.mean(jnp.sqrt(1.0 + r ** 2) - 1.0)

    grad = jax.jit(jax.grad(robust_loss))(coef + 0.1 * jax.random.normal(k3, coef.shape))
    return (coef, weighted, smooth, xcorr, lag, stats, counts, edges, h2, xe, ye, explained,
            components, jnp.abs(projected[:5]), norms, vec_norms, unwrapped, area, area_x,
            jnp.gradient(trend, t)[:5], grad)
