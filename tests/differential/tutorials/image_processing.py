"""Classical image processing on a synthetic image: jax.image.resize with several methods,
Sobel edges by jax.scipy.signal.convolve2d, jnp.pad in reflect / edge / wrap modes, a
Gaussian blur as two separable 1-D convolutions, max and average pooling with
lax.reduce_window, map_coordinates sampling, and the gradient of an edge-energy loss back
to the input pixels under jit."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.ndimage import map_coordinates
from jax.scipy.signal import convolve2d

SOBEL_X = jnp.array([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]])


def make_image(n=12):
    yy, xx = jnp.meshgrid(jnp.linspace(-1, 1, n), jnp.linspace(-1, 1, n), indexing="ij")
    disc = (xx ** 2 + yy ** 2 < 0.4).astype(jnp.float32)
    return disc + 0.3 * jnp.sin(4 * xx) * jnp.cos(3 * yy)


def sobel(img):
    padded = jnp.pad(img, 1, mode="reflect")
    gx = convolve2d(padded, SOBEL_X, mode="valid")
    gy = convolve2d(padded, SOBEL_X.T, mode="valid")
    return jnp.sqrt(gx ** 2 + gy ** 2 + 1e-6), jnp.arctan2(gy, gx)


def gaussian_blur(img, sigma=1.0, radius=2):
    x = jnp.arange(-radius, radius + 1, dtype=jnp.float32)
    k = jnp.exp(-0.5 * (x / sigma) ** 2)
    k = k / k.sum()
    padded = jnp.pad(img, radius, mode="edge")
    rows = jax.vmap(lambda r: jnp.convolve(r, k, mode="valid"))(padded)
    return jax.vmap(lambda c: jnp.convolve(c, k, mode="valid"), in_axes=1, out_axes=1)(rows)


def pool(img, kind):
    x = img[None, :, :, None]
    if kind == "max":
        y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    else:
        y = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") / 9.0
    return y[0, :, :, 0]


@jax.jit
def edge_energy(img):
    mag, _ = sobel(gaussian_blur(img))
    return jnp.mean(mag ** 2) + 0.1 * jnp.mean(pool(img, "max"))


def main():
    img = make_image()
    mag, angle = sobel(img)
    resized = {m: jax.image.resize(img, (7, 9), method=m)
               for m in ("nearest", "linear", "cubic", "lanczos3")}
    up = jax.image.resize(img[:4, :4], (8, 8), method="bilinear")
    pads = {m: jnp.pad(jnp.arange(4.0), 2, mode=m)
            for m in ("reflect", "symmetric", "edge", "wrap", "linear_ramp")}
    pads["constant"] = jnp.pad(jnp.ones((2, 2), jnp.int32), ((1, 0), (0, 2)), constant_values=7)
    coords = jnp.array([[2.5, 5.25, 10.0], [3.0, 0.5, 11.75]])
    sampled = map_coordinates(img, coords, order=1, mode="nearest")
    e, g = jax.value_and_grad(edge_energy)(img)
    thumb = jax.image.resize(g, (4, 4), method="linear", antialias=True)
    return {"mag_sum": mag.sum(), "mag_corner": mag[:4, :4], "angle_row": angle[6],
            "blur": gaussian_blur(img)[5], "maxpool": pool(img, "max"),
            "avgpool": pool(img, "avg"), "resized": resized, "up": up, "pads": pads,
            "sampled": sampled, "energy": e, "grad_thumb": thumb,
            "full": convolve2d(img[:3, :3], jnp.ones((2, 2)), mode="full")}
