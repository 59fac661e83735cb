"""Generate ``jax_random_reference.json``: reference outputs of real JAX's PRNG.

This script imports JAX and is *not* run by the test suite.  The tests only
read the JSON it writes, so CI does not need JAX installed.  Regenerate with::

    /path/to/python-with-jax tests/stage1/data/make_jax_random_reference.py

(run from the repository root, or anywhere: the output path is relative to this
file).  Pass ``--out PATH`` to write somewhere else.

Everything runs under the default JAX configuration (``jax_enable_x64`` off,
default PRNG implementation ``threefry2x32``).  The script refuses to run if
x64 is enabled or the default PRNG implementation is not threefry2x32.

Encoding conventions in the JSON (see README.md next to this file):

* uint32 / int32 arrays: nested lists of Python ints (a scalar is a bare int).
* bool arrays: nested lists of JSON booleans.
* float32 arrays: an object ``{"dtype": "float32", "bits": ..., "values": ...}``
  where ``bits`` is the nested list of uint32 bit patterns
  (``np.asarray(x, np.float32).view(np.uint32)``) -- the exact value -- and
  ``values`` is the same data as decimals, for readability only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

import jax
import jax.numpy as jnp
import numpy as np

try:  # JAX >= 0.4.x exposes this publicly; older versions had jax.prng.
    from jax.extend.random import threefry_2x32 as _threefry_2x32
except ImportError:  # pragma: no cover - depends on installed JAX
    from jax.prng import threefry_2x32 as _threefry_2x32  # type: ignore


HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "jax_random_reference.json")

SAMPLER_SEEDS = (0, 42)


# --------------------------------------------------------------------------
# encoding helpers
# --------------------------------------------------------------------------

def u32(x):
    a = np.asarray(x)
    assert a.dtype == np.uint32, a.dtype
    return a.tolist()


def ints(x):
    a = np.asarray(x)
    assert np.issubdtype(a.dtype, np.integer), a.dtype
    return a.tolist()


def bools(x):
    a = np.asarray(x)
    assert a.dtype == np.bool_, a.dtype
    return a.tolist()


def f32(x):
    a = np.asarray(x)
    assert a.dtype == np.float32, a.dtype
    return {
        "dtype": "float32",
        "bits": a.view(np.uint32).tolist(),
        # float(np.float32) is exactly representable as a double, and Python's
        # repr of a double round-trips, so these decimals are exact too; the
        # bit patterns are nevertheless the authoritative value.
        "values": a.astype(np.float64).tolist(),
    }


def kd(k):
    """Raw uint32 key data of a typed key array, or a raw key array itself."""
    if jnp.issubdtype(k.dtype, jax.dtypes.prng_key):
        k = jax.random.key_data(k)
    return u32(k)


def make_key(seed, kind):
    if kind == "typed":
        return jax.random.key(seed)
    if kind == "raw":
        return jax.random.PRNGKey(seed)
    raise ValueError(kind)


def key_expr(seed, kind):
    return f"key({seed})" if kind == "typed" else f"PRNGKey({seed})"


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------

def case_key_data():
    out = []
    seeds = (0, 1, 42, 123456789, -1, 2**31 - 1)
    # Extra seeds documenting x32-mode truncation: with x64 disabled the seed
    # is reduced to its low 32 bits and the high key word is 0.
    extra = (-2, -(2**31), 2**31, 2**32 - 1, 2**32 + 7, 2**40 + 3)
    for s in seeds + extra:
        out.append({
            "seed": s,
            "extra": s in extra,
            "key_data": kd(jax.random.key(s)),
            "prngkey": kd(jax.random.PRNGKey(s)),
        })
    return out


def case_split():
    out = []
    for kind in ("typed", "raw"):
        for s in (0, 42):
            k = make_key(s, kind)
            for num in (None, 3, 7, (2, 3)):
                if num is None:
                    r = jax.random.split(k)
                    expr = f"split({key_expr(s, kind)})"
                    num_json = None
                else:
                    r = jax.random.split(k, num)
                    expr = f"split({key_expr(s, kind)}, {num})"
                    num_json = list(num) if isinstance(num, tuple) else num
                data = np.asarray(jax.random.key_data(r) if kind == "typed" else r)
                out.append({
                    "expr": expr,
                    "seed": s,
                    "key_kind": kind,
                    "num": num_json,  # null means the default (2)
                    "shape": list(data.shape),  # key-data shape: (*num, 2)
                    "result": u32(data),
                })
    return out


def case_fold_in():
    out = []
    for kind in ("typed", "raw"):
        for s, d in ((0, 0), (0, 1), (42, 7), (1, 2**31 - 1), (3, 12345)):
            r = jax.random.fold_in(make_key(s, kind), d)
            out.append({
                "expr": f"fold_in({key_expr(s, kind)}, {d})",
                "seed": s,
                "key_kind": kind,
                "data": d,
                "result": kd(r),
            })
    return out


def case_bits():
    out = []
    for kind in ("typed", "raw"):
        for s in SAMPLER_SEEDS:
            for shape in ((), (3,), (2, 5), (7, 3)):
                r = jax.random.bits(make_key(s, kind), shape, dtype=jnp.uint32)
                out.append({
                    "expr": f"bits({key_expr(s, kind)}, {shape}, uint32)",
                    "seed": s,
                    "key_kind": kind,
                    "shape": list(shape),
                    "dtype": "uint32",
                    "result": u32(r),
                })
    return out


def case_threefry():
    out = []
    for key in ((0, 0), (0, 42), (0x13198A2E, 0x03707344), (0xFFFFFFFF, 0xFFFFFFFF)):
        for n in (2, 5, 8):
            count = jnp.arange(n, dtype=jnp.uint32)
            r = _threefry_2x32(jnp.array(key, dtype=jnp.uint32), count)
            out.append({
                "expr": f"threefry_2x32(uint32{list(key)}, arange({n}, uint32))",
                "key": list(key),
                "count": u32(count),
                "result": u32(r),
            })
    return out


def case_uniform():
    out = []
    for s in SAMPLER_SEEDS:
        for shape in ((), (4,), (3, 5)):
            r = jax.random.uniform(jax.random.key(s), shape)
            out.append({
                "expr": f"uniform(key({s}), {shape})",
                "seed": s, "key_kind": "typed", "shape": list(shape),
                "minval": 0.0, "maxval": 1.0,
                "result": f32(r),
            })
        r = jax.random.uniform(jax.random.key(s), (6,), minval=-2, maxval=3)
        out.append({
            "expr": f"uniform(key({s}), (6,), minval=-2, maxval=3)",
            "seed": s, "key_kind": "typed", "shape": [6],
            "minval": -2.0, "maxval": 3.0,
            "result": f32(r),
        })
    r = jax.random.uniform(jax.random.PRNGKey(0), (4,))
    out.append({
        "expr": "uniform(PRNGKey(0), (4,))",
        "seed": 0, "key_kind": "raw", "shape": [4],
        "minval": 0.0, "maxval": 1.0,
        "result": f32(r),
    })
    return out


def case_normal():
    out = []
    for s in SAMPLER_SEEDS:
        for shape in ((), (5,), (4, 4)):
            r = jax.random.normal(jax.random.key(s), shape)
            out.append({
                "expr": f"normal(key({s}), {shape})",
                "seed": s, "key_kind": "typed", "shape": list(shape),
                "result": f32(r),
            })
    r = jax.random.normal(jax.random.PRNGKey(0), (5,))
    out.append({
        "expr": "normal(PRNGKey(0), (5,))",
        "seed": 0, "key_kind": "raw", "shape": [5],
        "result": f32(r),
    })
    return out


def case_bernoulli():
    out = []
    for s in SAMPLER_SEEDS:
        r = jax.random.bernoulli(jax.random.key(s), 0.3, (10,))
        out.append({
            "expr": f"bernoulli(key({s}), 0.3, (10,))",
            "seed": s, "key_kind": "typed", "p": 0.3, "shape": [10],
            "result": bools(r),
        })
    return out


def case_randint():
    out = []
    for s in SAMPLER_SEEDS:
        for shape, lo, hi in (((10,), 0, 10), ((5,), -5, 17)):
            r = jax.random.randint(jax.random.key(s), shape, lo, hi)
            out.append({
                "expr": f"randint(key({s}), {shape}, {lo}, {hi})",
                "seed": s, "key_kind": "typed", "shape": list(shape),
                "minval": lo, "maxval": hi, "dtype": str(r.dtype),
                "result": ints(r),
            })
    return out


def case_permutation():
    out = []
    for s in SAMPLER_SEEDS:
        r = jax.random.permutation(jax.random.key(s), 10)
        out.append({
            "expr": f"permutation(key({s}), 10)",
            "seed": s, "key_kind": "typed", "x": 10,
            "dtype": str(r.dtype),
            "result": ints(r),
        })
        x = jnp.arange(6)
        r = jax.random.permutation(jax.random.key(s), x)
        out.append({
            "expr": f"permutation(key({s}), arange(6))",
            "seed": s, "key_kind": "typed", "x": ints(x),
            "dtype": str(r.dtype),
            "result": ints(r),
        })
    return out


LOGITS_1D = [0.1, 1.0, -0.5, 2.0]
LOGITS_2D = [[0.1, 1.0, -0.5, 2.0],
             [3.0, -1.0, 0.0, 0.5],
             [-2.0, -2.0, 1.5, 1.0]]


def case_categorical():
    out = []
    for s in SAMPLER_SEEDS:
        logits = jnp.array(LOGITS_1D)
        r = jax.random.categorical(jax.random.key(s), logits, shape=(8,))
        out.append({
            "expr": f"categorical(key({s}), array({LOGITS_1D}), shape=(8,))",
            "seed": s, "key_kind": "typed", "axis": -1, "shape": [8],
            "logits": f32(logits),
            "dtype": str(r.dtype),
            "result": ints(r),
        })
        logits = jnp.array(LOGITS_2D)
        r = jax.random.categorical(jax.random.key(s), logits, axis=-1)
        out.append({
            "expr": f"categorical(key({s}), array(<3x4 logits>), axis=-1)",
            "seed": s, "key_kind": "typed", "axis": -1, "shape": None,
            "logits": f32(logits),
            "dtype": str(r.dtype),
            "result": ints(r),
        })
    return out


def case_vmap_normal_over_split():
    keys = jax.random.split(jax.random.key(0), 4)
    r = jax.vmap(lambda k: jax.random.normal(k, (3,)))(keys)
    return {
        "expr": "vmap(lambda k: normal(k, (3,)))(split(key(0), 4))",
        "keys": kd(keys),
        "result": f32(r),
        # The law: row i equals normal(keys[i], (3,)) computed on its own.
        "rowwise_equal": bool(all(
            np.array_equal(np.asarray(r[i]),
                           np.asarray(jax.random.normal(keys[i], (3,))))
            for i in range(4))),
    }


# Extras (not strictly requested; useful for localising a mismatch).

def extra_gumbel():
    out = []
    for s in SAMPLER_SEEDS:
        for shape in ((8, 4), (3, 4)):
            r = jax.random.gumbel(jax.random.key(s), shape)
            out.append({
                "expr": f"gumbel(key({s}), {shape})",
                "seed": s, "key_kind": "typed", "shape": list(shape),
                "result": f32(r),
            })
    return out


def extra_erf_inv():
    lo = np.nextafter(np.float32(-1), np.float32(0), dtype=np.float32)
    xs = np.array(
        [lo, -0.999, -0.9, -0.5, -0.25, -1e-3, -1e-8, 0.0, 1e-8, 1e-3, 0.1,
         0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999,
         np.nextafter(np.float32(1), np.float32(0), dtype=np.float32)],
        dtype=np.float32)
    # Also every uniform value that feeds the normal() cases above.
    for s in SAMPLER_SEEDS:
        u = jax.random.uniform(jax.random.key(s), (4, 4), minval=lo, maxval=1.0)
        xs = np.concatenate([xs, np.asarray(u).ravel()])
    return {
        "expr": "lax.erf_inv(x) for float32 x",
        "x": f32(xs),
        "result": f32(jax.lax.erf_inv(jnp.asarray(xs))),
    }


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------

def _is_leaf_list(x):
    return isinstance(x, list) and all(not isinstance(v, (list, dict)) for v in x)


def _dump(obj, indent=0):
    """JSON with innermost lists kept on one line (diff-friendly, compact)."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f'{pad}  {json.dumps(k)}: {_dump(v, indent + 1)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        if _is_leaf_list(obj):
            return json.dumps(obj)
        if all(_is_leaf_list(v) for v in obj) and sum(len(v) for v in obj) <= 24:
            return json.dumps(obj)
        items = [f"{pad}  {_dump(v, indent + 1)}" for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj)


