"""``jax.numpy``: NumPy's API on primitives, so every function can be differentiated (and,
in later stages, jitted, batched and sharded).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.sum(jnp.arange(4.0) ** 2)
    Array(14., dtype=float32)
"""

import numpy as _np

from ..core import Array
from . import fft, indexing, linalg
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
    matrix_transpose,
    meshgrid,
    repeat,
    roll,
    rot90,
    trace,
    tri,
    tril,
    tril_indices,
    triu,
    triu_indices,
    vsplit,
    vstack,
)
from .array_api import (
    cumulative_prod,
    cumulative_sum,
    matvec,
    vecdot,
    vecmat,
)
from .assembly import (
    array_split,
    block,
    delete,
    diagflat,
    insert,
    resize,
    rollaxis,
    trim_zeros,
    unstack,
)
from .bits import bitwise_count, packbits, unpackbits
from .contractions import dot, einsum, einsum_path, inner, matmul, outer, tensordot, vdot
from .covariance import (
    corrcoef,
    cov,
    ptp,
)
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
    geomspace,
    identity,
    linspace,
    logspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .cumulative import around, cumprod, cumsum, nancumprod, nancumsum, round, unique
from .functional import (
    apply_along_axis,
    apply_over_axes,
    fromfunction,
    piecewise,
    vectorize,
)
from .histograms import histogram2d, histogramdd
from .host_data import (
    ComplexWarning,
    array_repr,
    array_str,
    from_dlpack,
    frombuffer,
    fromfile,
    fromiter,
    fromstring,
    get_printoptions,
    load,
    printoptions,
    save,
    savez,
    set_printoptions,
)
from .index_tricks import (
    c_,
    diag_indices,
    diag_indices_from,
    index_exp,
    indices,
    ix_,
    mask_indices,
    mgrid,
    ogrid,
    r_,
    ravel_multi_index,
    s_,
    tril_indices_from,
    triu_indices_from,
)
from .indexing import take, take_along_axis
from .jax_ufuncs import (  # JAX's fourteen ufunc objects, over ufuncs.py's functions
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    subtract,
)
from .mathematical import (
    angle,
    conj,
    conjugate,
    copysign,
    deg2rad,
    fabs,
    fmax,
    fmin,
    heaviside,
    hypot,
    imag,
    isclose,
    log2,
    log10,
    nan_to_num,
    positive,
    rad2deg,
    real,
    signbit,
    sinc,
    trunc,
)
from .more_ufuncs import (
    float_power,
    frexp,
    gcd,
    isneginf,
    isposinf,
    lcm,
    ldexp,
    nextafter,
)
from .nan_statistics import (
    nanargmax,
    nanargmin,
    nanmedian,
    nanpercentile,
    nanprod,
    nanquantile,
    nanstd,
    nanvar,
)
from .ordering import (
    argpartition,
    lexsort,
    partition,
    sort_complex,
)
from .padding import pad
from .polynomials import (
    poly,
    polyadd,
    polyder,
    polydiv,
    polyfit,
    polyint,
    polymul,
    polysub,
    polyval,
    roots,
    vander,
)
from .reductions import all, amax, amin, any, argmax, argmin, max, mean, min, prod, std, sum, var
from .rounding import (
    modf,
    rint,
    spacing,
)
from .scalar_types import (
    bfloat16,
    bool_,
    complex64,
    complex128,
    float4_e2m1fn,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .searching import (
    argwhere,
    array_equiv,
    choose,
    compress,
    digitize,
    extract,
    flatnonzero,
    isin,
)
from .set_operations import (
    intersect1d,
    setdiff1d,
    setxor1d,
    union1d,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
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
from .signals import (
    convolve,
    correlate,
    ediff1d,
    gradient,
    trapezoid,
    unwrap,
)
from .statistics import (
    allclose,
    argsort,
    array_equal,
    average,
    bincount,
    count_nonzero,
    dtype,
    finfo,
    histogram,
    histogram_bin_edges,
    iinfo,
    interp,
    isscalar,
    issubdtype,
    median,
    nanmax,
    nanmean,
    nanmin,
    nansum,
    nonzero,
    percentile,
    promote_types,
    quantile,
    result_type,
    searchsorted,
    select,
    sort,
    unravel_index,
)
from .type_queries import (
    broadcast_shapes,
    can_cast,
    iscomplex,
    iscomplexobj,
    isdtype,
    isreal,
    isrealobj,
)
from .ufunc_objects import frompyfunc, ufunc
from .ufuncs import (
    abs,
    absolute,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    astype,
    bitwise_not,
    cbrt,
    ceil,
    clip,
    cos,
    cosh,
    divide,
    divmod,
    equal,
    exp,
    exp2,
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
    logical_not,
    mod,
    not_equal,
    power,
    reciprocal,
    remainder,
    right_shift,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    tan,
    tanh,
    true_divide,
    where,
)
from .updates import (
    fill_diagonal,
    place,
    put,
    put_along_axis,
)
from .windows import (
    bartlett,
    blackman,
    hamming,
    hanning,
    i0,
    kaiser,
)

ndarray = Array
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
bool = bool_  # noqa: A001 -- jnp.bool, as in NumPy 2
# NumPy's abstract scalar types, for issubdtype (JAX exports NumPy's own)
floating, integer, inexact, number = _np.floating, _np.integer, _np.inexact, _np.number
complexfloating = _np.complexfloating
generic, signedinteger, unsignedinteger = _np.generic, _np.signedinteger, _np.unsignedinteger
character, flexible, object_ = _np.character, _np.flexible, _np.object_
iterable = _np.iterable  # NumPy's own, as JAX's: whether iter() takes it
# The array API's spellings (NumPy 2), which JAX exports too: the same functions.
acos, acosh, asin, asinh = arccos, arccosh, arcsin, arcsinh
atan, atanh, atan2 = arctan, arctanh, arctan2
concat, pow, permute_dims = concatenate, power, transpose  # noqa: A001
bitwise_invert, bitwise_left_shift, bitwise_right_shift = invert, left_shift, right_shift
degrees, radians = rad2deg, deg2rad
# NumPy's other names of its scalar types (64-bit ones become 32-bit without x64, as always)
float_, double, single = float64, float64, float32
int_, uint = int64, uint64
complex_, cdouble, csingle = complex128, complex128, complex64
