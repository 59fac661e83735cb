"""``jax.lax``: the primitives' own wrappers, with no broadcasting or type promotion.

Example:
    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> jax.lax.add(jnp.ones(2), jnp.ones(2))
    Array([2., 2.], dtype=float32)
"""

import sys as _sys

from . import linalg  # lax.linalg, as jax.lax.linalg
from .autodiff import stop_gradient
from .complex_numbers import complex, conj, imag, real
from .convolution import (
    ConvDimensionNumbers,
    ConvGeneralDilatedDimensionNumbers,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_general_dilated_patches,
    conv_general_shape_tuple,
    conv_shape_tuple,
    conv_transpose,
    conv_transpose_shape_tuple,
    conv_with_general_padding,
)
from .cumulative import associative_scan, cummax, cummin, cumprod, cumsum, reduce, top_k
from .dynamic_slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)
from .fft import FftType, fft
from .lax_assembly import broadcast_like, empty, stack, unstack
from .lax_composed import (
    RoundingMethod,
    approx_max_k,
    approx_min_k,
    batch_matmul,
    bitcast_convert_type,
    broadcast,
    broadcast_shapes,
    broadcast_to_rank,
    broadcasted_iota,
    clz,
    collapse,
    cumlogsumexp,
    dot,
    dtype,
    index_in_dim,
    iota,
    is_finite,
    mulhi,
    optimization_barrier,
    pad,
    population_count,
    pow,
    reciprocal,
    reduce_xor,
    round,
    scatter_sub,
    slice_in_dim,
    sort_key_val,
    split,
    square,
)
from .more_math import acos, acosh, asin, asinh, atan, atanh, cbrt, cosh, exp2, sinh
from .precision import Precision
from .prims import (
    abs,
    add,
    argmax,
    argmin,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    broadcast_in_dim,
    ceil,
    concatenate,
    convert_element_type,
    cos,
    div,
    dot_general,
    eq,
    erf_inv,
    exp,
    expand_dims,
    expm1,
    floor,
    full,
    full_like,
    gather,
    ge,
    gt,
    integer_pow,
    le,
    log,
    log1p,
    logistic,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    rem,
    reshape,
    rev,
    scatter,
    scatter_add,
    scatter_max,
    scatter_min,
    scatter_mul,
    select_n,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    sign,
    sin,
    slice,
    sort,
    sqrt,
    squeeze,
    sub,
    tan,
    tanh,
    transpose,
    zeros_like,
)
from .ragged_dot import ragged_dot

