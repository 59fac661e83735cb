"""``jax.random``'s distributions against JAX 0.10.2 itself: same key, shape and dtype.

Integer results (poisson, rademacher, geometric, choice's indices) must be identical. Float
results are JAX's algorithm on the same threefry bits; they agree to a few ulps, because
XLA's log, exp, pow and erf_inv round differently from NumPy's in the last bit (the same
tolerance test_random.py gives ``normal``). A rejection sampler would draw differently if
such a last bit flipped an acceptance; the sizes below check that this stays rare (never, on
these keys). Then the laws: jit equals eager, vmap over keys equals a loop, sharded equals
unsharded, on stage 4 (the whole API).
"""

import contextlib

import numpy as np
import pytest

jax_ = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
import stage4_sharding.numpy as jnp  # noqa: E402

import stage4_sharding as ours  # noqa: E402

SEEDS = [0, 1, 42, 2**31 + 5]


def _both(name, seed, *args, **kwargs):
    mine = getattr(ours.random, name)(ours.random.key(seed), *args, **kwargs)
    theirs = getattr(jax_.random, name)(jax_.random.key(seed), *args, **kwargs)
    return np.asarray(mine), np.asarray(theirs)


def _close(mine, theirs, rtol=2e-6, atol=1e-7):
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=atol)


FLOAT_CASES = [
    ("exponential", ((5, 7),), {}),
    ("laplace", ((40,),), {}),
    ("logistic", ((40,),), {}),
    ("cauchy", ((40,),), {"dtype": np.float32}),
    ("maxwell", ((6,),), {}),
    ("pareto", (3.0, (30,)), {}),
    ("weibull_min", (2.0, 1.5, (30,)), {}),
    ("rayleigh", (2.0, (30,)), {}),
    ("lognormal", (0.5, (30,)), {}),
    ("gamma", (np.array([0.05, 0.5, 1.0, 2.5, 30.0], np.float32), (6, 5)), {}),
    ("loggamma", (np.array([0.01, 0.3, 4.0], np.float32), (4, 3)), {}),
    ("beta", (0.7, 2.0, (40,)), {}),
    ("dirichlet", (np.array([0.5, 1.0, 3.0], np.float32), (8,)), {}),
    ("t", (3.0, (30,)), {}),
    ("chisquare", (4.0, (30,)), {}),
    ("f", (3.0, 7.0, (30,)), {}),
    ("double_sided_maxwell", (1.0, 2.0, (12,)), {}),
    ("normal", ((4, 5),), {"dtype": np.complex64}),  # real and imaginary parts from 2 keys
]


