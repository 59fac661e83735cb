"""The dtypes we support, weak types, and JAX's type-promotion lattice.

A Python scalar has no dtype of its own: it is *weakly typed* and takes the dtype of the array
it meets (``float32_array * 2.0`` stays float32). Promotion is the least upper bound on a small
lattice, as in JAX; 64-bit types exist only with ``jax_enable_x64``. Beside the 32-bit types
there are the narrow ones (int8, int16, uint8, uint16, float16 and ml_dtypes' bfloat16, as in
JAX) and complex64 (complex128 with x64).
"""

from __future__ import annotations

import sys
import warnings
from functools import cache, lru_cache
from typing import Any

import ml_dtypes
import numpy as np

from .config import config


class TypePromotionError(ValueError):
    """An operation on arrays of different dtypes while ``jax_numpy_dtype_promotion`` is
    ``'strict'`` (JAX's ``jax.dtypes.TypePromotionError``)."""

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)  # NB: JAX's bfloat16 is this one too (ml_dtypes)
# The narrow floats of machine-learning hardware, from ml_dtypes as JAX's are: each is an
# island of the lattice (below), converted to and from by hand, never promoted to.
# (jnp also names float6_e2m3fn and float6_e3m2fn, which XLA's CPU refuses: so do we.)
NARROW_FLOATS = tuple(np.dtype(getattr(ml_dtypes, name)) for name in (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e8m0fnu", "float4_e2m1fn"))
# Those XLA computes in float16 (the 8-bit ones but float8_e8m0fnu, whose range float16's
# cannot hold); float8_e8m0fnu and float4_e2m1fn are computed in float32 and rounded once.
VIA_FLOAT16 = frozenset(NARROW_FLOATS[:-2])
float32 = np.dtype(np.float32)
complex64 = np.dtype(np.complex64)
int64 = np.dtype(np.int64)
uint64 = np.dtype(np.uint64)
float64 = np.dtype(np.float64)
complex128 = np.dtype(np.complex128)

# The dtype of gradients with respect to integer inputs (``grad(..., allow_int=True)``):
# a dtype with no values, so such a "gradient" cannot be mistaken for a number.
float0 = np.dtype([("float0", np.void, 0)])


def is_float0(x: object) -> bool:
    """Whether ``x`` is a float0 array: a gradient of integers, zeros with no values."""
    return isinstance(x, np.ndarray) and x.dtype == float0


def split_float0(leaves: list) -> tuple[list, dict[int, tuple[int, ...]]]:
    """The leaves that are not float0 arrays, and the position and shape of those that are:
    float0 values carry no numbers, so a traced program leaves them out."""
    zeros = {i: x.shape for i, x in enumerate(leaves) if is_float0(x)}
    return [x for i, x in enumerate(leaves) if i not in zeros], zeros


def with_float0(leaves: list, zeros: dict[int, tuple[int, ...]]) -> list:
    """``split_float0`` undone: the float0 leaves put back as zeros where ``zeros`` says."""
    rest = iter(leaves)
    return [np.zeros(zeros[i], float0) if i in zeros else next(rest)
            for i in range(len(leaves) + len(zeros))]

_X64_ONLY = {int64, uint64, float64, complex128}
_SUPPORTED = (bool_, int8, int16, int32, uint8, uint16, uint32, float16, bfloat16, float32,
              complex64, int64, uint64, float64, complex128, *NARROW_FLOATS)
_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
_IS_SUPPORTED = frozenset(_SUPPORTED)  # a set: ``in`` a tuple costs a comparison per entry
ML_FLOATS = frozenset((bfloat16, *NARROW_FLOATS))  # ml_dtypes' floats: NumPy's kind "V"
_NARROW_SET = ML_FLOATS | {float16}


def default_float_dtype() -> np.dtype:
    return float64 if config.jax_enable_x64 else float32


def default_int_dtype() -> np.dtype:
    return int64 if config.jax_enable_x64 else int32


def default_complex_dtype() -> np.dtype:
    return complex128 if config.jax_enable_x64 else complex64


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """Maps ``dtype`` to one we compute in, or raises for dtypes we do not support.

    Example:
        >>> canonicalize_dtype(np.float64)  # without jax_enable_x64
        dtype('float32')
    """
    dtype = np.dtype(dtype)
    if dtype not in _IS_SUPPORTED:
        names = ", ".join(str(d) for d in _SUPPORTED[:11])
        raise TypeError(
            f"dtype {dtype} is not supported. Supported dtypes are {names}, the 8-bit floats "
            f"(float8_e4m3fn...), and int64, uint64, float64 and complex128 after "
            f"jax.config.update('jax_enable_x64', True). Convert the input first, for example "
            f"with .astype(np.float32).")
    if dtype in _X64_ONLY and not config.jax_enable_x64:
        return _TO_32[dtype]
    return dtype


# Python's own types name "the default" rather than a width: ``dtype=float`` is float32, or
# float64 with jax_enable_x64, and asking for it is never a request for 64 bits.
_PYTHON_TYPES = (bool, int, float, complex)


def check_and_canonicalize_user_dtype(dtype: Any, fun_name: str) -> np.dtype:
    """The dtype that ``fun_name`` computes in when its caller asks for ``dtype``: as
    :func:`canonicalize_dtype`, and a ``UserWarning`` when the request is a 64-bit type that
    jax_enable_x64 being off narrows to 32 bits (data converted without a dtype named is
    narrowed silently, as in JAX).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_and_canonicalize_user_dtype(np.float64, "zeros")
        dtype('float32')
        >>> "float64" in str(caught[0].message)
        True
    """
    canonical = canonicalize_dtype(dtype)
    if isinstance(dtype, type) and dtype in _PYTHON_TYPES:
        return canonical
    requested = np.dtype(dtype)
    if requested != canonical:
        # The message starts as JAX's does, so warning filters written for JAX match it.
        warnings.warn(
            f"Explicitly requested dtype {requested} in {fun_name} is not available without "
            f"jax_enable_x64: the result is {canonical}. Turn 64-bit types on with "
            f"jax.config.update('jax_enable_x64', True) (or JAX_ENABLE_X64=1 in the "
            f"environment) before creating arrays, or ask for {canonical} to silence this.",
            UserWarning, stacklevel=caller_stacklevel())
    return canonical


_OUR_PACKAGES = ("stage1_autodiff", "stage2_jit", "stage3_vmap", "stage4_sharding")


def caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside this project's packages, so that a
    warning names the user's line however deep inside the library it was raised."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_OUR_PACKAGES):
        frame, level = frame.f_back, level + 1
    return level


def convert_values(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``value.astype(dtype)`` with XLA's conversion semantics, which JAX's
    ``convert_element_type`` has on every backend.

    Floats to integers round toward zero and saturate: NaN becomes 0, and a value past the
    integer range (inf too) becomes the nearest end of it. NumPy leaves those to the C cast,
    which is undefined (x86 gives the most negative integer for all of them) and warns.
    Complex to real keeps the real part. Every other conversion is NumPy's: integers wrap, a
    float too large for a narrower float becomes inf, without a warning.

    Example:
        >>> convert_values(np.array([np.nan, np.inf, -1e10, -2.7], np.float32), int32)
        array([          0,  2147483647, -2147483648,          -2], dtype=int32)
    """
    if is_complex(value.dtype) and not is_complex(dtype):
        value = value.real  # complex to real drops the imaginary part, as XLA's convert
    if is_float(value.dtype) and is_int(dtype):
        return _saturating_float_to_int(value, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return value.astype(dtype)


def _saturating_float_to_int(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    value = value.astype(accumulation_dtype(value.dtype))  # (exactly: 2**31 is NaN in 8 bits)
    # Both ends are powers of two (or 0), so exact in float32 and wider: the lowest integer,
    # and one past the highest.
    low = np.array(info.min, value.dtype)
    past_high = np.array(2.0 ** (info.bits - (info.min < 0)), value.dtype)
    inside = (value > low) & (value < past_high)  # False for NaN
    out = np.where(inside, value, 0).astype(dtype)
    out = np.where(value >= past_high, np.array(info.max, dtype), out)
    return np.where(value <= low, np.array(info.min, dtype), out)


def lowest(dtype: np.dtype) -> Any:
    """The smallest value of ``dtype`` (-inf for floats; complex numbers order by their real
    part, then their imaginary part): a max reduction starts from it."""
    if is_float(dtype):
        return -np.inf
    if is_complex(dtype):
        return complex(-np.inf, -np.inf)
    return False if dtype.kind == "b" else np.iinfo(dtype).min


def highest(dtype: np.dtype) -> Any:
    """The largest value of ``dtype`` (inf for floats): a min reduction starts from it."""
    if is_float(dtype):
        return np.inf
    if is_complex(dtype):
        return complex(np.inf, np.inf)
    return True if dtype.kind == "b" else np.iinfo(dtype).max


def is_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a real floating-point type. NumPy calls bfloat16 and the 8-bit
    floats (from ml_dtypes) kind ``V``, so ``dtype.kind == "f"`` misses them: ask this."""
    return dtype.kind == "f" or dtype in ML_FLOATS


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """Float or complex: the types that can be differentiated."""
    return is_float(dtype) or dtype.kind == "c"


def is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def kind(dtype: np.dtype) -> str:
    """``dtype.kind``, but ``f`` for bfloat16 and the 8-bit floats (see :func:`is_float`)."""
    return "f" if dtype in ML_FLOATS else dtype.kind


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of the real (and the imaginary) part: float32 for complex64."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts are ``dtype`` (float64 -> complex128; narrower floats
    -> complex64, the narrowest complex type)."""
    return complex128 if dtype in (float64, complex128) else complex64


# --8<-- [start:lattice]
# Each node lists the nodes directly above it. 'i*', 'f*' and 'c*' are the weakly typed
# Python int, float and complex; the least upper bound of two nodes is the dtype of their sum.
# NB: JAX's lattice is _type_promotion_lattice in jax/_src/dtypes.py (with int4 types we
# leave out). Signed and unsigned ints meet one size up (int8 + uint8 is int16), and the two
# 16-bit floats meet in float32. Each narrow float (float8_e4m3fn...) lies just above the
# weak float and below nothing: it meets only ints, bools and Python scalars, and two of them,
# or one and another float, have no join (a TypePromotionError, as in JAX).
_LATTICE = {
    "b1": ["i*"],
    "i*": ["u8", "i8"],
    "u8": ["i16", "u16"], "u16": ["i32", "u32"], "u32": ["i64", "u64"], "u64": ["f*"],
    "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f*": ["bf16", "f16", "c*", *(d.name for d in NARROW_FLOATS)],
    **{d.name: [] for d in NARROW_FLOATS},
    "bf16": ["f32"], "f16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
    "c*": ["c64"], "c64": ["c128"], "c128": [],
}
# Without x64 no promotion may make a 64-bit type from narrower ones: uint32 and int32 meet
# in int32 (JAX's one change to its lattice for that mode).
_LATTICE_X32 = {**_LATTICE, "u32": ["i32", "u64"]}
_NODE_OF_DTYPE = {bool_: "b1", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
                  uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
                  bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
                  complex64: "c64", complex128: "c128", **{d: d.name for d in NARROW_FLOATS}}
_DTYPE_OF_NODE = {node: dtype for dtype, node in _NODE_OF_DTYPE.items()}


@cache
def _upper_set(node: str, x64: bool) -> frozenset[str]:
    """The node and everything above it."""
    above = {node}
    for parent in (_LATTICE if x64 else _LATTICE_X32)[node]:
        above |= _upper_set(parent, x64)
    return frozenset(above)


def _lattice_node(dtype: np.dtype, weak_type: bool) -> str:
    if dtype == float0:
        raise TypeError("float0 arrays (the gradients of integer inputs, from "
                        "grad(..., allow_int=True)) have no values and support no operations.")
    if dtype not in _NODE_OF_DTYPE:
        canonicalize_dtype(dtype)  # raises the unsupported-dtype error
    if weak_type and dtype != bool_:
        return "c*" if is_complex(dtype) else "f*" if is_float(dtype) else "i*"
    return _NODE_OF_DTYPE[dtype]


@lru_cache(maxsize=1024)
def _join(nodes: tuple[str, ...], x64: bool) -> str:
    common = frozenset.intersection(*(_upper_set(n, x64) for n in nodes))
    if not common:  # a narrow float with another float, or with a Python complex
        weak = {"i*": "<class 'int'>", "f*": "<class 'float'>", "c*": "<class 'complex'>"}
        names = tuple(weak[n] if n in weak else _DTYPE_OF_NODE[n].name for n in nodes)
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
            f"unintended promotion, 8-bit floats do not support implicit promotion. If you'd "
            f"like your inputs to be promoted to another type, you can do so explicitly using "
            f"e.g. x.astype('float32')")
    # The least upper bound is the common node that every other common node lies above.
    return next(n for n in common if _upper_set(n, x64) >= common)


def promote_types(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """The (dtype, weak_type) of an operation on operands of the given (dtype, weak_type).

    Example:
        >>> promote_types((int32, False), (float32, True))  # int32 array + 2.5
        (dtype('float32'), True)
    """
    return _promote_types(typed, config.jax_enable_x64)


@lru_cache(maxsize=4096)
def _promote_types(typed: tuple[tuple[np.dtype, bool], ...], x64: bool) -> tuple[np.dtype, bool]:
    # One operand keeps its dtype, and weak operands alone join as their dtypes would and
    # stay weak: a weak float16 times a weak float16 is a weak float16, not the default
    # float. A bool is never weak. (JAX: ``lattice_result_type``.)
    all_weak = len(typed) == 1 or all(weak for _, weak in typed)
    node = _join(tuple(_lattice_node(d, w and not all_weak) for d, w in typed), x64)
    weak = all_weak and typed[0][1]
    if node == "i*":
        return default_int_dtype(), True
    if node == "f*":
        return default_float_dtype(), True
    if node == "c*":
        return default_complex_dtype(), True
    return canonicalize_dtype(_DTYPE_OF_NODE[node]), weak and node != "b1"
# --8<-- [end:lattice]


_WEAK_NODE_OF_TYPE = {int: "i*", float: "f*", complex: "c*"}


def promote_dtypes(a: Any, b: Any) -> np.dtype:
    """``jnp.promote_types``: the lattice's join of two dtypes, not canonicalized (int64 and
    int8 give int64 even without x64, as in JAX). The Python types ``int``, ``float`` and
    ``complex`` stand for weakly typed scalars (``promote_types(int, int8)`` is int8); two of
    them give NumPy's dtype for the wider one.

    Example:
        >>> promote_dtypes(np.int8, np.uint8)
        dtype('int16')
    """
    node = _join((_dtype_node(a), _dtype_node(b)), config.jax_enable_x64)
    weak_types = {"i*": int, "f*": float, "c*": complex}
    return np.dtype(weak_types[node]) if node in weak_types else _DTYPE_OF_NODE[node]


def _dtype_node(x: Any) -> str:
    if x is int or x is float or x is complex:
        return _WEAK_NODE_OF_TYPE[x]
    return _lattice_node(np.dtype(x), False)


def python_scalar_dtype(x: bool | int | float | complex) -> np.dtype:
    """The dtype a weakly typed Python scalar takes on its own."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int_dtype()
    if isinstance(x, float):
        return default_float_dtype()
    if isinstance(x, complex):
        return default_complex_dtype()
    raise TypeError(f"Expected a Python bool, int, float or complex, got {type(x).__name__}.")


def dot_accumulation_dtype(dtype: np.dtype, preferred: np.dtype | None) -> np.dtype:
    """What a product of ``dtype`` operands computes in: integers in the preferred type (an
    int8 product summed in int32 does not wrap), floats in the wider of theirs and the
    preferred one."""
    if preferred is None or dtype.kind == "c" or preferred.kind in "iub" and dtype.kind == "f":
        return dtype
    if dtype.kind in "iub":
        return preferred
    return preferred if preferred.itemsize > dtype.itemsize else dtype


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """What a sum or product of ``dtype`` values adds up in: float32 for the floats narrower
    than it (in their own type the error grows with each step), each result rounded once;
    other types add up in their own."""
    return float32 if dtype.itemsize <= 2 and dtype in _NARROW_SET else dtype


def inexact_dtype(dtype: np.dtype) -> np.dtype:
    """The type an integer or bool computes in when a float is needed (JAX's
    ``to_inexact_dtype``): float32 up to 32 bits, the default float for 64; inexact types
    are themselves."""
    if is_inexact(dtype):
        return dtype
    return default_float_dtype() if dtype.itemsize == 8 else np.dtype(np.float32)



# ------------------------------------------------------------------------------------------
# The rest of jax.dtypes' names
# ------------------------------------------------------------------------------------------


class extended:  # noqa: N801 -- JAX's name
    """The abstract type above the dtypes that are not NumPy's (``jnp.issubdtype(key.dtype,
    jax.dtypes.extended)`` is True for a typed key array)."""


class prng_key(extended):  # noqa: N801 -- JAX's name
    """The abstract type of typed PRNG keys' dtypes (``key<fry>``)."""


def itemsize_bits(dtype: Any) -> int:
    """How many bits one element of ``dtype`` takes (a bool: 8)."""
    return np.dtype(dtype).itemsize * 8


def scalar_type_of(x: Any) -> type:
    """The Python scalar type of ``x``'s dtype: ``bool``, ``int``, ``float`` or ``complex``."""
    kind = np.dtype(getattr(x, "dtype", None) or np.result_type(x)).kind
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[
        "f" if np.dtype(getattr(x, "dtype", np.float32)) in ML_FLOATS else kind]


def __getattr__(name: str) -> Any:
    """``jax.dtypes.finfo``, ``iinfo``, ``issubdtype`` and ``result_type``: jnp's functions
    (imported when first asked for, since the numpy layer imports this module)."""
    if name in ("finfo", "iinfo", "issubdtype", "result_type"):
        from .numpy import statistics
        if name == "result_type":  # (jnp's has no return_weak_type_flag)
            return statistics.result_type_with_flag
        return getattr(statistics, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
