"""``jax.random``: explicit keys and the Threefry-2x32 counter-based generator.

There is no hidden state. A key is two uint32 words; ``split`` and ``fold_in`` derive new keys
by hashing counters under the old one, and every sampler hashes the counters
``0, 1, 2, ...`` (one per output element) under its key. All of it is built from primitives
(``threefry2x32``, shifts, ``bitcast_convert_type``), so later stages can jit, vmap and shard
it. ``split``, ``fold_in``, ``bits`` and ``uniform`` (with its default bounds) are bit-for-bit
JAX's, with ``jax_threefry_partitionable`` on (JAX's default: each element hashes its own
count) and off (JAX's original scheme, which hashes the first half of the counts with the
second); ``normal`` agrees to about 1e-6.

Example:
    >>> import stage1_autodiff as jax
    >>> key = jax.random.key(0)
    >>> k1, k2 = jax.random.split(key)
    >>> jax.random.uniform(k1, (3,)).shape
    (3,)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from . import dtypes
from . import numpy as jnp
from . import prims as lax
from .config import config
from .core import Array, Tracer, get_aval
from .lax_composed import bitcast_convert_type
from .numpy.promotion import as_value, canonicalize_axis, convert
from .tree_util import register_pytree_node

Shape = Sequence[int]


# --8<-- [start:key_array]
class KeyDtype:
    """The dtype of typed key arrays: each element is one key of two uint32 words."""

    name = "key<fry>"

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyDtype)

    def __hash__(self) -> int:
        return hash(self.name)


class PRNGKeyArray:
    """An array of typed keys, as made by ``random.key``: shape ``s`` over uint32 data of
    shape ``s + (2,)``. NB: in JAX a key is one element of an extended dtype
    (jax/_src/prng.py: ``PRNGKeyArray``); here it is a pytree over its uint32 data, so
    every transformation sees an ordinary uint32 array.
    """

    dtype = KeyDtype()

    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return get_aval(self._data).shape[:-1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a single key (shape ()).")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, idx: Any) -> PRNGKeyArray:
        idx = idx if isinstance(idx, tuple) else (idx,)
        if Ellipsis in idx:
            raise IndexError("Ellipsis indexing of key arrays is not supported.")
        return PRNGKeyArray(self._data[idx + (slice(None),)])

    def reshape(self, *shape: int) -> PRNGKeyArray:
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return PRNGKeyArray(jnp.reshape(self._data, tuple(shape) + (2,)))

    # The array methods that move keys about act on the key dims; each key's two words stay
    # together in the last dim of the data.
    def transpose(self, *axes: Any) -> PRNGKeyArray:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        perm = tuple(axes) if axes else tuple(reversed(range(self.ndim)))
        return PRNGKeyArray(jnp.transpose(self._data, (*perm, self.ndim)))

    T = property(lambda self: self.transpose())

    def ravel(self) -> PRNGKeyArray:
        return self.reshape(self.size)

    flatten = ravel

    def squeeze(self, axis: Any = None) -> PRNGKeyArray:
        axis = tuple(d for d, n in enumerate(self.shape) if n == 1) if axis is None else axis
        return PRNGKeyArray(jnp.squeeze(self._data, axis))

    def swapaxes(self, axis1: int, axis2: int) -> PRNGKeyArray:
        return PRNGKeyArray(jnp.swapaxes(self._data, axis1 % self.ndim, axis2 % self.ndim))

    itemsize = 8  # two uint32 words
    nbytes = property(lambda self: 8 * self.size)

    def block_until_ready(self) -> PRNGKeyArray:
        self._data.block_until_ready()
        return self

    def devices(self) -> set:
        return self._data.devices()

    committed = property(lambda self: self._data.committed)

    def on_device_size_in_bytes(self) -> int:
        return self._data.on_device_size_in_bytes()

    @property
    def sharding(self) -> Any:
        """The layout of the keys: their data's, without its last dim (the two words)."""
        sharding = self._data.sharding
        return sharding.without_dim(self.ndim) if hasattr(sharding, "without_dim") else sharding

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._data}"


register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), None),
                     lambda _, children: PRNGKeyArray(children[0]))
# --8<-- [end:key_array]