@pytest.mark.parametrize("name, args, kwargs", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
@pytest.mark.parametrize("seed", SEEDS)
def test_float_samplers_follow_jax(name, args, kwargs, seed):
    mine, theirs = _both(name, seed, *args, **kwargs)
    # cauchy's tan near +-pi/2 magnifies a last-bit difference in the uniform draw.
    _close(mine, theirs, rtol=1e-4 if name in ("cauchy", "f", "t") else 3e-5, atol=1e-6)


@pytest.mark.parametrize("lam", [0.0, 0.5, 4.0, 9.99, 10.0, 37.5, 1e3])
@pytest.mark.parametrize("seed", SEEDS)
def test_poisson_is_bit_exact(lam, seed):
    mine, theirs = _both("poisson", seed, lam, (64,))
    assert mine.dtype == theirs.dtype == np.int32
    np.testing.assert_array_equal(mine, theirs)


def test_poisson_of_mixed_rates_and_nan_is_bit_exact():
    lam = np.array([0.0, 1.0, 5.0, 12.0, 50.0, np.nan, 9.0, 300.0], np.float32)
    mine, theirs = _both("poisson", 3, lam)
    np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_samplers_are_bit_exact(seed):
    for name, args in [("rademacher", ((50,),)), ("geometric", (0.3, (50,)))]:
        mine, theirs = _both(name, seed, *args)
        assert mine.dtype == theirs.dtype
        np.testing.assert_array_equal(mine, theirs)


CHOICE_CASES = [
    (10, (5,), True, None, 0),
    (10, (3, 2), False, None, 0),
    (np.arange(12.0, dtype=np.float32).reshape(3, 4), (2,), True, None, 1),
    (np.arange(12, dtype=np.int32).reshape(4, 3), (3,), False, None, 0),
    (5, (7,), True, np.array([0.1, 0.2, 0.3, 0.0, 0.4], np.float32), 0),
    (5, (3,), False, np.array([0.1, 0.2, 0.3, 0.0, 0.4], np.float32), 0),
]


@pytest.mark.parametrize("a, shape, replace, p, axis", CHOICE_CASES)
@pytest.mark.parametrize("seed", SEEDS)
def test_choice_is_bit_exact(a, shape, replace, p, axis, seed):
    mine, theirs = _both("choice", seed, a, shape, replace, p, axis)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_array_equal(mine, theirs)


def test_truncated_normal_follows_jax():
    mine, theirs = _both("truncated_normal", 0, -1.0, np.array([0.5, 2.0, 4.0], np.float32),
                         (10, 3))
    _close(mine, theirs, rtol=1e-5, atol=1e-6)
    assert (mine > -1.0).all() and (mine < np.array([0.5, 2.0, 4.0])).all()


def test_multivariate_normal_follows_jax():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]], np.float32)
    mean = np.array([1.0, -1.0], np.float32)
    for method in ("cholesky", "eigh", "svd"):
        mine, theirs = _both("multivariate_normal", 0, mean, cov, (5,), method=method)
        _close(mine, theirs, rtol=1e-4, atol=1e-5)


def test_x64_gamma_and_exponential_follow_jax():
    ours.config.update("jax_enable_x64", True)
    jax_.config.update("jax_enable_x64", True)
    try:
        for name, args in [("gamma", (2.5, (20,))), ("exponential", ((20,),)),
                           ("poisson", (4.0, (20,)))]:
            mine, theirs = _both(name, 7, *args)
            assert mine.dtype == theirs.dtype
            np.testing.assert_allclose(mine, theirs, rtol=1e-12)
    finally:
        ours.config.update("jax_enable_x64", False)
        jax_.config.update("jax_enable_x64", False)


BIT_EXACT_CALLS = [
    "uniform(k, (9,))", "randint(k, (9,), 0, 10)", "randint(k, (9,), -7, 1000)", "bits(k, (5,))",
    "choice(k, 5, (3,))", "permutation(k, 6)", "bernoulli(k, 0.3, (8,))",
    "permutation(k, jnp.arange(12).reshape(3, 4), axis=1, independent=True)",
    "permutation(k, jnp.arange(12.0).reshape(4, 3), independent=True)",
    "categorical(k, jnp.zeros(4))", "bits(k, (5,), jnp.uint8)", "bits(k, (5,), jnp.uint16)",
    "uniform(k, (9,), jnp.float16)", "uniform(k, (9,), jnp.bfloat16)",
    "randint(k, (9,), 0, 5, jnp.int8)", "randint(k, (9,), 0, 300, jnp.int8)",
    "randint(k, (9,), -100, 300, jnp.int16)", "randint(k, (9,), -3, 256, jnp.uint8)"]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("call", BIT_EXACT_CALLS)
def test_default_and_narrow_dtypes_are_bit_exact(call, x64):
    """With x64 the defaults are 64-bit (float, int, and bits' uint64); 8- and 16-bit bits
    are the low bits of a 32-bit word; bfloat16's uniform takes its 7 mantissa bits from a
    byte; narrow randint draws int32 between clipped bounds. All as JAX, to the bit."""
    ours.config.update("jax_enable_x64", x64)
    jax_.config.update("jax_enable_x64", x64)
    try:
        mine = eval(f"r.{call}", {"r": ours.random, "k": ours.random.key(5), "jnp": jnp})
        theirs = eval(f"r.{call}", {"r": jax_.random, "k": jax_.random.key(5), "jnp": jjnp})
        mine, theirs = np.asarray(mine), np.asarray(theirs)
    finally:
        ours.config.update("jax_enable_x64", False)
        jax_.config.update("jax_enable_x64", False)
    assert mine.dtype == theirs.dtype
    np.testing.assert_array_equal(mine, theirs)


