"""``jax.random`` against values stored from real JAX (see data/README.md), plus the
properties an explicit-key PRNG must have."""

import json
from pathlib import Path

import numpy as np
import pytest

from stage1_autodiff import core, prims
from stage1_autodiff import numpy as jnp
from stage1_autodiff import random as jr

Array = core.Array
erf_inv, threefry2x32 = prims.erf_inv, prims.threefry2x32

REFERENCE = json.loads((Path(__file__).parent / "data" / "jax_random_reference.json").read_text())


def decode(stored) -> np.ndarray:
    """Floats are stored as uint32 bit patterns (exact); everything else as plain lists."""
    if isinstance(stored, dict):
        assert stored["dtype"] == "float32"
        return np.asarray(stored["bits"], np.uint32).view(np.float32)
    return np.asarray(stored)


def make_key(entry):
    return jr.key(entry["seed"]) if entry["key_kind"] == "typed" else jr.PRNGKey(entry["seed"])


def key_bits(keys) -> np.ndarray:
    return np.asarray(jr.key_data(keys))


def cases(section: str):
    return pytest.mark.parametrize("entry", REFERENCE[section], ids=lambda e: e["expr"])


def assert_bits_equal(actual, expected: np.ndarray) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))


def test_reference_was_made_with_the_configuration_we_reproduce():
    meta = REFERENCE["meta"]
    assert meta["jax_threefry_partitionable"] is True
    assert meta["jax_enable_x64"] is False
    assert meta["jax_default_prng_impl"] == "threefry2x32"


# ------------------------------------------------------------------------------------------
# Keys, split, fold_in, bits and the hash: bit-exact
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", REFERENCE["key_data"], ids=lambda e: f"seed={e['seed']}")
def test_key_data_of_seed(entry):
    typed = jr.key(entry["seed"])
    raw = jr.PRNGKey(entry["seed"])
    assert typed.shape == ()
    assert key_bits(typed).dtype == np.uint32 and raw.dtype == np.uint32
    np.testing.assert_array_equal(key_bits(typed), np.asarray(entry["key_data"], np.uint32))
    np.testing.assert_array_equal(np.asarray(raw), np.asarray(entry["prngkey"], np.uint32))


@pytest.mark.task1_5
@cases("split")
def test_split(entry):
    num = entry["num"]
    key = make_key(entry)
    if num is None:
        out = jr.split(key)
    else:
        out = jr.split(key, tuple(num) if isinstance(num, list) else num)
    expected = np.asarray(entry["result"], np.uint32)
    assert key_bits(out).shape == tuple(entry["shape"])
    np.testing.assert_array_equal(key_bits(out), expected)
    # split returns the kind of key it was given.
    if entry["key_kind"] == "typed":
        assert isinstance(out, jr.PRNGKeyArray) and out.shape == tuple(entry["shape"])[:-1]
    else:
        assert isinstance(out, Array) and out.dtype == np.uint32


@pytest.mark.task1_5
@cases("fold_in")
def test_fold_in(entry):
    out = jr.fold_in(make_key(entry), entry["data"])
    np.testing.assert_array_equal(key_bits(out), np.asarray(entry["result"], np.uint32))
    assert isinstance(out, jr.PRNGKeyArray if entry["key_kind"] == "typed" else Array)


def test_fold_in_accepts_array_data():
    expected = key_bits(jr.fold_in(jr.key(42), 7))
    np.testing.assert_array_equal(key_bits(jr.fold_in(jr.key(42), jnp.array(7))), expected)
    np.testing.assert_array_equal(key_bits(jr.fold_in(jr.key(42), np.uint32(7))), expected)


@pytest.mark.task1_5
@cases("bits")
def test_bits(entry):
    out = jr.bits(make_key(entry), tuple(entry["shape"]))
    assert out.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(out), np.asarray(entry["result"], np.uint32))