def build():
    if jax.config.jax_enable_x64:
        sys.exit("refusing to run: jax_enable_x64 must be off (the default)")
    if jax.config.jax_default_prng_impl != "threefry2x32":
        sys.exit("refusing to run: default PRNG impl must be threefry2x32")

    import jaxlib
    return {
        "meta": {
            "description": "Reference outputs of jax.random (threefry2x32) "
                           "for bit-exactness tests; see README.md.",
            "jax_version": jax.__version__,
            "jaxlib_version": getattr(jaxlib, "__version__", None),
            "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
            "jax_enable_x64": bool(jax.config.jax_enable_x64),
            "jax_default_prng_impl": jax.config.jax_default_prng_impl,
            "backend": jax.default_backend(),
            "numpy_version": np.__version__,
            "python_version": platform.python_version(),
            "generator": "tests/stage1/data/make_jax_random_reference.py",
            "float_encoding": "float32 arrays are {dtype, bits, values}; bits "
                              "(uint32 view) are authoritative, values are "
                              "decimal for readability",
        },
        "key_data": case_key_data(),
        "split": case_split(),
        "fold_in": case_fold_in(),
        "bits": case_bits(),
        "threefry_2x32": case_threefry(),
        "uniform": case_uniform(),
        "normal": case_normal(),
        "bernoulli": case_bernoulli(),
        "randint": case_randint(),
        "permutation": case_permutation(),
        "categorical": case_categorical(),
        "vmap_normal_over_split": case_vmap_normal_over_split(),
        "extra_gumbel": extra_gumbel(),
        "extra_erf_inv": extra_erf_inv(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    data = build()
    text = _dump(data) + "\n"
    json.loads(text)  # sanity: valid JSON
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {args.out} (jax {data['meta']['jax_version']}, "
          f"threefry_partitionable={data['meta']['jax_threefry_partitionable']})")


if __name__ == "__main__":
    main()
