"""``jnp.float32`` and friends: usable as dtypes, and callable to make arrays, as in JAX."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .. import dtypes
from .creation import asarray


class ScalarType:
    """A dtype that can be called: ``jnp.float32(1)`` is ``jnp.asarray(1, jnp.float32)``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.float32(1)
        Array(1., dtype=float32)
    """

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)  # np.dtype(jnp.float32) reads this attribute

    def __call__(self, x: Any) -> Any:
        return asarray(x, dtype=self.dtype)

    def __eq__(self, other: object) -> bool:
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return f"jnp.{self.dtype.name}"


bool_ = ScalarType(np.bool_)
int8 = ScalarType(np.int8)
int16 = ScalarType(np.int16)
int32 = ScalarType(np.int32)
uint8 = ScalarType(np.uint8)
uint16 = ScalarType(np.uint16)
uint32 = ScalarType(np.uint32)
float16 = ScalarType(np.float16)
bfloat16 = ScalarType(dtypes.bfloat16)
float8_e4m3fn, float8_e5m2, float8_e4m3, float8_e3m4, float8_e4m3fnuz, float8_e5m2fnuz, \
    float8_e4m3b11fnuz, float8_e8m0fnu, float4_e2m1fn = map(ScalarType, dtypes.NARROW_FLOATS)
float6_e2m3fn = ScalarType(ml_dtypes.float6_e2m3fn)  # (named, as in JAX, and refused: dtypes.py)
float6_e3m2fn = ScalarType(ml_dtypes.float6_e3m2fn)
float32 = ScalarType(np.float32)
complex64 = ScalarType(np.complex64)
int64 = ScalarType(np.int64)
uint64 = ScalarType(np.uint64)
float64 = ScalarType(np.float64)
complex128 = ScalarType(np.complex128)