def jax_threefry_2x32(key: np.ndarray, count: np.ndarray) -> np.ndarray:
    """JAX's wrapper (jax/_src/prng.py: threefry_2x32) over our primitive: flatten the count,
    pad to even length with a 0, hash first half against second half, drop the pad."""
    flat = np.asarray(count, np.uint32).ravel()
    padded = np.concatenate([flat, np.zeros(flat.size % 2, np.uint32)])
    half = padded.size // 2
    k1 = Array(np.full(half, key[0], np.uint32))
    k2 = Array(np.full(half, key[1], np.uint32))
    out1, out2 = threefry2x32(k1, k2, Array(padded[:half]), Array(padded[half:]))
    assert out1.dtype == np.uint32 and out2.dtype == np.uint32
    out = np.concatenate([np.asarray(out1), np.asarray(out2)])
    return out[:flat.size].reshape(np.shape(count))


@pytest.mark.task1_5
@cases("threefry_2x32")
def test_threefry_2x32_hash(entry):
    out = jax_threefry_2x32(np.asarray(entry["key"], np.uint32), np.asarray(entry["count"]))
    np.testing.assert_array_equal(out, np.asarray(entry["result"], np.uint32))


@pytest.mark.task1_5
def test_threefry_known_answer_from_the_random123_paper():
    """Random123's known-answer test for threefry2x32_20: key 0, counter 0."""
    out1, out2 = threefry2x32(*(Array(np.zeros((), np.uint32)) for _ in range(4)))
    assert (int(out1), int(out2)) == (0x6B200159, 0x99BA4EFE)


# ------------------------------------------------------------------------------------------
# Samplers against JAX
# ------------------------------------------------------------------------------------------


@pytest.mark.task1_5
@cases("uniform")
def test_uniform(entry):
    out = jr.uniform(make_key(entry), tuple(entry["shape"]),
                     minval=entry["minval"], maxval=entry["maxval"])
    expected = decode(entry["result"])
    if (entry["minval"], entry["maxval"]) == (0.0, 1.0):
        assert_bits_equal(out, expected)
        return
    # JAX computes f * (maxval - minval) + minval as one fused multiply-add; we round the
    # product first. The difference is at most one ulp at the scale of the product, which
    # is a few ulps of the result where the sum cancels towards 0.
    out = np.asarray(out)
    assert out.dtype == np.float32 and out.shape == expected.shape
    scale = np.spacing(np.float32(entry["maxval"] - entry["minval"]))
    np.testing.assert_allclose(out, expected, rtol=0, atol=scale)


@pytest.mark.task1_5
@cases("normal")
def test_normal(entry):
    out = np.asarray(jr.normal(make_key(entry), tuple(entry["shape"])))
    expected = decode(entry["result"])
    assert out.dtype == np.float32 and out.shape == expected.shape
    tolerance = 1e-6 * np.maximum(1.0, np.abs(expected))  # relative beyond |z| = 1
    assert np.all(np.abs(out - expected) <= tolerance)


def test_normal_of_each_split_key_matches_jax_vmap():
    """JAX's ``vmap(normal)`` over split keys equals the loop; stage 1 has no vmap."""
    entry = REFERENCE["vmap_normal_over_split"]
    keys = jr.split(jr.key(0), 4)
    np.testing.assert_array_equal(key_bits(keys), np.asarray(entry["keys"], np.uint32))
    expected = decode(entry["result"])
    rows = np.stack([np.asarray(jr.normal(k, (3,))) for k in keys])
    np.testing.assert_allclose(rows, expected, rtol=1e-6, atol=1e-6)


def test_erf_inv_matches_xla():
    entry = REFERENCE["extra_erf_inv"]
    out = np.asarray(erf_inv(Array(decode(entry["x"]))))
    expected = decode(entry["result"])
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


@cases("extra_gumbel")
def test_gumbel(entry):
    out = np.asarray(jr.gumbel(make_key(entry), tuple(entry["shape"])))
    expected = decode(entry["result"])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=2e-7)


@cases("bernoulli")
def test_bernoulli(entry):
    out = jr.bernoulli(make_key(entry), entry["p"], tuple(entry["shape"]))
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(out), np.asarray(entry["result"], np.bool_))


@cases("randint")
def test_randint(entry):
    out = jr.randint(make_key(entry), tuple(entry["shape"]), entry["minval"], entry["maxval"])
    assert out.dtype == np.dtype(entry["dtype"])
    np.testing.assert_array_equal(np.asarray(out), np.asarray(entry["result"], np.int32))