# ------------------------------------------------------------------------------------------
# Laws: jit == eager, vmap == loop, sharded == unsharded; gradients agree with JAX's
# ------------------------------------------------------------------------------------------


def _sample_all(key, a):
    r = ours.random
    k = r.split(key, 4)
    return (r.gamma(k[0], a), r.poisson(k[1], a * 3.0), r.beta(k[2], a, 2.0),
            r.exponential(k[3], (3,)))


def test_jit_equals_eager_with_traced_parameters():
    key, a = ours.random.key(3), jnp.asarray(np.array([0.4, 1.5, 7.0], np.float32))
    eager = _sample_all(key, a)
    jitted = ours.jit(_sample_all)(key, a)
    for x, y in zip(eager, jitted):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_vmap_over_keys_equals_a_loop():
    keys = ours.random.split(ours.random.key(5), 3)
    a = jnp.asarray(np.array([0.4, 1.5, 7.0], np.float32))
    batched = ours.vmap(_sample_all, in_axes=(0, None))(keys, a)
    for i in range(3):
        for x, y in zip(batched, _sample_all(keys[i], a)):
            np.testing.assert_array_equal(np.asarray(x)[i], np.asarray(y))


def test_vmap_of_poisson_matches_jax_vmap():
    keys = [ours.random.split(ours.random.key(9), 4), jax_.random.split(jax_.random.key(9), 4)]
    mine = ours.vmap(lambda k: ours.random.poisson(k, 20.0, (16,)))(keys[0])
    theirs = jax_.vmap(lambda k: jax_.random.poisson(k, 20.0, (16,)))(keys[1])
    np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


def test_sharded_gamma_equals_unsharded():
    from stage4_sharding.sharding import NamedSharding, P
    mesh = ours.make_mesh((8,), ("d",))
    a = np.linspace(0.3, 5.0, 16).astype(np.float32)
    sharded_a = ours.device_put(jnp.asarray(a), NamedSharding(mesh, P("d")))
    f = ours.jit(lambda k, a: ours.random.gamma(k, a))
    np.testing.assert_array_equal(np.asarray(f(ours.random.key(1), sharded_a)),
                                  np.asarray(ours.random.gamma(ours.random.key(1), a)))


def test_gamma_gradient_matches_jax():
    a = np.array([0.3, 1.0, 4.0], np.float32)
    mine = ours.grad(lambda a: ours.random.gamma(ours.random.key(2), a).sum())(jnp.asarray(a))
    theirs = jax_.grad(lambda a: jax_.random.gamma(jax_.random.key(2), a).sum())(jjnp.asarray(a))
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-4)
    mine = ours.grad(lambda a: ours.random.loggamma(ours.random.key(2), a).sum())(jnp.asarray(a))
    theirs = jax_.grad(lambda a: jax_.random.loggamma(jax_.random.key(2), a).sum())(
        jjnp.asarray(a))
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-4)


def test_truncated_normal_gradient_in_its_bounds_matches_jax():
    """Its samples are clipped inside the bounds by nextafter, which has no derivative, of
    the bounds under stop_gradient; grad raised NotImplementedError here once, because the
    tape recorded stop_gradient's result as a value that gradients flow through."""
    def f(lib):
        return lambda b: lib.random.truncated_normal(lib.random.key(4), -b, 2.0 * b, (5,)).sum()
    for b in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(np.asarray(ours.grad(f(ours))(np.float32(b))),
                                   np.asarray(jax_.grad(f(jax_))(np.float32(b))), rtol=1e-4)