# The primitives themselves, those JAX's jax.lax exports too: an interpreter dispatches on
# them (``if eqn.primitive is lax.mul_p: ...``). (cholesky_p and the other decompositions'
# are jax.lax.linalg's.)
# isort: off
from .prims import (
    abs_p, acos_p, acosh_p, add_p, and_p, argmax_p, argmin_p, asin_p, asinh_p, atan2_p, atan_p,
    atanh_p, bitcast_convert_type_p, broadcast_in_dim_p, cbrt_p, ceil_p, clamp_p, complex_p,
    concatenate_p, conj_p, conv_general_dilated_p, convert_element_type_p, copy_p, cos_p,
    cosh_p,
    cummax_p, cummin_p, cumprod_p, cumsum_p, digamma_p, div_p, dot_general_p, dynamic_slice_p,
    dynamic_update_slice_p, eq_p, erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p, fft_p,
    floor_p, gather_p, ge_p, gt_p, imag_p, integer_pow_p, iota_p, le_p, lgamma_p, log1p_p,
    log_p, logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p, pad_p,
    polygamma_p, pow_p, real_p, reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p,
    reduce_precision_p, reduce_prod_p, reduce_sum_p, reduce_window_max_p, reduce_window_min_p,
    reduce_window_sum_p,
    rem_p, reshape_p, rev_p, rsqrt_p, scatter_add_p, scatter_max_p, scatter_min_p,
    scatter_mul_p, scatter_p, select_n_p, shift_left_p, shift_right_arithmetic_p,
    shift_right_logical_p, sign_p, sin_p, sinh_p, slice_p, sort_p, sqrt_p, squeeze_p,
    stop_gradient_p, sub_p, tan_p, tanh_p, tile_p, top_k_p, transpose_p, xor_p,
)
# isort: on
from .slicing import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, tile
from .special import (
    clamp,
    digamma,
    erf,
    erfc,
    lgamma,
    nextafter,
    polygamma,
    reduce_precision,
    rsqrt,
)
from .special_functions import (
    bessel_i0e,
    bessel_i0e_p,
    bessel_i1e,
    bessel_i1e_p,
    betainc,
    igamma,
    igamma_grad_a,
    igamma_grad_a_p,
    igamma_p,
    igammac,
    igammac_p,
    random_gamma_grad,
    regularized_incomplete_beta_p,
    zeta,
    zeta_p,
)
from .windowed import (
    padtype_to_pads,
    reduce_window,
    reduce_window_max,
    reduce_window_min,
    reduce_window_shape_tuple,
    reduce_window_sum,
)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred``, else ``on_false`` (operands of one shape and dtype)."""
    return select_n(pred, on_false, on_true)


__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers", "abs", "acos",
    "acosh", "add", "argmax", "argmin", "asin", "asinh", "atan", "atan2", "atanh",
    "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "broadcast_in_dim", "cbrt", "ceil", "concatenate", "convert_element_type", "cos", "cosh",
    "div", "dot_general", "eq", "erf_inv", "exp", "exp2", "expand_dims", "expm1", "floor", "full",
    "full_like", "gather", "ge", "gt", "integer_pow", "iota", "le", "log", "log1p", "logistic",
    "lt", "max", "min", "mul", "ne", "neg", "pad", "pow", "reduce_and", "reduce_max", "reduce_min",
    "reduce_or", "reduce_prod", "reduce_sum", "rem", "reshape", "rev", "scatter", "scatter_add",
    "scatter_max", "scatter_min", "scatter_mul", "select", "select_n", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh", "slice", "sort",
    "sqrt", "squeeze", "stop_gradient", "sub", "tan", "tanh", "tile", "transpose", "zeros_like",
]
__all__ += ["clamp", "digamma", "erf", "erfc", "lgamma", "nextafter", "polygamma",
            "reduce_precision", "rsqrt"]  # special.py
__all__ += ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "betainc", "igamma",
            "igamma_grad_a", "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p",
            "random_gamma_grad", "regularized_incomplete_beta_p", "zeta",
            "zeta_p"]  # special_functions.py
__all__ += ["associative_scan", "cummax", "cummin", "cumprod", "cumsum", "reduce",
            "top_k"]  # cumulative.py
__all__ += ["dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
            "dynamic_update_index_in_dim", "dynamic_update_slice",
            "dynamic_update_slice_in_dim"]  # dynamic_slicing.py
__all__ += ["linalg"]  # linalg.py: cholesky, triangular_solve, lu, qr, eigh, svd
__all__ += ["complex", "conj", "imag", "real"]  # complex_numbers.py
__all__ += ["FftType", "fft"]  # fft.py
__all__ += ["Precision"]  # precision.py
__all__ += ["padtype_to_pads", "reduce_window", "reduce_window_max", "reduce_window_min",
            "reduce_window_shape_tuple", "reduce_window_sum"]  # windowed.py
__all__ += ["ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv",
            "conv_dimension_numbers", "conv_general_dilated", "conv_general_dilated_patches",
            "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
            "conv_transpose_shape_tuple", "conv_with_general_padding"]  # convolution.py
__all__ += ["RoundingMethod", "approx_max_k", "approx_min_k", "batch_matmul", "broadcast",
            "broadcast_shapes", "broadcast_to_rank", "broadcasted_iota", "clz", "collapse",
            "cumlogsumexp", "dot", "dtype", "index_in_dim", "is_finite", "mulhi",
            "optimization_barrier",
            "population_count", "reciprocal", "reduce_xor", "round", "scatter_sub",
            "slice_in_dim", "sort_key_val", "split", "square"]  # lax_composed.py
__all__ += ["broadcast_like", "empty", "stack", "unstack"]  # lax_assembly.py
__all__ += ["ragged_dot"]  # ragged_dot.py
# the primitives themselves
__all__ += ["abs_p", "acos_p", "acosh_p", "add_p", "and_p", "argmax_p", "argmin_p",
            "asin_p", "asinh_p", "atan2_p", "atan_p", "atanh_p",
            "bitcast_convert_type_p", "broadcast_in_dim_p", "cbrt_p", "ceil_p",
            "clamp_p", "complex_p", "concatenate_p", "conj_p", "conv_general_dilated_p",
            "convert_element_type_p", "copy_p", "cos_p", "cosh_p", "cummax_p", "cummin_p",
            "cumprod_p", "cumsum_p", "digamma_p", "div_p", "dot_general_p",
            "dynamic_slice_p", "dynamic_update_slice_p", "eq_p", "erf_inv_p", "erf_p",
            "erfc_p", "exp2_p", "exp_p", "expm1_p", "fft_p", "floor_p", "gather_p",
            "ge_p", "gt_p", "imag_p", "integer_pow_p", "iota_p", "le_p", "lgamma_p",
            "log1p_p", "log_p", "logistic_p", "lt_p", "max_p", "min_p", "mul_p", "ne_p",
            "neg_p", "nextafter_p", "not_p", "or_p", "pad_p", "polygamma_p", "pow_p",
            "reduce_precision_p", "real_p", "reduce_and_p", "reduce_max_p", "reduce_min_p",
            "reduce_or_p",
            "reduce_prod_p", "reduce_sum_p", "reduce_window_max_p",
            "reduce_window_min_p", "reduce_window_sum_p", "rem_p", "reshape_p", "rev_p",
            "rsqrt_p", "scatter_add_p", "scatter_max_p", "scatter_min_p",
            "scatter_mul_p", "scatter_p", "select_n_p", "shift_left_p",
            "shift_right_arithmetic_p", "shift_right_logical_p", "sign_p", "sin_p",
            "sinh_p", "slice_p", "sort_p", "sqrt_p", "squeeze_p", "stop_gradient_p",
            "sub_p", "tan_p", "tanh_p", "tile_p", "top_k_p", "transpose_p", "xor_p"]

_sys.modules[f"{__name__}.linalg"] = linalg  # so that ``import <stage>.lax.linalg`` works
