"""The math a kernel sees under Numba's CUDA simulator (``cuda_simulator.IEEE_MATH``): Python's
values where Python gives one, and the GPU's IEEE value where Python's ``math`` raises."""

import math

import numpy as np
import pytest
from stage2_jit.cuda_simulator import IEEE_MATH


@pytest.mark.parametrize("name, args, expected", [
    ("exp", (1000.0,), math.inf), ("expm1", (1000.0,), math.inf), ("cosh", (-1000.0,), math.inf),
    ("sinh", (-1000.0,), -math.inf), ("log", (0.0,), -math.inf), ("log", (-1.0,), math.nan),
    ("log1p", (-1.0,), -math.inf), ("sqrt", (-1.0,), math.nan), ("sin", (math.inf,), math.nan),
    ("acosh", (0.5,), math.nan), ("atanh", (1.0,), math.inf), ("pow", (10.0, 400.0), math.inf),
    ("fmod", (math.inf, 2.0), math.nan), ("lgamma", (0.0,), math.inf),
])
def test_where_pythons_math_raises_the_gpus_value_is_given(name, args, expected):
    with pytest.raises((ValueError, OverflowError)):
        getattr(math, name)(*args)
    got = getattr(IEEE_MATH, name)(*args)
    assert got == expected or (math.isnan(expected) and math.isnan(got))


@pytest.mark.parametrize("name", ["exp", "log", "sin", "sqrt", "tanh", "erf", "floor"])
def test_elsewhere_it_is_pythons_math(name):
    x = 0.75
    assert getattr(IEEE_MATH, name)(x) == getattr(math, name)(x)
    assert np.float32(getattr(IEEE_MATH, name)(x)) == np.float32(getattr(math, name)(x))
