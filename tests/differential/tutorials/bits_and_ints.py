"""Integer arithmetic a data pipeline leans on: a murmur-style uint32 hash with wrapping
multiplies and logical shifts, an xorshift generator in lax.scan, population counts and
leading zeros, packbits / unpackbits of a boolean mask, uint8 image normalisation and
re-quantisation with round and clip, floor division and remainder of negative ints, and
the dtypes and weak types each of these produces."""
import jax
import jax.numpy as jnp
from jax import lax


def fmix32(h):
    h = h ^ lax.shift_right_logical(h, jnp.uint32(16))
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def murmur_like(keys, seed):
    h = jnp.uint32(seed) ^ keys.astype(jnp.uint32)
    h = lax.shift_left(h, jnp.uint32(5)) | lax.shift_right_logical(h, jnp.uint32(27))
    return fmix32(h * jnp.uint32(5) + jnp.uint32(0xE6546B64))


def xorshift32(state, _):
    x = state
    x = jnp.bitwise_xor(x, jnp.left_shift(x, 13))
    x = jnp.bitwise_xor(x, jnp.right_shift(x, 17))
    x = jnp.bitwise_xor(x, jnp.left_shift(x, 5))
    return x, x


def main():
    keys = jnp.arange(10, dtype=jnp.int32) * 7919 - 20
    hashed = jax.jit(murmur_like, static_argnums=1)(keys, 42)
    buckets = (hashed % jnp.uint32(8)).astype(jnp.int32)
    _, stream = lax.scan(xorshift32, jnp.uint32(2463534242), None, length=6)
    uniform = (stream >> 8).astype(jnp.float32) / float(1 << 24)

    bits = {
        "popcount": lax.population_count(hashed),
        "clz": lax.clz(hashed),
        "bitwise_count": jnp.bitwise_count(jnp.array([0, 1, 255, -1], dtype=jnp.int16)),
        "invert": jnp.invert(jnp.array([0, 5], dtype=jnp.uint8)),
        "arith_shift": lax.shift_right_arithmetic(jnp.array([-16, 16], jnp.int32), 2),
        "logical_shift": lax.shift_right_logical(jnp.array([-16, 16], jnp.int32), 2),
        "and_or": (jnp.uint8(0b1100) & jnp.arange(6, dtype=jnp.uint8)) | jnp.uint8(1),
    }

    mask = jnp.array([[1, 0, 1, 1, 0, 0, 1, 0, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1, 0, 1]], bool)
    packed = jnp.packbits(mask, axis=1)
    unpacked = jnp.unpackbits(packed, axis=1, count=10)
    packed_little = jnp.packbits(mask, axis=1, bitorder="little")

    image = (jnp.arange(24, dtype=jnp.int32).reshape(2, 3, 4) * 37 % 256).astype(jnp.uint8)
    as_float = image.astype(jnp.float32) / 255.0
    normalised = (as_float - as_float.mean(axis=(0, 1))) / (as_float.std(axis=(0, 1)) + 1e-5)
    brightened = jnp.clip(jnp.round(as_float * 1.3 * 255.0), 0, 255).astype(jnp.uint8)
    wrapped = image + jnp.uint8(200)
    saturated = jnp.clip(image.astype(jnp.int32) + 200, 0, 255).astype(jnp.uint8)

    a = jnp.array([-7, -6, -1, 0, 5, 7], dtype=jnp.int32)
    arith = {
        "floordiv": a // 3,
        "mod": a % 3,
        "mod_neg": a % -3,
        "fmod": jnp.fmod(a, 3),
        "divmod": jnp.divmod(a, jnp.int32(-4)),
        "trunc_div": lax.div(a, jnp.int32(3)),
        "rem": lax.rem(a, jnp.int32(3)),
        "int8_wrap": jnp.array([120, -120], jnp.int8) + jnp.int8(10),
        "int_clip": jnp.clip(a, -5, 5),
        "abs_min": jnp.abs(jnp.array([-128, 3], jnp.int8)),
        "weak_add": jnp.arange(3, dtype=jnp.uint8) + 3,
        "weak_float": jnp.arange(3, dtype=jnp.int16) * 0.5,
        "gcd_lcm": (jnp.gcd(a, 4), jnp.lcm(jnp.array([4, 6]), 10)),
        "iinfo_max": jnp.array(jnp.iinfo(jnp.int16).max, jnp.int16) + jnp.int16(1),
    }
    return {"hashed": hashed, "buckets": buckets, "stream": stream, "uniform": uniform,
            "bits": bits, "packed": packed, "unpacked": unpacked, "little": packed_little,
            "normalised": normalised, "brightened": brightened, "wrapped": wrapped,
            "saturated": saturated, "arith": arith}