# ------------------------------------------------------------------------------------------
# triangular, wald, generalized_normal, ball, binomial, multinomial; the modes of bernoulli,
# gumbel, categorical and choice; categorical without replacement; key_impl, key_dtype, clone
# ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _x64(enabled):
    """jax_enable_x64 set in both libraries for the block, and off again after it."""
    ours.config.update("jax_enable_x64", enabled)
    jax_.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        ours.config.update("jax_enable_x64", False)
        jax_.config.update("jax_enable_x64", False)


def _call_both(call, seed=5):
    """``call`` (text over ``r``, ``k``, ``np``, ``jnp``) in both libraries, with weak types."""
    mine = eval(f"r.{call}", {"r": ours.random, "k": ours.random.key(seed), "np": np, "jnp": jnp})
    theirs = eval(f"r.{call}", {"r": jax_.random, "k": jax_.random.key(seed), "np": np,
                                "jnp": jjnp})
    assert getattr(mine, "weak_type", False) == theirs.weak_type, call
    return np.asarray(mine), np.asarray(theirs)


F32 = "np.float32"
NEW_BIT_EXACT_CALLS = [
    # the same uniforms and the same IEEE operations (+, *, /, sqrt, floor, comparisons)
    "triangular(k, 0.0, 1.0, 3.0, (200,))",
    f"triangular(k, np.array([0.0, 1.0], {F32}), 1.5, 3.0, (4, 2))",
    "triangular(k, 0, 2, 5)",
    "bernoulli(k, 0.3, (300,), mode='high')", "bernoulli(k, 1e-9, (300,), mode='high')",
    f"bernoulli(k, np.array([0.1, 0.5, 0.9], {F32}), (4, 3), mode='high')",
    "bernoulli(k, jnp.float16(0.3), (50,), mode='high')",
    f"categorical(k, np.linspace(0, 1, 15).reshape(3, 5).astype({F32}), 1, (4, 3))",
    f"categorical(k, np.linspace(0, 1, 15).reshape(3, 5).astype({F32}), 0, (2, 5))",
    f"categorical(k, np.linspace(0, 1, 5).reshape(1, 5).astype({F32}), 1, (2, 4))",
    f"categorical(k, np.linspace(0, 1, 15).reshape(3, 5).astype({F32}), 1, (4, 3), False)",
    f"categorical(k, np.linspace(0, 1, 15).reshape(3, 5).astype({F32}), 0, (3, 5), False, "
    "'high')",
    f"categorical(k, np.zeros(7, {F32}), shape=(7,), replace=False, mode='highest')",
    f"categorical(k, np.zeros((2, 6), {F32}), mode='high')",
    f"choice(k, 6, (4,), False, np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.1], {F32}), mode='high')",
    f"choice(k, 6, (4,), False, np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.1], {F32}), mode='low')",
    "choice(k, 6, (4,), mode='high')",
    # the binomial loops: their counts are exact, whatever the rounding of logs
    "binomial(k, 10, 0.3, (300,))", "binomial(k, 100, 0.3, (300,))",
    "binomial(k, 1000, 0.7, (300,))", "binomial(k, 10.0, 0.5)",
    f"binomial(k, np.array([0, 1, 5, 30, 200, np.nan, -1, np.inf, 12.5], {F32}), "
    f"np.array([0.5, 0.2, 0.9, 0.4, 0.05, 0.3, 0.3, 0.3, 0.6], {F32}))",
    f"binomial(k, 20, np.array([0.0, 1.0, 0.5, np.nan, -0.1, 1.2], {F32}))",
    "binomial(k, np.array([5, 50]), 0.4, (3, 2))",
    f"multinomial(k, 10, np.array([0.2, 0.3, 0.5], {F32}))",
    f"multinomial(k, np.array([10.0, 200.0], {F32}), np.array([0.1, 0.2, 0.3, 0.4], {F32}), "
    "shape=(2, 4))",
    f"multinomial(k, 50, np.array([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0]], {F32}), dtype=jnp.int32)",
]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("call", NEW_BIT_EXACT_CALLS)
@pytest.mark.parametrize("seed", [0, 42])
def test_new_samplers_are_bit_exact(call, seed, x64):
    """Dtypes, shapes, weak types and every bit, with x64 off and on (64-bit defaults)."""
    with _x64(x64):
        mine, theirs = _call_both(call, seed)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_array_equal(mine, theirs)


