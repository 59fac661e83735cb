"""``jax.numpy``: NumPy's API on primitives, so every function can be differentiated (and,
in later stages, jitted, batched and sharded).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.sum(jnp.arange(4.0) ** 2)
    Array(14., dtype=float32)
"""

import numpy as _np

from ..core import Array
from . import indexing
from .arrangement import (
    append,
    atleast_3d,
    column_stack,
    cross,
    diag,
    diagonal,
    diff,
    dsplit,
    dstack,
    fliplr,
    flipud,
    hsplit,
    hstack,
    kron,
    meshgrid,
    repeat,
    roll,
    rot90,
    trace,
    tri,
    tril,
    triu,
    vsplit,
    vstack,
)
from .contractions import dot, einsum, inner, matmul, outer, tensordot, vdot
from .creation import (
    arange,
    array,
    asarray,
    copy,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    logspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .indexing import take, take_along_axis
from .mathematical import (
    conj,
    conjugate,
    copysign,
    deg2rad,
    fmax,
    fmin,
    heaviside,
    hypot,
    imag,
    isclose,
    log2,
    log10,
    logaddexp,
    nan_to_num,
    rad2deg,
    real,
    signbit,
    sinc,
    trunc,
)
from .reductions import all, amax, amin, any, argmax, argmin, max, mean, min, prod, std, sum, var
from .scalar_types import bool_, float32, float64, int32, int64, uint32, uint64
from .statistics import (
    allclose,
    argsort,
    array_equal,
    average,
    count_nonzero,
    isscalar,
    nanmax,
    nanmean,
    nanmin,
    nansum,
    promote_types,
    result_type,
    sort,
)
from .shapes import (
    atleast_1d,
    atleast_2d,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    ndim,
    ravel,
    reshape,
    shape,
    size,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
)
from .ufuncs import (
    abs,
    absolute,
    add,
    arctan2,
    astype,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    clip,
    cos,
    divide,
    divmod,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    fmod,
    greater,
    greater_equal,
    invert,
    isfinite,
    isinf,
    isnan,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    power,
    reciprocal,
    remainder,
    right_shift,
    sign,
    sin,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    where,
)

ndarray = Array
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
newaxis = None
bool = bool_  # noqa: A001 -- jnp.bool, as in NumPy 2