def _key_data_and_kind(key: Any, name: str) -> tuple[Any, bool]:
    """The uint32 data of ``key`` and whether it was a typed key."""
    if isinstance(key, PRNGKeyArray):
        return key._data, True
    data = as_value(key)
    aval = get_aval(data)
    if aval.dtype != dtypes.uint32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(
            f"{name} expects a PRNG key: a typed key from random.key(seed), or a raw key, a "
            f"uint32 array whose last dim is 2 (random.PRNGKey(seed)). Got an array of dtype "
            f"{aval.dtype} and shape {aval.shape}.")
    return data, False


def _single_key(key: Any, name: str) -> tuple[Any, Any, bool]:
    """The two key words of a single key, and whether it was typed."""
    data, typed = _key_data_and_kind(key, name)
    shape = get_aval(data).shape
    if shape != (2,):
        raise TypeError(
            f"{name} accepts a single key, but was given a key array of shape {shape[:-1]} != "
            f"(). Use jax.vmap (stage 3) to map over keys, or index a single key first.")
    return data[0], data[1], typed


def _wrap(data: Any, typed: bool) -> Any:
    return PRNGKeyArray(data) if typed else data


def _seed_words(seed: Any) -> tuple[Any, Any]:
    """The two key words (high, low) of an integer seed."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed = int(seed)
        if not config.jax_enable_x64:
            seed &= 0xFFFFFFFF  # a 32-bit seed: only its low word counts, as in JAX
            seed -= (seed >> 31) << 32  # as a signed int32
        seed = as_value(np.asarray(seed, dtypes.default_int_dtype()))
    seed = as_value(seed)
    aval = get_aval(seed)
    if aval.shape or not dtypes.is_int(aval.dtype):
        raise TypeError(f"PRNG key seed must be an integer scalar; got {aval.str_short()}.")
    low = convert(seed, dtypes.uint32)  # wraps modulo 2**32
    if aval.dtype.itemsize == 8:
        high = convert(lax.shift_right_logical(seed, lax.full_like(seed, 32)), dtypes.uint32)
    else:
        high = lax.zeros_like(low)
    return high, low


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802 -- JAX's name
    """A raw key: a uint32 array of shape (2,) made from an integer seed. ``impl``: the
    generator, which can only be JAX's default, threefry (``"threefry2x32"``).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.PRNGKey(42)
        Array([ 0, 42], dtype=uint32)
    """
    _check_impl(impl)
    high, low = _seed_words(seed)
    return jnp.stack([high, low])


def _check_impl(impl: Any) -> None:
    if impl not in (None, "threefry2x32", "threefry"):
        raise NotImplementedError(
            f"The PRNG implementation {impl!r} is not available: this library implements "
            f"threefry2x32, JAX's default (impl=None or 'threefry2x32').")


def key(seed: Any, *, impl: Any = None) -> PRNGKeyArray:
    """A typed key (shape ()) from an integer seed; ``impl`` as for :func:`PRNGKey`.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.key_data(jax.random.key(42))
        Array([ 0, 42], dtype=uint32)
    """
    return PRNGKeyArray(PRNGKey(seed, impl=impl))


def key_data(keys: Any) -> Any:
    """The uint32 data under typed keys (shape ``keys.shape + (2,)``); raw keys unchanged."""
    data, _ = _key_data_and_kind(keys, "key_data")
    return data


def wrap_key_data(key_bits_array: Any, impl: str | None = None) -> PRNGKeyArray:
    """Typed keys over uint32 data whose last dim is 2."""
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"Only the threefry2x32 PRNG implementation exists, got {impl!r}.")
    data, _ = _key_data_and_kind(key_bits_array, "wrap_key_data")
    return PRNGKeyArray(data)


# --8<-- [start:counters]
def _hash_counters(k1: Any, k2: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Threefry of the counters 0..n-1, one per element of ``shape``, as (high, low) words
    of a 64-bit count: the 'partitionable' scheme, where element i depends on i alone."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError("random arrays of 2**32 or more elements are not supported.")
    low = lax.reshape(lax.iota(dtypes.uint32, (size,)), shape)
    high = lax.zeros_like(low)
    k1 = lax.broadcast_in_dim(k1, shape, ())
    k2 = lax.broadcast_in_dim(k2, shape, ())
    bits1, bits2 = lax.threefry2x32(k1, k2, high, low)
    return bits1, bits2
# --8<-- [end:counters]


config.define("jax_threefry_partitionable", True,
              "How keys and bits come from the hash. On (JAX's default since 0.5): element i "
              "of an array hashes the count i alone, so a split array's bits can be made where "
              "they live. Off: JAX's original scheme, which hashes the first half of the counts "
              "with the second (different bits, for programs that must reproduce old ones).",
              changes_tracing=True)


def _check_prng_impl(name: Any) -> None:
    if name != "threefry2x32":
        raise NotImplementedError(f"jax_default_prng_impl {name!r}: this library has one "
                                  f"generator, 'threefry2x32' (JAX's default); its bits are "
                                  f"JAX's bit for bit. Leave the option as it is.")


config.define("jax_default_prng_impl", "threefry2x32",
              "The random generator: 'threefry2x32', the only one here (JAX's default).",
              on_update=_check_prng_impl)


def _hash_halves(k1: Any, k2: Any, size: int) -> Any:
    """JAX's original scheme: the counts 0..size-1 (with a 0 after an odd number) cut in two
    halves, the first hashed with the second, and the two halves of the result put end to
    end: ``size`` uint32 words."""
    if size >= 2 ** 32:
        raise NotImplementedError("random arrays of 2**32 or more words are not supported.")
    half = (size + 1) // 2
    counts = lax.iota(dtypes.uint32, (size,))
    if size % 2:
        counts = lax.concatenate([counts, lax.full((1,), 0, dtypes.uint32)], 0)
    first, second = lax.slice(counts, (0,), (half,)), lax.slice(counts, (half,), (2 * half,))
    k1, k2 = (lax.broadcast_in_dim(k, (half,), ()) for k in (k1, k2))
    words = lax.concatenate(list(lax.threefry2x32(k1, k2, first, second)), 0)
    return lax.slice(words, (0,), (size,))


def _bits_from_halves(k1: Any, k2: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """``bits`` in JAX's original scheme: 32-bit words, two per 64-bit value (the first half
    of the words high, the second low), or several narrow values per word, low bits first."""
    width, size = 8 * dtype.itemsize, math.prod(shape)
    count = -(-width * size // 32)
    words = _hash_halves(k1, k2, count)
    if width == 64:
        high, low = (lax.convert_element_type(w, dtype) for w in
                     (lax.slice(words, (0,), (count // 2,)),
                      lax.slice(words, (count // 2,), (count,))))
        return lax.reshape(lax.bitwise_or(lax.shift_left(high, lax.full_like(high, 32)), low),
                           shape)
    per_word = 32 // width
    shifts = lax.broadcast_in_dim(
        lax.mul(lax.iota(dtypes.uint32, (per_word,)), np.uint32(width)), (count, per_word), (1,))
    spread = lax.shift_right_logical(lax.broadcast_in_dim(words, (count, per_word), (0,)),
                                     shifts)
    narrow = lax.reshape(lax.bitwise_and(spread, np.uint32(2 ** width - 1)),
                         (count * per_word,))
    return lax.reshape(lax.convert_element_type(lax.slice(narrow, (0,), (size,)), dtype), shape)


def _shape(shape: Shape | int, name: str) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in shape:
        if isinstance(d, Tracer) or not isinstance(d, (int, np.integer)) or d < 0:
            raise TypeError(f"{name}: shape must be a tuple of non-negative Python ints, got "
                            f"{shape}. A shape cannot depend on a traced value.")
    return tuple(int(d) for d in shape)


def split(key: Any, num: int | Shape = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``) derived from ``key``.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.split(jax.random.key(0), 3).shape
        (3,)
    """
    k1, k2, typed = _single_key(key, "split")
    shape = _shape(num, "split")
    if not config.jax_threefry_partitionable:  # key i: words 2i and 2i+1 of the halves
        return _wrap(lax.reshape(_hash_halves(k1, k2, 2 * math.prod(shape)), (*shape, 2)),
                     typed)
    bits1, bits2 = _hash_counters(k1, k2, shape)
    return _wrap(jnp.stack([bits1, bits2], axis=len(shape)), typed)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and an integer: the key of ``split(key, data + 1)[data]``.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.fold_in(jax.random.key(0), 7).shape
        ()
    """
    k1, k2, typed = _single_key(key, "fold_in")
    if isinstance(data, (int, np.integer)):
        if not 0 <= int(data) < 2 ** 32:
            raise OverflowError(f"fold_in data must fit in a uint32, got {data}.")
        data = Array(np.asarray(data, np.uint32))
    data = convert(as_value(data), dtypes.uint32)
    bits1, bits2 = lax.threefry2x32(k1, k2, lax.zeros_like(data), data)
    return _wrap(jnp.stack([bits1, bits2]), typed)


def bits(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Uniformly random unsigned integers, of 8, 16, 32 or 64 bits (by default uint32, or
    uint64 with jax_enable_x64, as in JAX). Narrower ones are the low bits of a 32-bit word.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.bits(jax.random.key(0), (2,)).dtype
        dtype('uint32')
    """
    k1, k2, _ = _single_key(key, "bits")
    shape = _shape(shape, "bits")
    dtype = (dtypes.canonicalize_dtype(dtypes.uint64) if dtype is None  # (no x64 warning)
             else dtypes.check_and_canonicalize_user_dtype(dtype, "bits"))
    if dtype not in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64):
        raise TypeError(f"bits: dtype must be uint8, uint16, uint32 (or uint64 with "
                        f"jax_enable_x64), got {dtype}.")
    if not config.jax_threefry_partitionable:
        return _bits_from_halves(k1, k2, shape, np.dtype(dtype))
    bits1, bits2 = _hash_counters(k1, k2, shape)
    if dtype in (dtypes.uint8, dtypes.uint16, dtypes.uint32):
        return convert(lax.bitwise_xor(bits1, bits2), dtype)  # (binds nothing for uint32)
    high = lax.convert_element_type(bits1, dtypes.uint64)
    low = lax.convert_element_type(bits2, dtypes.uint64)
    return lax.bitwise_or(lax.shift_left(high, lax.full_like(high, 32)), low)