NEW_CLOSE_CALLS = [
    # Each applies log, log1p or pow, whose last bit XLA rounds differently from NumPy; a
    # sample then differs by a few float32 ulps, up to 40 for wald (its root subtracts
    # nearly equal terms), and by 5e-7 in absolute terms near 0 for gumbel.
    ("wald(k, 1.0, (300,))", 1e-5), (f"wald(k, np.array([[0.5], [3.0]], {F32}), (2, 5))", 1e-5),
    ("generalized_normal(k, 1.5, (300,))", 2e-6),
    (f"generalized_normal(k, np.array([1.0, 2.0, 3.0], {F32}), (2, 3))", 2e-6),
    ("generalized_normal(k, 0.7, (300,))", 2e-6),
    ("ball(k, 3, 2, (100,))", 2e-6), ("ball(k, 5, 1.5, (10,))", 2e-6),
    ("gumbel(k, (300,), mode='high')", 2e-6), ("gumbel(k, (300,), mode='highest')", 2e-6),
    ("gumbel(k, (300,), jnp.float16, mode='high')", 2e-3),
    ("gumbel(k, (300,), jnp.bfloat16, mode='highest')", 1e-2),
]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("call, rtol", NEW_CLOSE_CALLS, ids=[c for c, _ in NEW_CLOSE_CALLS])
@pytest.mark.parametrize("seed", [0, 42])
def test_new_float_samplers_follow_jax(call, rtol, seed, x64):
    with _x64(x64):
        mine, theirs = _call_both(call, seed)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_allclose(mine.astype(float), theirs.astype(float), rtol=rtol,
                               atol=rtol / 4)


NEW_ERROR_CALLS = [
    "triangular(k, 0.0, 1.0, 2.0, dtype=jnp.int32)", "triangular(k, jnp.zeros(3), 1.0, 2.0, (2,))",
    "wald(k, 1.0, dtype=jnp.int32)", "wald(k, jnp.ones(3), (3, 2))",
    "ball(k, 3.5)", "binomial(k, 10, 0.3, dtype=jnp.int32)", "binomial(k, jnp.ones(3), 0.5, (2,))",
    "bernoulli(k, 1)", "bernoulli(k, 0.5, (3,), mode='x')", "bernoulli(k, jnp.ones(3) / 2, (2,))",
    "gumbel(k, (2,), mode='x')", "gumbel(k, (2,), jnp.int32)",
    "categorical(k, jnp.zeros((2, 5)), shape=(6, 2), replace=False)",
    "choice(k, 5, (3,), False, jnp.ones(5) / 5, mode='x')",
    "key_impl(jnp.zeros(3))", "key_dtype('foo')", "key_dtype(3)",
]


@pytest.mark.parametrize("call", NEW_ERROR_CALLS)
def test_new_errors_are_jaxs(call):
    """The same exception type; a float64 parameter with a float32 dtype (x64 on) is a
    ValueError in both (JAX's TypePromotionError is one)."""
    errors = []
    for r, np_ in ((ours.random, jnp), (jax_.random, jjnp)):
        with pytest.raises(Exception) as info:
            eval(f"r.{call}", {"r": r, "k": r.key(0), "jnp": np_})
        errors.append(info.type)
    assert issubclass(errors[0], errors[1]) or issubclass(errors[1], errors[0]), errors