@cases("permutation")
def test_permutation(entry):
    x = entry["x"] if isinstance(entry["x"], int) else jnp.asarray(np.asarray(entry["x"], np.int32))
    out = jr.permutation(make_key(entry), x)
    assert out.dtype == np.dtype(entry["dtype"])
    np.testing.assert_array_equal(np.asarray(out), np.asarray(entry["result"], np.int32))


@cases("categorical")
def test_categorical(entry):
    shape = None if entry["shape"] is None else tuple(entry["shape"])
    out = jr.categorical(make_key(entry), jnp.asarray(decode(entry["logits"])),
                         axis=entry["axis"], shape=shape)
    assert out.dtype == np.dtype(entry["dtype"])
    np.testing.assert_array_equal(np.asarray(out), np.asarray(entry["result"], np.int32))


# ------------------------------------------------------------------------------------------
# Typed and raw keys
# ------------------------------------------------------------------------------------------


def test_typed_key_shape_and_key_data_shape():
    key = jr.key(0)
    assert key.shape == () and key.ndim == 0
    assert key_bits(key).shape == (2,)
    assert jr.split(key, 5).shape == (5,)
    assert key_bits(jr.split(key, (2, 3))).shape == (2, 3, 2)
    assert jr.PRNGKey(0).shape == (2,)


def test_key_data_of_raw_key_is_unchanged_and_wrap_key_data_round_trips():
    raw = jr.PRNGKey(7)
    np.testing.assert_array_equal(key_bits(raw), np.asarray(raw))
    wrapped = jr.wrap_key_data(raw)
    assert isinstance(wrapped, jr.PRNGKeyArray) and wrapped.shape == ()
    np.testing.assert_array_equal(key_bits(wrapped), np.asarray(raw))


@pytest.mark.parametrize("make", [jr.key, jr.PRNGKey], ids=["typed", "raw"])
def test_split_unpacks_and_iterates(make):
    key = make(3)
    k1, k2 = jr.split(key)
    keys = jr.split(key, 4)
    listed = list(keys)
    assert len(listed) == 4 and len(keys) == 4
    np.testing.assert_array_equal(key_bits(k1), key_bits(keys[0]))
    np.testing.assert_array_equal(key_bits(k2), key_bits(listed[1]))
    for k in (k1, k2, *listed):
        assert type(k) is type(key)
        assert key_bits(k).shape == (2,)


@pytest.mark.parametrize("sample", [
    lambda k: jr.uniform(k, (5,)),
    lambda k: jr.normal(k, (5,)),
    lambda k: jr.bits(k, (5,)),
    lambda k: jr.bernoulli(k, 0.5, (5,)),
    lambda k: jr.randint(k, (5,), -3, 9),
    lambda k: jr.permutation(k, 7),
    lambda k: jr.gumbel(k, (5,)),
    lambda k: jr.categorical(k, jnp.zeros((5, 3))),
    lambda k: jr.key_data(jr.split(k, 3)),
    lambda k: jr.key_data(jr.fold_in(k, 11)),
], ids=["uniform", "normal", "bits", "bernoulli", "randint", "permutation", "gumbel",
        "categorical", "split", "fold_in"])
def test_typed_and_raw_keys_give_the_same_numbers(sample):
    typed, raw = sample(jr.key(11)), sample(jr.PRNGKey(11))
    assert typed.dtype == raw.dtype and typed.shape == raw.shape
    np.testing.assert_array_equal(np.asarray(typed), np.asarray(raw))


def test_split_of_a_split_key_keeps_its_kind():
    typed = jr.split(jr.key(0))[1]
    raw = jr.split(jr.PRNGKey(0))[1]
    assert isinstance(jr.split(typed), jr.PRNGKeyArray)
    assert isinstance(jr.split(raw), Array)
    np.testing.assert_array_equal(key_bits(jr.split(typed)), key_bits(jr.split(raw)))


# ------------------------------------------------------------------------------------------
# Properties: determinism, independence, distributions
# ------------------------------------------------------------------------------------------


def test_same_key_same_numbers():
    key = jr.key(123)
    np.testing.assert_array_equal(np.asarray(jr.uniform(key, (100,))),
                                  np.asarray(jr.uniform(key, (100,))))
    np.testing.assert_array_equal(np.asarray(jr.normal(key, (10,))),
                                  np.asarray(jr.normal(key, (10,))))