def _float_dtype(dtype: Any, name: str) -> np.dtype:
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, name)
    if not dtypes.is_float(dtype):
        raise TypeError(f"{name}: dtype must be a float dtype, got {dtype}.")
    return dtype


# --8<-- [start:uniform]
def uniform(key: Any, shape: Shape = (), dtype: Any = float, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval).

    The top mantissa bits of a random word, under the exponent of 1.0, make a float in
    [1, 2); subtracting 1 gives [0, 1) in steps of 2**-23 (for float32). NB: JAX's compiled
    ``f * (maxval - minval) + minval`` is one fused multiply-add; we round twice, so with
    non-default bounds a result can differ from JAX's by up to one ulp of (maxval - minval).

    Example:
        >>> import stage1_autodiff as jax
        >>> u = jax.random.uniform(jax.random.key(0), (1000,))
        >>> bool((u >= 0).all() and (u < 1).all())
        True
    """
    dtype = _float_dtype(dtype, "uniform")
    shape = _shape(shape, "uniform")
    nbits = dtype.itemsize * 8
    nmant = ml_dtypes.finfo(dtype).nmant  # (NumPy's finfo knows no bfloat16)
    uint = np.dtype(f"uint{nbits}")
    rng_bits = 8 if nmant < 8 else nbits  # bfloat16's 7 mantissa bits come from a byte (JAX)
    random = convert(bits(key, shape, np.dtype(f"uint{rng_bits}")), uint)
    mantissa = lax.shift_right_logical(random, lax.full_like(random, rng_bits - nmant))
    one_bits = np.array(1.0, dtype).view(uint)
    floats = bitcast_convert_type(lax.bitwise_or(mantissa, lax.full_like(mantissa, one_bits)),
                                  dtype)
    floats = lax.sub(floats, lax.full_like(floats, 1.0))
    minval = jnp.broadcast_to(convert(as_value(minval), dtype), shape)
    maxval = jnp.broadcast_to(convert(as_value(maxval), dtype), shape)
    scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
    return lax.max(minval, scaled)
# --8<-- [end:uniform]


def normal(key: Any, shape: Shape = (), dtype: Any = float) -> Any:
    """Standard normal samples: sqrt(2) erfinv(u) for u uniform in (-1, 1). A complex dtype
    takes its real and imaginary parts from two keys, each of variance 1/2.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.normal(jax.random.key(0), (2, 3)).shape
        (2, 3)
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "normal")
    if dtypes.is_complex(dtype):  # independent real and imaginary parts, each of variance 1/2
        real_dtype = np.empty((), dtype).real.dtype
        key_re, key_im = split(key)
        re, im = (convert(normal(k, shape, real_dtype), dtype) for k in (key_re, key_im))
        z = lax.add(re, lax.mul(im, lax.full_like(im, 1j)))
        return lax.div(z, lax.full_like(z, np.sqrt(2)))
    dtype = _float_dtype(dtype, "normal")
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform(key, shape, dtype, lo, 1.0)
    return lax.mul(lax.full_like(u, np.sqrt(2)), lax.erf_inv(u))


