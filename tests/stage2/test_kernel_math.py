"""The scalar functions generated kernels call: accuracy in ulps against float64 NumPy,
special values, and NaN propagation. Each is run over arrays by one small compiled loop."""

import numpy as np
import pytest
from llvmlite import binding
from numba import njit

from stage2_jit import kernel_math as km


@njit(cache=True)
def _map_exp(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = km.exp_f32(x[i])
    return out


@njit(cache=True)
def _map_tanh(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = km.tanh_f32(x[i])
    return out


@njit(cache=True)
def _map_logistic(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = km.logistic_f32(x[i])
    return out


@njit(cache=True)
def _reduce(x):
    total, largest, smallest = np.float32(0), np.float32(-np.inf), np.float32(np.inf)
    for i in range(x.size):
        total = km.add_reassoc(total, x[i])
        largest = km.max_reassoc(largest, x[i])
        smallest = km.min_reassoc(smallest, x[i])
    return total, largest, smallest


@njit(cache=True)
def _pairwise(a, b):
    out = np.empty((2, a.size), dtype=a.dtype)
    for i in range(a.size):
        out[0, i] = km.maximum(a[i], b[i])
        out[1, i] = km.minimum(a[i], b[i])
    return out


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the float32 spacing at ``exact``."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def test_exp_is_within_two_ulps_over_the_normal_range():
    x = np.random.default_rng(0).uniform(-87.0, 88.5, 500_000).astype(np.float32)
    x = np.concatenate([x, np.linspace(-1, 1, 100_001, dtype=np.float32)])
    assert _ulps(_map_exp(x), np.exp(x.astype(np.float64))).max() <= 2.0


def test_exp_special_values_overflow_and_denormals():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, 88.8, 100.0, -90.0, -103.0, -200.0],
                 dtype=np.float32)
    got = _map_exp(x)
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0.0 and got[3] == 1.0
    assert got[4] == np.inf and got[5] == np.inf  # past float32's largest value
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x[6:].astype(np.float64)).astype(np.float32)
    # Denormal results keep their (reduced) precision; far below them the result is 0.
    np.testing.assert_allclose(got[6:], want, rtol=1e-5, atol=2e-45)
    assert got[-1] == 0.0


def test_tanh_is_within_two_ulps_and_saturates():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-10, 10, 500_000), np.linspace(-1, 1, 100_001),
                        [1e-30, -1e-30, 0.625, -0.625, 0.62499]]).astype(np.float32)
    exact = np.tanh(x.astype(np.float64))
    nonzero = exact != 0
    assert _ulps(_map_tanh(x)[nonzero], exact[nonzero]).max() <= 2.0
    got = _map_tanh(np.array([np.nan, np.inf, -np.inf, 30.0, -30.0], dtype=np.float32))
    assert np.isnan(got[0]) and list(got[1:]) == [1.0, -1.0, 1.0, -1.0]


def test_logistic_matches_float64_reference():
    x = np.random.default_rng(2).uniform(-30, 30, 200_000).astype(np.float32)
    exact = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(_map_logistic(x), exact, rtol=3e-7, atol=1e-30)


def test_reductions_agree_with_numpy_and_propagate_nan():
    x = np.random.default_rng(3).standard_normal(10_001).astype(np.float32)
    total, largest, smallest = _reduce(x)
    np.testing.assert_allclose(total, x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    assert largest == x.max() and smallest == x.min()
    x[5000] = np.nan
    assert all(np.isnan(v) for v in _reduce(x)[1:])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_maximum_and_minimum_propagate_nan_like_numpy(dtype):
    a = np.array([1.0, np.nan, 2.0, -np.inf, 3.0], dtype=dtype)
    b = np.array([2.0, 1.0, np.nan, 0.0, 3.0], dtype=dtype)
    got = _pairwise(a, b)
    np.testing.assert_array_equal(got[0], np.maximum(a, b))
    np.testing.assert_array_equal(got[1], np.minimum(a, b))


@njit(cache=True)
def _map_log(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = km.log_f32(x[i])
    return out


def test_log_is_within_one_ulp_for_every_kind_of_positive_float():
    """Random bit patterns cover every binade, denormals included; the values near 1 are
    where ln x is small and a careless formula loses digits. (Over all 2**31 positive
    floats the largest error is 0.92 ulp.)"""
    rng = np.random.default_rng(0)
    x = rng.integers(1, 0x7F800000, 2_000_000, dtype=np.int32).view(np.float32)
    near_one = np.float32(1.0) + rng.uniform(-0.3, 0.42, 200_000).astype(np.float32)
    x = np.concatenate([x, near_one[near_one != 1.0]])
    assert _ulps(_map_log(x), np.log(x.astype(np.float64))).max() <= 1.0


def test_log_special_values():
    x = np.array([0.0, -0.0, -1e-45, -1.0, -np.inf, np.inf, np.nan, 1.0, 1e-45], np.float32)
    got = _map_log(x)
    np.testing.assert_array_equal(got[:7], [-np.inf, -np.inf, np.nan, np.nan, np.nan, np.inf,
                                            np.nan])
    assert got[7] == 0.0 and not np.signbit(got[7])
    assert got[8] == np.float32(np.log(np.float64(np.float32(1e-45))))


HAS_AVX512 = bool(binding.get_host_cpu_features().get("avx512f"))


def test_a_users_cpu_features_win_over_the_512_bit_preference(monkeypatch):
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2")
    monkeypatch.setattr(km.config, "CPU_FEATURES", "+avx2")
    assert not km.prefer_512_bit_vectors()
    assert km.config.CPU_FEATURES == "+avx2"


@pytest.mark.skipif(not HAS_AVX512, reason="the CPU has no AVX-512")
def test_on_a_cpu_with_avx512_the_host_features_lose_only_the_256_bit_preference(monkeypatch):
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    monkeypatch.setattr(km.config, "CPU_FEATURES", None)
    monkeypatch.setattr(km.config, "ENABLE_AVX", True)
    assert km.prefer_512_bit_vectors()
    features = km.config.CPU_FEATURES.split(",")
    assert features[-1] == "-prefer-256-bit" and "+avx512f" in features
    monkeypatch.setattr(km.config, "ENABLE_AVX", False)  # NUMBA_ENABLE_AVX=0 wins too
    monkeypatch.delenv("NUMBA_CPU_FEATURES")
    assert not km.prefer_512_bit_vectors()


@pytest.mark.skipif(not km.PREFERS_512_BIT_VECTORS, reason="512-bit vectors not chosen here")
def test_exp_loops_use_512_bit_registers_when_preferred():
    @njit  # not from the disk cache, whose loaded code has no assembly to inspect
    def exp_loop(x, out):
        for i in range(x.size):
            out[i] = km.exp_f32(x[i])

    values = np.ones(64, np.float32)
    exp_loop(values, np.empty_like(values))
    assembly = next(iter(exp_loop.inspect_asm().values()))
    assert "zmm" in assembly
