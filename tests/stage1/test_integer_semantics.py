"""Integer shifts, division and remainder follow XLA's definitions, checked against a
reference written with Python's unbounded integers on every pair of edge values."""

import itertools

import numpy as np
import pytest

from stage1_autodiff import lax


def _wrap(value: int, dtype: np.dtype) -> int:
    """``value`` reduced to ``dtype``'s range, two's complement."""
    bits = np.iinfo(dtype).bits
    value &= (1 << bits) - 1
    return value - (1 << bits) if np.iinfo(dtype).min < 0 and value >> (bits - 1) else value


def _reference(name: str, x: int, y: int, dtype: np.dtype) -> int:
    bits = np.iinfo(dtype).bits
    pattern = x & ((1 << bits) - 1)  # the bit pattern, as an unsigned number
    in_range = 0 <= y < bits
    if name == "shift_left":
        return _wrap(pattern << y, dtype) if in_range else 0
    if name == "shift_right_logical":
        return _wrap(pattern >> y, dtype) if in_range else 0
    if name == "shift_right_arithmetic":
        top = pattern >> (bits - 1)
        signed = pattern - (top << bits)  # the pattern read as a signed number
        return _wrap(signed >> (y if in_range else bits - 1), dtype)
    if y == 0:
        return _wrap(-1, dtype) if name == "div" else x
    quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # toward zero
    return _wrap(quotient, dtype) if name == "div" else _wrap(x - quotient * y, dtype)


@pytest.mark.parametrize("name", ["shift_left", "shift_right_logical",
                                  "shift_right_arithmetic", "div", "rem"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_integer_ops_follow_xla_definitions(name, dtype, request):
    if np.iinfo(dtype).bits == 64:
        request.getfixturevalue("x64")  # 64-bit integers exist only with jax_enable_x64
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -7, -1, 0, 1, 2, 7, 31, 32, 33, 63, 64, 2**53 + 1,
              info.max - 1, info.max]
    values = [v for v in values if info.min <= v <= info.max]
    pairs = list(itertools.product(values, values))
    x = np.array([a for a, _ in pairs], dtype=dtype)
    y = np.array([b for _, b in pairs], dtype=dtype)
    got = np.asarray(getattr(lax, name)(x, y))
    want = np.array([_reference(name, a, b, dtype) for a, b in pairs], dtype=dtype)
    wrong = np.flatnonzero(got != want)
    assert not wrong.size, [(pairs[i], got[i], want[i]) for i in wrong[:5]]