def test_unsafe_parameter_casts_are_refused_as_in_jax():
    with _x64(True):
        for r, np_ in ((ours.random, jnp), (jax_.random, jjnp)):
            with pytest.raises(ValueError, match="cannot safely cast"):
                r.triangular(r.key(0), np_.zeros(3), 1.0, 2.0, dtype=np_.float32)
            with pytest.raises(ValueError, match="cannot safely cast"):
                r.wald(r.key(0), np_.ones(3), dtype=np_.float32)


def test_key_impl_key_dtype_and_clone():
    for r in (ours.random, jax_.random):
        assert r.key_impl(r.key(0)) == r.key_impl(r.PRNGKey(0)) == "threefry2x32"
        assert r.key_impl(r.split(r.key(0), 3)) == "threefry2x32"
        assert str(r.key_dtype()) == str(r.key_dtype("threefry2x32")) == "key<fry>"
        assert r.key_dtype(r.key_dtype()) == r.key(0).dtype
        np.testing.assert_array_equal(np.asarray(r.key_data(r.clone(r.key(3)))),
                                      np.asarray(r.key_data(r.key(3))))
    with pytest.raises(NotImplementedError, match="only 'threefry2x32'"):
        ours.random.key_dtype("rbg")  # JAX has it; we have one implementation


def _new_samplers(key, x):
    r = ours.random
    k = r.split(key, 8)
    return (r.triangular(k[0], 0.0, x, 2.0), r.wald(k[1], x), r.generalized_normal(k[2], 1.5, (3,)),
            r.ball(k[3], 3, 2.0, (2,)), r.bernoulli(k[4], x / 2, mode="high"),
            r.gumbel(k[5], (3,), mode="highest"),
            r.categorical(k[6], jnp.stack([x, 2 * x]), axis=0, shape=(2, 3), replace=False),
            r.choice(k[7], 3, (2,), False, x / x.sum(), mode="high"))


def test_new_samplers_under_jit_and_vmap_give_the_eager_samples():
    key, x = ours.random.key(3), jnp.asarray(np.array([0.4, 1.5, 1.9], np.float32))
    eager = _new_samplers(key, x)
    for a, b in zip(eager, ours.jit(_new_samplers)(key, x)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    keys = ours.random.split(key, 3)
    batched = ours.vmap(_new_samplers, in_axes=(0, None))(keys, x)
    for i in range(3):
        for a, b in zip(batched, _new_samplers(keys[i], x)):
            np.testing.assert_array_equal(np.asarray(a)[i], np.asarray(b))


@pytest.mark.parametrize("sampler", ["binomial", "multinomial"])
def test_binomial_and_multinomial_under_jit_and_vmap_are_jaxs(sampler):
    """Their loops run eagerly, and under jit or vmap as stage 2's while_loop: JAX's bits."""
    args = (np.array([5.0, 50.0, 1000.0], np.float32), np.float32(0.3)) if (
        sampler == "binomial") else (10.0, np.array([0.2, 0.3, 0.5], np.float32))
    results = []
    for lib in (ours, jax_):
        def f(k, lib=lib):
            return getattr(lib.random, sampler)(k, *args)
        keys = lib.random.split(lib.random.key(0), 3)
        results.append([f(keys[0]), lib.jit(f)(keys[0]), lib.vmap(f)(keys)])
    for mine, theirs in zip(*results):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


def test_binomial_and_multinomial_gradients_are_jaxs_zeros():
    """The counts are piecewise constant in n and p (floors and comparisons): under grad
    (where the loops still run, the values being known) and jvp, zeros, as JAX's."""
    p = np.array([0.2, 0.8], np.float32)
    for lib in (ours, jax_):
        r = lib.random
        grads = [lib.grad(lambda q: r.binomial(r.key(0), 10.0, q, (3,)).sum())(0.3),
                 lib.grad(lambda n: r.binomial(r.key(0), n, 0.7, (3,)).sum())(40.0),
                 lib.grad(lambda q: r.multinomial(r.key(0), 10.0, q).sum())(p)]
        for g in grads:
            np.testing.assert_array_equal(np.asarray(g), 0.0)
    mine = ours.jvp(lambda q: ours.random.multinomial(ours.random.key(0), 10.0, q), (p,),
                    (np.ones(2, np.float32),))
    theirs = jax_.jvp(lambda q: jax_.random.multinomial(jax_.random.key(0), 10.0, q), (p,),
                      (np.ones(2, np.float32),))
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("sampler, args", [("triangular", (0.0, 0.5, 1.0)), ("wald", (1.0,)),
                                           ("generalized_normal", (2.0,)), ("ball", (3,))])
def test_new_samplers_take_out_sharding(sampler, args):
    """Stage 4 lays their samples out as asked, with JAX's values and layout."""
    from stage4_sharding.sharding import NamedSharding, PartitionSpec
    results = []
    for lib, module in ((ours, NamedSharding), (jax_, jax_.sharding.NamedSharding)):
        mesh = lib.make_mesh((8,), ("d",))
        spec = PartitionSpec("d") if lib is ours else jax_.sharding.PartitionSpec("d")
        with lib.sharding.set_mesh(mesh):
            results.append(getattr(lib.random, sampler)(
                lib.random.key(0), *args, shape=(16,), out_sharding=module(mesh, spec)))
    mine, theirs = results
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-5)
    assert mine.sharding.spec[0] == theirs.sharding.spec[0] == "d"
    assert not any(mine.sharding.spec[1:]) and not any(theirs.sharding.spec[1:])



