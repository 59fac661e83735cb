"""A MobileNet-style block on NCHW images written with lax directly: a depthwise 3x3
convolution (feature_group_count equal to the channels) with SAME padding, a pointwise
1x1 convolution, a dilated (atrous) convolution with explicit padding, a strided
convolution with SAME_LOWER padding, an upsampling by conv_transpose and by lhs_dilation,
pooling by reduce_window (max with strides and padding, a dilated average by add), an
NHWC/HWIO layout given by dimension_numbers strings, the gradients of the block's loss in
its kernels and input, and those of the depthwise-separable part under jit."""
import jax
import jax.numpy as jnp
from jax import lax

NCHW = ("NCHW", "OIHW", "NCHW")


def depthwise_separable(x, depth_k, point_k):
    c = x.shape[1]
    y = lax.conv_general_dilated(x, depth_k, (1, 1), "SAME", dimension_numbers=NCHW,
                                 feature_group_count=c)
    y = jax.nn.relu6(y)
    return lax.conv_general_dilated(y, point_k, (1, 1), "VALID", dimension_numbers=NCHW)


def atrous(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), ((2, 2), (2, 2)), rhs_dilation=(2, 2),
                                    dimension_numbers=NCHW)


def strided(x, k):
    return lax.conv_general_dilated(x, k, (2, 2), "SAME_LOWER", dimension_numbers=NCHW)


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                             ((0, 0), (0, 0), (1, 1), (1, 1)))


def dilated_avg(x):
    total = lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "SAME",
                              window_dilation=(1, 1, 2, 2))
    return total / 4.0


def block(params, x):
    h = depthwise_separable(x, params["depth"], params["point"])
    h = h + atrous(h, params["atrous"])
    h = strided(jax.nn.gelu(h), params["down"])
    return max_pool(h), dilated_avg(h)


def main():
    keys = jax.random.split(jax.random.key(6), 7)
    x = jax.random.normal(keys[0], (2, 3, 8, 8))
    params = {
        "depth": jax.random.normal(keys[1], (3, 1, 3, 3)) / 3,  # one 3x3 filter per channel
        "point": jax.random.normal(keys[2], (4, 3, 1, 1)) / 2,
        "atrous": jax.random.normal(keys[3], (4, 4, 3, 3)) / 6,
        "down": jax.random.normal(keys[4], (4, 4, 3, 3)) / 6,
    }
    pooled, averaged = block(params, x)

    def loss(params, x):
        pooled, averaged = block(params, x)
        return jnp.mean(pooled ** 2) + jnp.mean(jnp.sin(averaged))

    grads, dx = jax.grad(loss, argnums=(0, 1))(params, x)
    separable = jax.jit(jax.value_and_grad(
        lambda k, x: jnp.sum(jnp.tanh(depthwise_separable(x, k, params["point"]))),
        argnums=(0, 1)))
    sep_value, sep_grads = separable(params["depth"], x)

    up_k = jax.random.normal(keys[5], (2, 2, 3, 5)) / 2  # HWIO
    nhwc = jnp.transpose(x, (0, 2, 3, 1))
    up = lax.conv_transpose(nhwc, up_k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO",
                                                                          "NHWC"))
    dilated_in = lax.conv_general_dilated(nhwc, up_k, (1, 1), ((1, 1), (1, 1)),
                                          lhs_dilation=(2, 2),
                                          dimension_numbers=("NHWC", "HWIO", "NHWC"))
    d_up = jax.grad(lambda k: jnp.sum(lax.conv_transpose(
        nhwc, k, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2))(up_k)
    depthwise_only = lax.conv_general_dilated(x, params["depth"], (1, 1), "SAME",
                                              dimension_numbers=NCHW, feature_group_count=3)
    per_channel = jnp.stack([
        lax.conv_general_dilated(x[:, i:i + 1], params["depth"][i:i + 1], (1, 1), "SAME",
                                 dimension_numbers=NCHW)[:, 0] for i in range(3)], axis=1)
    return (pooled, averaged, grads, dx, sep_value, sep_grads, up.shape, up[0, :3, :3],
            dilated_in.shape, dilated_in[1, :3, :3], d_up,
            jnp.max(jnp.abs(depthwise_only - per_channel)))