def bernoulli(key: Any, p: Any = 0.5, shape: Shape | None = None, mode: str = "low") -> Any:
    """Random booleans, true with probability ``p``: a uniform draw below ``p``.

    ``mode="high"`` draws two uniforms per element and adds the second, scaled by one step
    of the first, below it: twice the bits, so a ``p`` under 2**-23 (float32) still counts.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.bernoulli(jax.random.key(0), 0.3, (2, 3), mode="high").shape
        (2, 3)
    """
    if mode not in ("high", "low"):
        raise ValueError(f"got {mode=}, expected 'high' or 'low'")
    p = as_value(p)
    dtype = get_aval(p).dtype
    if not dtypes.is_float(dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    shape = get_aval(p).shape if shape is None else _shape(shape, "bernoulli")
    _check_shape("bernoulli", shape, get_aval(p).shape)
    if mode == "low":
        return jnp.less(uniform(key, shape, dtype), p)
    u = uniform(key, (2,) + shape, dtype)
    u1, u2 = u[0], u[1] * (2.0 ** -ml_dtypes.finfo(dtype).nmant)
    return jnp.less(u2, p - u1)


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """A given ``shape`` must be what it broadcasts to with the parameters' shapes."""
    from .numpy.promotion import broadcast_shapes
    if param_shapes and broadcast_shapes(shape, *param_shapes) != shape:
        raise ValueError(
            f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
            f"the result of broadcasting the shapes must equal the shape argument, but got "
            f"result {broadcast_shapes(shape, *param_shapes)} for shape argument {shape}.")


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = int) -> Any:
    """Random integers in [minval, maxval).

    Two random words per element are combined modulo the span, which keeps the bias small
    for any span (JAX's construction).

    Example:
        >>> import stage1_autodiff as jax
        >>> r = jax.random.randint(jax.random.key(0), (100,), 3, 7)
        >>> bool((r >= 3).all() and (r < 7).all())
        True
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "randint")
    shape = _shape(shape, "randint")
    if not dtypes.is_int(dtype):
        raise TypeError(f"randint: dtype must be an integer dtype, got {dtype}.")
    info = np.iinfo(dtype)
    if info.bits < 32:
        # As JAX: 8- and 16-bit integers are drawn as int32 (a wider modulus, less bias),
        # between bounds clipped to the narrow type (maxval up to one past its largest).
        low, high = (jnp.clip(convert(as_value(v), dtypes.int32), info.min, info.max + extra)
                     for v, extra in ((minval, 0), (maxval, 1)))
        return convert(randint(key, shape, low, high, dtypes.int32), dtype)
    minval, maxval = (_clamped_int(v, info, dtype, shape) for v in (minval, maxval))
    k1, k2 = split(key)
    unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
    higher, lower = bits(k1, shape, unsigned), bits(k2, shape, unsigned)
    span = convert(lax.sub(maxval, minval), unsigned)
    span = lax.select_n(lax.le(maxval, minval), span, lax.full_like(span, 1))
    multiplier = lax.rem(lax.full_like(span, 2 ** (unsigned.itemsize * 4)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, convert(offset, dtype))


def _clamped_int(value: Any, info: np.iinfo, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    if isinstance(value, (int, np.integer)):
        value = Array(np.asarray(min(max(int(value), info.min), info.max), dtype))
    value = convert(as_value(value), dtype)
    return jnp.broadcast_to(value, shape)


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``range(x)`` for an int ``x``, else of ``x`` along ``axis``;
    with ``independent=True``, each slice along ``axis`` in its own order.

    Each round sorts by fresh random words; enough rounds make ties (which would bias the
    result) improbable.

    Example:
        >>> import stage1_autodiff as jax
        >>> sorted(jax.random.permutation(jax.random.key(0), 5).tolist())
        [0, 1, 2, 3, 4]
    """
    if isinstance(x, (int, np.integer)):
        return _shuffle(key, jnp.arange(int(x)), 0)
    x = as_value(x)
    shape = get_aval(x).shape
    if not shape:
        raise TypeError("permutation: x must be an integer or an array with at least 1 dim.")
    axis = canonicalize_axis(axis, len(shape), "permutation")
    if independent:  # each slice along the other axes gets its own order
        return _shuffle(key, x, axis)
    return jnp.take(x, _shuffle(key, jnp.arange(shape[axis]), 0), axis=axis)