@contextlib.contextmanager
def _original_threefry(x64):
    """jax_threefry_partitionable off (JAX's original scheme) in both libraries."""
    names = ("jax_threefry_partitionable", "jax_enable_x64")
    before = [(getattr(ours.config, n), jax_.config.values[n]) for n in names]
    for lib in (ours, jax_):
        lib.config.update("jax_threefry_partitionable", False)
        lib.config.update("jax_enable_x64", x64)
    try:
        yield
    finally:
        for n, (mine, theirs) in zip(names, before):
            ours.config.update(n, mine)
            jax_.config.update(n, theirs)


ORIGINAL_SCHEME = {
    "split 3": lambda r, k: r.key_data(r.split(k, 3)),
    "split (2, 3)": lambda r, k: r.key_data(r.split(k, (2, 3))),
    "fold_in": lambda r, k: r.key_data(r.fold_in(k, 7)),
    **{f"bits {np.dtype(dt).name} {shape}": (lambda r, k, dt=dt, shape=shape: r.bits(k, shape, dt))
       for dt in (np.uint8, np.uint16, np.uint32) for shape in ((), (1,), (5,), (3, 3), (8,))},
    "uniform": lambda r, k: r.uniform(k, (7,)),
    "randint": lambda r, k: r.randint(k, (5,), 0, 100),
    "permutation": lambda r, k: r.permutation(k, 6),
    "bernoulli": lambda r, k: r.bernoulli(k, 0.3, (9,)),
}


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", ORIGINAL_SCHEME)
def test_the_original_threefry_scheme_is_bit_exact(name, x64):
    """jax_threefry_partitionable=False: JAX's original scheme, which programs that must
    reproduce older random numbers set; the same bits, eager and under jit."""
    call = ORIGINAL_SCHEME[name]
    with _original_threefry(x64):
        theirs = np.asarray(call(jax_.random, jax_.random.key(42)))
        mine = np.asarray(call(ours.random, ours.random.key(42)))
        jitted = np.asarray(ours.jit(lambda k: call(ours.random, k))(ours.random.key(42)))
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(jitted, theirs)
    default = np.asarray(call(ours.random, ours.random.key(42)))  # the option back on
    np.testing.assert_array_equal(default, np.asarray(call(jax_.random, jax_.random.key(42))))


def test_64_bit_words_in_the_original_scheme_are_bit_exact():
    with _original_threefry(True):
        for shape in ((), (3,), (2, 2)):
            mine, theirs = _both("bits", 42, shape, np.uint64)
            np.testing.assert_array_equal(mine, theirs)