def test_different_keys_give_different_numbers():
    draws = [np.asarray(jr.uniform(jr.key(seed), (50,))) for seed in range(5)]
    for i in range(len(draws)):
        for j in range(i + 1, len(draws)):
            assert not np.any(draws[i] == draws[j]), (i, j)
    k1, k2 = jr.split(jr.key(0))
    assert not np.any(np.asarray(jr.bits(k1, (50,))) == np.asarray(jr.bits(k2, (50,))))


def test_split_keys_look_independent():
    keys = jr.split(jr.key(2024), 1000)
    data = key_bits(keys)
    assert len({tuple(row) for row in data.tolist()}) == 1000
    first_draws = [float(jr.uniform(k)) for k in keys]
    assert len(set(first_draws)) == 1000
    # And no key of the split is the parent or reproduces the parent's stream.
    parent = key_bits(jr.key(2024)).tolist()
    assert parent not in data.tolist()


def test_sample_shapes_and_dtypes():
    key = jr.key(5)
    assert jr.uniform(key).shape == () and jr.uniform(key).dtype == np.float32
    assert jr.uniform(key, 3).shape == (3,)
    assert jr.normal(key, (2, 3)).dtype == np.float32
    assert jr.bits(key, (4,)).dtype == np.uint32
    assert jr.randint(key, (4,), 0, 3).dtype == np.int32
    assert jr.bernoulli(key, 0.2, (4,)).dtype == np.bool_
    assert jr.permutation(key, 6).dtype == np.int32
    assert jr.uniform(key, (0, 3)).shape == (0, 3)


def test_uniform_mean_and_range():
    u = np.asarray(jr.uniform(jr.key(1), (100_000,)))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    assert abs(u.var() - 1 / 12) < 0.005
    v = np.asarray(jr.uniform(jr.key(2), (10_000,), minval=-3.0, maxval=-1.0))
    assert v.min() >= -3.0 and v.max() < -1.0


def test_normal_mean_and_std():
    z = np.asarray(jr.normal(jr.key(2), (100_000,)))
    assert np.all(np.isfinite(z))
    assert abs(z.mean()) < 0.02
    assert abs(z.std() - 1.0) < 0.02
    assert abs(np.mean(np.abs(z) < 1.0) - 0.6827) < 0.01


def test_randint_range_and_frequencies():
    r = np.asarray(jr.randint(jr.key(3), (20_000,), -2, 3))
    assert r.min() == -2 and r.max() == 2
    np.testing.assert_allclose(np.bincount(r + 2) / r.size, 0.2, atol=0.02)


def test_bernoulli_frequency():
    b = np.asarray(jr.bernoulli(jr.key(4), 0.3, (20_000,)))
    assert abs(b.mean() - 0.3) < 0.02


def test_permutation_is_a_permutation():
    key = jr.key(9)
    p = np.asarray(jr.permutation(key, 50))
    assert sorted(p.tolist()) == list(range(50))
    assert p.tolist() != list(range(50))
    x = jnp.arange(12.0).reshape(3, 4)
    shuffled = np.asarray(jr.permutation(key, x, axis=1))
    # Columns are moved as a whole.
    assert sorted(shuffled[0].tolist()) == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(shuffled[1] - shuffled[0], 4.0)


def test_categorical_frequencies_follow_softmax():
    logits = np.log(np.array([0.1, 0.2, 0.7], np.float32))
    samples = np.asarray(jr.categorical(jr.key(6), jnp.asarray(logits), shape=(20_000,)))
    np.testing.assert_allclose(np.bincount(samples, minlength=3) / samples.size,
                               [0.1, 0.2, 0.7], atol=0.02)


def test_the_default_dtypes_warn_of_nothing_without_x64():
    """The defaults are 64-bit types canonicalized (uint64 to uint32...): asking for them
    is not the user's request for a 64-bit type, so no x64 warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        key = jr.key(0)
        assert jr.bits(key, (2,)).dtype == np.uint32
        assert jr.uniform(key, (2,)).dtype == np.float32
        assert jr.randint(key, (2,), 0, 3).dtype == np.int32
        assert jr.normal(key).dtype == jr.gumbel(key).dtype == np.float32