def _shuffle(key: Any, x: Any, axis: int) -> Any:
    n = get_aval(x).size
    rounds = math.ceil(3 * math.log(max(1, n)) / math.log(2 ** 32 - 1))
    for _ in range(rounds):
        key, subkey = split(key)
        sort_keys = bits(subkey, get_aval(x).shape, dtypes.uint32)
        _, x = lax.sort([sort_keys, x], dimension=axis, num_keys=1)
    return x


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel samples, -log(-log(u)).

    ``mode`` picks how many bits make ``u`` (None means "low", JAX's default): "low" takes
    one uniform in [tiny, 1), whose largest sample is about 16 in float32; "high" adds a
    second uniform below the first's last bit where u < 1/2 (largest about 32); "highest"
    (float32) turns 64 random bits into a float with every bit significant.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.gumbel(jax.random.key(0), (3,), mode="high").shape
        (3,)
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(float if dtype is None else dtype, "gumbel")
    if not dtypes.is_float(dtype):
        raise ValueError(f"dtype argument to `gumbel` must be a float dtype, got {dtype}")
    shape = _shape(shape, "gumbel")
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    info = ml_dtypes.finfo(dtype)
    if mode == "highest" and dtype == dtypes.float32:
        return _gumbel_highest(key, shape)
    if mode == "low":
        u = uniform(key, shape, dtype, info.tiny, 1.0)
        return lax.neg(lax.log(lax.neg(lax.log(u))))
    u = uniform(key, (2,) + shape, dtype)
    high, low = u[0], u[1]
    x = jnp.where(high >= 0.5, high, high + 2.0 ** -info.nmant * low + info.tiny)
    return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))


def _gumbel_highest(key: Any, shape: tuple[int, ...]) -> Any:
    """Gumbel from 64 random bits b read as the fixed-point fraction u = b / 2**64: for
    u < 1/2 from log1p(-u), else from log(1 - u'), u' the 64-bit complement 1 - u."""
    words = bits(key, (2,) + shape, dtypes.uint32)
    complement = lax.bitwise_not(words)
    all_ones = lax.full_like(complement[1], 0xFFFFFFFF)
    carry = convert(lax.eq(complement[1], all_ones), dtypes.uint32)
    complement = jnp.stack([complement[0] + carry, complement[1] + np.uint32(1)])
    flip = words[0] < np.uint32(2 ** 31)
    x = _float_of_fraction(jnp.where(flip, words, complement))
    return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))


def _float_of_fraction(words: Any) -> Any:
    """The float32 nearest below (hi, lo) / 2**64, in (0, 1): the fraction's 24 leading
    significant bits, found past its leading zeros (clz), under the matching exponent."""
    from .lax import clz
    hi, lo = words[0], words[1]
    hi_zeros, lo_zeros = clz(hi), clz(lo)
    hi_empty = hi_zeros == np.uint32(32)
    top = lax.bitwise_or(lax.shift_left(hi, hi_zeros), jnp.where(
        hi_empty, lax.shift_left(lo, lo_zeros), lax.shift_right_logical(lo, 32 - hi_zeros)))
    mantissa = lax.shift_right_logical(top, lax.full_like(top, 8)) & np.uint32(2 ** 23 - 1)
    leading = jnp.where(hi_empty, 32 + lo_zeros, hi_zeros)
    exponent = lax.shift_left(126 - leading, lax.full_like(top, 23))
    exponent = exponent & np.uint32(2 ** 30 - 2 ** 22)
    return bitcast_convert_type(exponent | mantissa, dtypes.float32)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Shape | None = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Samples class indices with probabilities softmax(logits) along ``axis``, by the
    Gumbel-max trick: argmax(logits + Gumbel noise). Without replacement, the Gumbel top-k
    trick: the k largest of one noisy copy, k the size of the shape's prefix.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.random.categorical(jax.random.key(0), jnp.zeros((4, 3))).shape
        (4,)
        >>> draws = jax.random.categorical(jax.random.key(0), jnp.zeros(5), shape=(5,),
        ...                                replace=False)
        >>> sorted(draws.tolist())
        [0, 1, 2, 3, 4]
    """
    logits = as_value(logits)
    logits_shape = get_aval(logits).shape
    axis = canonicalize_axis(axis, len(logits_shape), "categorical")
    batch_shape = logits_shape[:axis] + logits_shape[axis + 1:]
    shape = batch_shape if shape is None else _shape(shape, "categorical")
    _check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    dtype = get_aval(logits).dtype
    if not replace:
        return _categorical_without_replacement(key, logits, axis, shape, prefix, mode)
    noise_shape = prefix + shape[len(prefix):][:axis] + logits_shape[axis:axis + 1] + \
        shape[len(prefix):][axis:]
    noise = gumbel(key, noise_shape, dtype, mode)
    return jnp.argmax(noise + logits, axis=axis - len(logits_shape))


def _categorical_without_replacement(key: Any, logits: Any, axis: int, shape: tuple[int, ...],
                                     prefix: tuple[int, ...], mode: str | None) -> Any:
    from .lax import top_k
    logits_shape = get_aval(logits).shape
    noisy = logits + gumbel(key, logits_shape, get_aval(logits).dtype, mode)
    k = math.prod(prefix)
    if k > logits_shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits_shape[axis]}).")
    _, indices = top_k(jnp.moveaxis(noisy, axis, -1), k)  # batch_shape + (k,)
    if prefix + get_aval(indices).shape[:-1] != shape:
        raise ValueError(f"categorical(replace=False): shape {shape} must be the samples' "
                         f"prefix then the logits' batch shape exactly, without broadcasting.")
    return jnp.reshape(jnp.moveaxis(indices, -1, 0), shape)


def key_impl(keys: Any) -> str:
    """The name of the keys' PRNG implementation: always "threefry2x32" here.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.key_impl(jax.random.key(0))
        'threefry2x32'
    """
    _key_data_and_kind(keys, "key_impl")
    return "threefry2x32"


_JAX_PRNG_IMPLS = ("philox2x32", "philox4x32", "threefry2x32", "rbg", "unsafe_rbg",
                   "threefry4x32")


def key_dtype(impl_spec: Any = None) -> KeyDtype:
    """The dtype of typed keys of a PRNG implementation (only threefry2x32 exists here).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.random.key_dtype()
        key<fry>
    """
    if impl_spec is None or impl_spec == "threefry2x32" or isinstance(impl_spec, KeyDtype):
        return KeyDtype()
    if not isinstance(impl_spec, str):
        raise TypeError(f"unrecognized type {type(impl_spec)} for specifying PRNG "
                        f"implementation.")
    if impl_spec in _JAX_PRNG_IMPLS:
        raise NotImplementedError(f"the {impl_spec!r} PRNG implementation is JAX's, not ours: "
                                  f"only 'threefry2x32' is implemented here.")
    names = ", ".join(f'"{name}"' for name in _JAX_PRNG_IMPLS)
    raise ValueError(f'unrecognized PRNG implementation "{impl_spec}". Did you mean one of: '
                     f'{names}?')


def clone(key: Any) -> Any:
    """The same key, for reuse. NB: in JAX this is a primitive (``random_clone_p``) that the
    key-reuse checker (jax.experimental.key_reuse) treats as a fresh key; with no such
    checker here it is the identity.

    Example:
        >>> import stage1_autodiff as jax
        >>> key = jax.random.key(0)
        >>> bool(jax.random.uniform(jax.random.clone(key)) == jax.random.uniform(key))
        True
    """
    return key


from .random_distributions import *  # noqa: E402, F403 -- the distributions, built on the above
