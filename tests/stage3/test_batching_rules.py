"""vmap's law for every primitive: ``vmap(f)(xs)`` equals stacking ``f(x)`` over the examples.

For each primitive hypothesis draws one example's operands (shapes, dtypes, values) and the
primitive's params, then the batch size, which operands are mapped and along which axis
(``None``, or any axis, negative ones included; all ``None`` with ``axis_size``), and
``out_axes``. The batched call must equal ``f`` applied to each example in a loop, stacked
along ``out_axes``: same shapes, dtypes and weak types, the same values (exactly, except for
float rounding in contractions and reductions).

Also: every primitive has a batching rule; the rules move batch dims only when they must (a
batched matrix-vector product is one matrix-matrix product); ``debug.print`` under ``vmap``
prints what a loop prints.
"""

import contextlib
import io
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stage1_autodiff.core import all_primitives
from stage1_autodiff.fft import FftType, fft, fft_p
from stage1_autodiff.slicing import gather_shape
from stage2_jit.debug import debug_print_p
from stage2_jit.tracing import typecheck_jaxpr
from stage3_vmap.batching import batching_rules

import stage3_vmap as jax
from stage1_autodiff import complex_numbers as cn
from stage1_autodiff import linalg, random_distributions
from stage1_autodiff import prims as p
from stage3_vmap import numpy as jnp

f32, i32, u32, b1 = (np.dtype(d) for d in (np.float32, np.int32, np.uint32, np.bool_))

law = settings(max_examples=15, deadline=None)
seeds = st.integers(0, 2**32 - 1)
sides = st.integers(1, 4)


def shapes(min_dims: int = 0, max_dims: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(sides, min_size=min_dims, max_size=max_dims).map(tuple)


class Operand(NamedTuple):
    """One example's operand: its shape, dtype and the range of its values ([low, high);
    integral floats are whole numbers, so that comparisons and sorts see ties)."""
    shape: tuple[int, ...]
    dtype: np.dtype
    low: float = -2.0
    high: float = 2.0
    integral: bool = False


POSITIVE, UNIT = (0.1, 2.0), (-0.9, 0.9)
SMALL_INT = (-4, 5)


def values(rng: np.random.Generator, x: Operand, shape: tuple[int, ...]) -> np.ndarray:
    if x.dtype == b1:
        return rng.random(shape) < 0.5
    if x.dtype == u32:
        return rng.integers(0, 2**32, shape, dtype=np.uint64).astype(u32)
    if x.dtype.kind == "f" and not x.integral:
        return rng.uniform(x.low, x.high, shape).astype(x.dtype)
    return rng.integers(x.low, x.high, shape).astype(x.dtype)


# A case draws one call of a primitive: (fn, operands). ``fn`` binds the primitive with
# params drawn here (closed over), on arrays of the operands' shapes and dtypes.
Case = Callable[[Callable], tuple[Callable, list[Operand]]]


def number(dtype: np.dtype, domain: tuple[float, float] | None = None, **kw) -> Callable:
    """An operand of ``dtype`` with a drawn shape; ints default to small values."""
    if domain is None:
        domain = SMALL_INT if dtype.kind in "iu" else (-2.0, 2.0)
    return lambda shape: Operand(shape, dtype, *domain, **kw)


def elementwise(prim: p.Primitive, *makers: Callable, **params: Any) -> Case:
    """Operands of one drawn shape, each made by its maker (a dtype and a domain); params
    may be strategies, drawn per example."""
    def build(draw):
        shape = draw(shapes())
        drawn = {k: draw(v) if isinstance(v, st.SearchStrategy) else v
                 for k, v in params.items()}
        return (lambda *xs: prim.bind(*xs, **drawn)), [m(shape) for m in makers]
    return build


def one_of(*cases: Case) -> Case:
    return lambda draw: cases[draw(st.integers(0, len(cases) - 1))](draw)


def unary(prim, dtypes=(f32,), domain=None, **params) -> Case:
    return one_of(*[elementwise(prim, number(d, domain), **params) for d in dtypes])


def binary(prim, dtypes=(f32, i32), lhs=None, rhs=None, integral=False) -> Case:
    return one_of(*[elementwise(prim, number(d, lhs, integral=integral),
                                number(d, rhs, integral=integral)) for d in dtypes])


CASES: dict[p.Primitive, Case] = {}

# --- unary elementwise
for _prim, _domain in [(p.exp_p, None), (p.log_p, POSITIVE), (p.log1p_p, POSITIVE),
                       (p.expm1_p, None), (p.sin_p, None), (p.cos_p, None), (p.tan_p, UNIT),
                       (p.tanh_p, None), (p.logistic_p, None), (p.sqrt_p, POSITIVE),
                       (p.floor_p, None), (p.ceil_p, None), (p.erf_inv_p, UNIT),
                       (p.sinh_p, None), (p.cosh_p, None), (p.asin_p, UNIT), (p.acos_p, UNIT),
                       (p.atan_p, None), (p.asinh_p, None), (p.acosh_p, (1.1, 3.0)),
                       (p.atanh_p, UNIT), (p.cbrt_p, None), (p.exp2_p, None)]:
    CASES[_prim] = unary(_prim, domain=_domain)
for _prim in (p.neg_p, p.abs_p, p.sign_p):
    CASES[_prim] = unary(_prim, (f32, i32))
for _prim, _domain in [(p.rsqrt_p, POSITIVE), (p.erf_p, None), (p.erfc_p, None),
                       (p.lgamma_p, POSITIVE), (p.digamma_p, POSITIVE)]:  # special.py
    CASES[_prim] = unary(_prim, domain=_domain)
CASES[p.polygamma_p] = elementwise(p.polygamma_p, number(f32, (0, 3), integral=True),
                                   number(f32, POSITIVE))
CASES[p.nextafter_p] = binary(p.nextafter_p, (f32,))
CASES[p.reduce_precision_p] = unary(p.reduce_precision_p, (f32,), exponent_bits=st.integers(1, 9),
                                    mantissa_bits=st.integers(0, 24))
for _prim in p.UNARY_SPECIAL_FUNCTIONS:  # special_functions.py
    CASES[_prim] = unary(_prim, domain=POSITIVE)
for _prim in (p.igamma_p, p.igammac_p, p.igamma_grad_a_p, p.zeta_p, p.owens_t_p):
    CASES[_prim] = elementwise(_prim, number(f32, POSITIVE), number(f32, POSITIVE))
CASES[p.expn_p] = elementwise(p.expn_p, number(f32, (0, 3), integral=True),
                              number(f32, POSITIVE))
CASES[p.hyp1f1_p] = elementwise(p.hyp1f1_p, number(f32, POSITIVE), number(f32, POSITIVE),
                                number(f32, UNIT))
CASES[p.hyp2f1_p] = elementwise(p.hyp2f1_p, number(f32, POSITIVE), number(f32, POSITIVE),
                                number(f32, POSITIVE), number(f32, UNIT))
CASES[p.regularized_incomplete_beta_p] = elementwise(
    p.regularized_incomplete_beta_p, number(f32, POSITIVE), number(f32, POSITIVE),
    number(f32, (0.05, 0.95)))
CASES[p.clamp_p] = one_of(*[elementwise(p.clamp_p, number(d, (-3, 0)), number(d),
                                        number(d, (0, 3))) for d in (f32, i32)])
CASES[p.integer_pow_p] = one_of(
    unary(p.integer_pow_p, (f32,), POSITIVE, y=st.integers(-2, 3)),
    unary(p.integer_pow_p, (i32,), y=st.integers(0, 3)))
CASES[p.not_p] = unary(p.not_p, (i32, b1))

# --- binary elementwise
for _prim in (p.add_p, p.mul_p, p.max_p, p.min_p):
    CASES[_prim] = binary(_prim, (f32, i32, b1))
CASES[p.sub_p] = binary(p.sub_p)
CASES[p.div_p] = binary(p.div_p)  # int division by zero is defined (-1), as in XLA
CASES[p.rem_p] = binary(p.rem_p)
CASES[p.pow_p] = binary(p.pow_p, (f32,), lhs=POSITIVE)
CASES[p.atan2_p] = binary(p.atan2_p, (f32,))
for _prim in (p.eq_p, p.ne_p, p.lt_p, p.le_p, p.gt_p, p.ge_p):
    CASES[_prim] = binary(_prim, (f32, i32, b1), lhs=SMALL_INT, rhs=SMALL_INT, integral=True)
for _prim in (p.and_p, p.or_p, p.xor_p):
    CASES[_prim] = binary(_prim, (i32, b1))
for _prim in (p.shift_left_p, p.shift_right_logical_p, p.shift_right_arithmetic_p):
    CASES[_prim] = binary(_prim, (i32, u32), rhs=(-1, 34))  # amounts out of range too


def select_n_case(draw):
    shape = draw(shapes())
    which_shape = draw(st.sampled_from([(), shape]))
    if draw(st.booleans()):
        which, num_cases = Operand(which_shape, b1), 2
    else:
        num_cases = draw(st.integers(1, 3))
        which = Operand(which_shape, i32, 0, num_cases)
    dtype = draw(st.sampled_from([f32, i32]))
    return p.select_n, [which] + [Operand(shape, dtype)] * num_cases


CASES[p.select_n_p] = select_n_case


def convert_element_type_case(draw):
    old, new = draw(st.sampled_from([(f32, i32), (i32, f32), (b1, f32), (f32, b1), (i32, b1),
                                     (f32, f32)]))
    weak_type = draw(st.booleans())
    fn = lambda x: p.convert_element_type_p.bind(x, new_dtype=new, weak_type=weak_type)
    return fn, [Operand(draw(shapes()), old, -4.0, 4.0)]


CASES[p.convert_element_type_p] = convert_element_type_case


def bitcast_convert_type_case(draw):
    old, new = draw(st.sampled_from([(f32, i32), (i32, u32), (u32, i32), (f32, u32)]))
    fn = lambda x: p.bitcast_convert_type_p.bind(x, new_dtype=new)
    return fn, [Operand(draw(shapes()), old)]


CASES[p.bitcast_convert_type_p] = bitcast_convert_type_case
CASES[p.stop_gradient_p] = unary(p.stop_gradient_p, (f32, i32))
CASES[p.copy_p] = unary(p.copy_p, (f32, i32))
CASES[p.name_p] = unary(p.name_p, (f32, i32), name="x")

# --- shapes


def broadcast_in_dim_case(draw):
    shape = draw(shapes())
    dims = sorted(draw(st.sets(st.integers(0, len(shape) - 1), max_size=len(shape)))
                  if shape else [])
    operand_shape = tuple(draw(st.sampled_from([1, shape[d]])) for d in dims)
    fn = lambda x: p.broadcast_in_dim(x, shape, dims)
    return fn, [Operand(operand_shape, draw(st.sampled_from([f32, i32])))]


def reshape_case(draw):
    shape = draw(shapes())
    size = int(np.prod(shape))
    new_sizes = draw(st.sampled_from([(size,), shape[::-1], shape + (1,), (1,) + shape,
                                      (size, 1)]))
    return (lambda x: p.reshape(x, new_sizes)), [Operand(shape, f32)]


def transpose_case(draw):
    shape = draw(shapes())
    perm = draw(st.permutations(range(len(shape))))
    return (lambda x: p.transpose(x, perm)), [Operand(shape, f32)]


def squeeze_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 2), max_size=3)))
    ones = [d for d, n in enumerate(shape) if n == 1]
    dims = draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    return (lambda x: p.squeeze(x, dims)), [Operand(shape, f32)]


def concatenate_case(draw):
    shape = draw(shapes(min_dims=1))
    dimension = draw(st.integers(0, len(shape) - 1))
    num = draw(st.integers(1, 3))
    operands = []
    for _ in range(num):
        this = list(shape)
        this[dimension] = draw(st.integers(1, 3))
        operands.append(Operand(tuple(this), f32))
    return (lambda *xs: p.concatenate(xs, dimension)), operands


def pad_case(draw):
    shape = draw(shapes())
    config = [tuple(draw(st.integers(0, 2)) for _ in range(3)) for _ in shape]
    dtype = draw(st.sampled_from([f32, i32]))
    return (lambda x, v: p.pad(x, v, config)), [Operand(shape, dtype), Operand((), dtype)]


def slice_case(draw):
    shape = draw(shapes())
    starts = [draw(st.integers(0, n)) for n in shape]
    limits = [draw(st.integers(s, n)) for s, n in zip(starts, shape)]
    strides = draw(st.none() | st.tuples(*[st.integers(1, 2) for _ in shape]))
    return (lambda x: p.slice(x, starts, limits, strides)), [Operand(shape, f32)]


def rev_case(draw):
    shape = draw(shapes())
    dims = draw(st.lists(st.integers(0, len(shape) - 1), unique=True) if shape
                else st.just([]))
    return (lambda x: p.rev(x, dims)), [Operand(shape, f32)]


def tile_case(draw):
    shape = draw(shapes())
    reps = [draw(st.integers(0, 3)) for _ in shape]
    return (lambda x: p.tile(x, reps)), [Operand(shape, f32)]


def iota_case(draw):
    shape = draw(shapes(min_dims=1))
    dimension = draw(st.integers(0, len(shape) - 1))
    dtype = draw(st.sampled_from([f32, i32]))
    return (lambda: p.iota(dtype, shape, dimension)), []


CASES[p.broadcast_in_dim_p] = broadcast_in_dim_case
CASES[p.reshape_p] = reshape_case
CASES[p.transpose_p] = transpose_case
CASES[p.squeeze_p] = squeeze_case
CASES[p.concatenate_p] = concatenate_case
CASES[p.pad_p] = pad_case
CASES[p.slice_p] = slice_case
CASES[p.rev_p] = rev_case
CASES[p.tile_p] = tile_case
CASES[p.iota_p] = iota_case

# --- reductions


def reduction(prim, dtypes) -> Case:
    def build(draw):
        shape = draw(shapes())
        axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True) if shape
                    else st.just([]))
        dtype = draw(st.sampled_from(dtypes))
        return (lambda x: prim.bind(x, axes=tuple(axes))), [Operand(shape, dtype, -2, 3)]
    return build


def arg_reduction(prim) -> Case:
    def build(draw):
        shape = draw(shapes(min_dims=1))
        axis = draw(st.integers(0, len(shape) - 1))
        index_dtype = draw(st.sampled_from([i32, np.dtype(np.uint8)]))
        fn = lambda x: prim.bind(x, axes=(axis,), index_dtype=index_dtype)
        return fn, [Operand(shape, draw(st.sampled_from([f32, i32])), -2, 3, integral=True)]
    return build


CASES[p.reduce_sum_p] = reduction(p.reduce_sum_p, [f32, i32])
CASES[p.reduce_max_p] = reduction(p.reduce_max_p, [f32, i32, b1])
CASES[p.reduce_min_p] = reduction(p.reduce_min_p, [f32, i32, b1])
CASES[p.reduce_prod_p] = reduction(p.reduce_prod_p, [f32, i32])
CASES[p.reduce_and_p] = reduction(p.reduce_and_p, [b1])
CASES[p.reduce_or_p] = reduction(p.reduce_or_p, [b1])
CASES[p.argmax_p] = arg_reduction(p.argmax_p)
CASES[p.argmin_p] = arg_reduction(p.argmin_p)

# --- contraction


def dot_general_case(draw):
    """Batch, contracting and free dims of drawn sizes, at drawn positions in each operand
    (at most 3 dims each)."""
    num_batch = draw(st.integers(0, 1))
    num_contract = draw(st.integers(0, 2 - num_batch))
    batch = [draw(sides) for _ in range(num_batch)]
    contract = [draw(sides) for _ in range(num_contract)]

    def operand():
        free = [draw(sides) for _ in range(draw(st.integers(0, 3 - num_batch - num_contract)))]
        roles = ([("batch", i) for i in range(num_batch)]
                 + [("contract", i) for i in range(num_contract)]
                 + [("free", i) for i in range(len(free))])
        layout = draw(st.permutations(roles))
        sizes = {"batch": batch, "contract": contract, "free": free}
        shape = tuple(sizes[role][i] for role, i in layout)
        where = {"batch": [layout.index(("batch", i)) for i in range(num_batch)],
                 "contract": [layout.index(("contract", i)) for i in range(num_contract)]}
        return shape, where

    (x_shape, x_dims), (y_shape, y_dims) = operand(), operand()
    dims = ((x_dims["contract"], y_dims["contract"]), (x_dims["batch"], y_dims["batch"]))
    dtype = draw(st.sampled_from([f32, i32]))
    preferred = draw(st.sampled_from([None, f32]))
    fn = lambda x, y: p.dot_general(x, y, dims, preferred_element_type=preferred)
    return fn, [Operand(x_shape, dtype), Operand(y_shape, dtype)]


CASES[p.dot_general_p] = dot_general_case

# --- gather and scatter


def indexing(draw) -> tuple[Operand, Operand, Any, tuple[int, ...], Any, tuple[int, ...]]:
    """An operand, index vectors (out of bounds by one on either side, to check clamping,
    filling and dropping), random dimension numbers (any indexed dims in any order, windows
    of any size, window dims anywhere in the result), slice sizes, a mode, and the shape
    the gather gives (the scatters' updates)."""
    operand_shape = draw(shapes(min_dims=1))
    nd = len(operand_shape)
    indexed = tuple(draw(st.permutations(range(nd)))[:draw(st.integers(1, nd))])
    collapsed = tuple(sorted(d for d in indexed if draw(st.booleans())))
    sizes = tuple(1 if d in collapsed else draw(st.integers(min(1, n), n))
                  for d, n in enumerate(operand_shape))
    index_batch = draw(shapes(max_dims=2))
    rank = len(index_batch) + nd - len(collapsed)
    offset_dims = tuple(sorted(draw(st.permutations(range(rank)))[:nd - len(collapsed)]))
    numbers = p.GatherDimensionNumbers(offset_dims, collapsed, indexed)
    indices = Operand(index_batch + (len(indexed),), i32, -1, max(operand_shape) + 1)
    dtype = draw(st.sampled_from([f32, i32]))
    mode = draw(st.sampled_from(list(p.GatherScatterMode)))
    shape = gather_shape(operand_shape, indices.shape, numbers, sizes)
    return Operand(operand_shape, dtype), indices, numbers, sizes, mode, shape


def gather_case(draw):
    operand, indices, numbers, sizes, mode, _ = indexing(draw)
    return lambda x, i: p.gather(x, i, numbers, sizes, mode=mode), [operand, indices]


def scatter(prim) -> Case:
    def build(draw):
        operand, indices, dn, _, mode, updates_shape = indexing(draw)
        numbers = p.ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims,
                                            dn.start_index_map)
        fn = lambda x, i, u: prim.bind(x, i, u, dimension_numbers=numbers, mode=mode)
        return fn, [operand, indices, operand._replace(shape=updates_shape)]
    return build


CASES[p.gather_p] = gather_case
for _prim in (p.scatter_add_p, p.scatter_p, p.scatter_mul_p, p.scatter_min_p, p.scatter_max_p):
    CASES[_prim] = scatter(_prim)

# --- sort and threefry


def sort_case(draw):
    shape = draw(shapes(min_dims=1))
    dimension = draw(st.integers(0, len(shape) - 1))
    num = draw(st.integers(1, 3))
    num_keys = draw(st.integers(1, num))
    operands = [Operand(shape, draw(st.sampled_from([f32, i32])), -2, 3, integral=True)
                for _ in range(num)]
    fn = lambda *xs: p.sort_p.bind(*xs, dimension=dimension, num_keys=num_keys)
    return fn, operands


CASES[p.sort_p] = sort_case


# --- linear algebra (stage 1's linalg.py): batches of square matrices (cholesky and eigh
# read the lower triangle: NaNs where it is not positive definite, alike in vmap and loop)


def linalg_case(fn, operands: int = 1):
    def case(draw):
        batch, n = draw(shapes(max_dims=1)), draw(st.integers(1, 3))
        return fn, [Operand(batch + (n, n), f32) for _ in range(operands)]
    return case


CASES[linalg.cholesky_p] = linalg_case(lambda x: linalg.cholesky(x, symmetrize_input=False))
CASES[linalg.triangular_solve_p] = linalg_case(
    lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True), operands=2)
# Results of one rank each (the law picks one out axis): lu's permutation as a matrix,
# eigh's eigenvalues scaling their eigenvectors.
CASES[linalg.lu_p] = linalg_case(
    lambda x: p.add(linalg.lu_p.bind(x)[0], linalg._one_hot(linalg.lu_p.bind(x)[2], x)))
CASES[linalg.qr_p] = linalg_case(lambda x: linalg.qr_p.bind(x, full_matrices=True))
CASES[linalg.eigh_p] = linalg_case(
    lambda x: p.mul(*_eigenpairs(linalg.eigh_p.bind(x, lower=True, sort_eigenvalues=True))))


def _eigenpairs(outs):
    v, w = outs
    return v, linalg._rows(w)
CASES[linalg.eig_p] = linalg_case(  # eigenvalues scaling the right eigenvectors
    lambda x: p.mul(*_eigenpairs(linalg.eig_p.bind(x, compute_left_eigenvectors=False,
                                                   compute_right_eigenvectors=True)[::-1])))
CASES[linalg.svd_p] = linalg_case(
    lambda x: linalg.svd_p.bind(x, full_matrices=False, compute_uv=False))


def cumulative_case(prim):
    def case(draw):
        shape = draw(shapes(min_dims=1))
        axis, reverse = draw(st.integers(0, len(shape) - 1)), draw(st.booleans())
        fn = lambda x: prim.bind(x, axis=axis, reverse=reverse)
        return fn, [Operand(shape, draw(st.sampled_from([f32, i32])), -2, 3)]
    return case


for _prim in p.CUMULATIVE:
    CASES[_prim] = cumulative_case(_prim)


def top_k_case(draw):
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(0, len(shape) - 1))
    k = draw(st.integers(0, shape[axis]))
    fn = lambda x: p.top_k_p.bind(x, k=k, axis=axis)
    return fn, [Operand(shape, draw(st.sampled_from([f32, i32])), -2, 3, integral=True)]


CASES[p.top_k_p] = top_k_case


def dynamic_slice_case(draw):
    """Starts out of range too (clamped), batched or not as the law draws."""
    shape = draw(shapes(min_dims=1))
    sizes = tuple(draw(st.integers(0, n)) for n in shape)
    fn = lambda x, *starts: p.dynamic_slice_p.bind(x, *starts, slice_sizes=sizes)
    return fn, [Operand(shape, f32), *[Operand((), i32, -2, 5) for _ in shape]]


def dynamic_update_slice_case(draw):
    shape = draw(shapes(min_dims=1))
    sizes = tuple(draw(st.integers(0, n)) for n in shape)
    return p.dynamic_update_slice_p.bind, [Operand(shape, f32), Operand(sizes, f32),
                                           *[Operand((), i32, -2, 5) for _ in shape]]


CASES[p.dynamic_slice_p] = dynamic_slice_case
CASES[p.dynamic_update_slice_p] = dynamic_update_slice_case
CASES[p.threefry2x32_p] = elementwise(p.threefry2x32_p, *[number(u32)] * 4)
# random_distributions.py: gamma draws per element (two key words each), its gradient in a,
# and poisson draws from one key
CASES[random_distributions.random_gamma_p] = elementwise(
    random_distributions.random_gamma_p, number(u32), number(u32), number(f32, (0.5, 3.0)),
    log_space=st.booleans())
CASES[random_distributions.random_gamma_grad_p] = elementwise(
    random_distributions.random_gamma_grad_p, number(f32, (0.5, 3.0)), number(f32, (0.5, 3.0)))


def random_poisson_case(draw):
    shape = draw(shapes())
    fn = lambda k, lam: random_distributions.random_poisson_p.bind(k, lam, dtype=i32)
    return fn, [Operand((2,), u32, 0, 2**32), Operand(shape, f32, 0.5, 20.0)]


CASES[random_distributions.random_poisson_p] = random_poisson_case


def reduce_window_case(prim: p.Primitive) -> Case:
    def build(draw):
        shape = draw(shapes(min_dims=1))
        params = dict(window_dimensions=tuple(draw(st.integers(1, n)) for n in shape),
                      window_strides=tuple(draw(st.integers(1, 2)) for _ in shape),
                      padding=tuple((draw(st.integers(0, 1)), 0) for _ in shape),
                      base_dilation=(1,) * len(shape), window_dilation=(1,) * len(shape))
        dtype = draw(st.sampled_from([f32, i32]))
        return (lambda x: prim.bind(x, **params)), [number(dtype)(shape)]
    return build


for _prim in p.REDUCE_WINDOWS:
    CASES[_prim] = reduce_window_case(_prim)


def conv_case(draw):
    """Feature or batch groups (or neither), so every branch of the rule runs."""
    fg, bg = draw(st.sampled_from([(1, 1), (2, 1), (1, 2)]))
    n, c = bg * draw(st.integers(1, 2)), fg * draw(st.integers(1, 2))
    lhs, rhs = (n, c, draw(st.integers(2, 4))), (2 * fg * bg, c // fg, 2)
    layout = draw(st.sampled_from([None, ("NWC", "WIO", "NWC"), ("CNW", "IWO", "WCN")]))
    fn = lambda x, w: p.conv_general_dilated(
        x, w, (1,), "SAME", dimension_numbers=layout, feature_group_count=fg,
        batch_group_count=bg)
    shapes_ = [lhs, rhs] if layout is None else [
        tuple(dict(zip(canon, size))[d] for d in spec)
        for canon, size, spec in (("NCW", lhs, layout[0]), ("OIW", rhs, layout[1]))]
    return fn, [number(f32)(shape) for shape in shapes_]


CASES[p.conv_general_dilated_p] = conv_case

# --- complex numbers and the FFT (stage 1's complex_numbers.py and fft.py): complex values
# are made of two float operands, and compared as their real and imaginary parts


def _parts(z) -> tuple:
    return cn.real(z), cn.imag(z)


def _complex_case(fn) -> Case:
    def build(draw):
        shape = draw(shapes())
        return fn, [Operand(shape, f32), Operand(shape, f32)]
    return build


CASES[cn.complex_p] = _complex_case(lambda x, y: _parts(cn.complex(x, y)))
CASES[cn.real_p] = _complex_case(lambda x, y: cn.real(cn.complex(x, y)))
CASES[cn.imag_p] = _complex_case(lambda x, y: cn.imag(cn.complex(x, y)))
CASES[cn.conj_p] = _complex_case(lambda x, y: _parts(cn.conj(cn.complex(x, y))))


def fft_case(draw):
    shape = draw(shapes(min_dims=1))
    rank = draw(st.integers(1, len(shape)))
    fft_type = draw(st.sampled_from(list(FftType)))
    lengths = shape[len(shape) - rank:]
    if fft_type == FftType.IRFFT:  # an odd length n has n // 2 + 1 = shape[-1] frequencies
        lengths = lengths[:-1] + (2 * shape[-1] - 1,)
    fn = lambda x, y: as_list(fft(cn.complex(x, y) if fft_type != FftType.RFFT else x,
                                  fft_type, lengths))
    return (lambda x, y: [q for out in fn(x, y) for q in
                          (_parts(out) if out.dtype.kind == "c" else (out,))]), [
        Operand(shape, f32), Operand(shape, f32)]


CASES[fft_p] = fft_case

# ------------------------------------------------------------------------------------------
# The law
# ------------------------------------------------------------------------------------------


def as_list(outs: Any) -> list:
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def check_vmap_law(fn: Callable, operands: list[Operand], data) -> None:
    """Draws the batch size, in_axes, which operands are weakly typed, and out_axes;
    vmap(fn) must equal the stacked loop."""
    size = data.draw(st.integers(1, 3), label="batch size")
    in_axes = tuple(
        data.draw(st.sampled_from([None, *range(-len(x.shape) - 1, len(x.shape) + 1)]),
                  label=f"in_axes[{i}]")
        for i, x in enumerate(operands))
    weak = [x.dtype.kind in "fi" and data.draw(st.booleans(), label=f"weak[{i}]")
            for i, x in enumerate(operands)]
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    args = []
    for x, axis in zip(operands, in_axes):
        if axis is None:
            args.append(values(rng, x, x.shape))
        else:
            batched = values(rng, x, (size,) + x.shape)
            args.append(np.moveaxis(batched, 0, axis))

    def array(x: np.ndarray, weak_type: bool) -> jax.Array:
        return p.convert_element_type(jnp.asarray(x), x.dtype, weak_type)

    def example(i: int) -> list:
        xs = [a if axis is None else np.take(a, i, axis) for a, axis in zip(args, in_axes)]
        return as_list(fn(*[array(x, w) for x, w in zip(xs, weak)]))

    wants = [example(i) for i in range(size)]
    out_ndim = wants[0][0].ndim
    out_axes = data.draw(st.integers(-out_ndim - 1, out_ndim), label="out_axes")
    nothing_mapped = all(axis is None for axis in in_axes)
    batched_fn = jax.vmap(fn, in_axes=in_axes, out_axes=out_axes,
                          axis_size=size if nothing_mapped else None)
    batched_args = [array(a, w) for a, w in zip(args, weak)]
    gots = as_list(batched_fn(*batched_args))
    assert len(gots) == len(wants[0])
    # The rules bind primitives that eager NumPy would run even when mistyped: traced, every
    # equation must pass stage 2's typing rules and give the eager results' types.
    closed = jax.make_jaxpr(batched_fn)(*batched_args)
    typecheck_jaxpr(closed.jaxpr)
    assert closed.out_avals == [got.aval for got in gots]
    for j, got in enumerate(gots):
        want = np.stack([np.asarray(w[j]) for w in wants], axis=out_axes)
        assert got.shape == want.shape, f"result {j}: shape {got.shape} != {want.shape}"
        assert got.dtype == want.dtype, f"result {j}: dtype {got.dtype} != {want.dtype}"
        assert got.weak_type == wants[0][j].weak_type, f"result {j}: weak type"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6,
                                       equal_nan=True, err_msg=f"result {j}")
        else:
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"result {j}")


# The primitives whose batching rules are tasks (course/index.md, "Assignments").
TASKS = {"dot_general": pytest.mark.task3_1, "sort": pytest.mark.task3_2,
         **{name: pytest.mark.task3_2 for name in (
             "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
             "argmax", "argmin")}}


@law
@given(data=st.data())
@pytest.mark.parametrize("prim", [pytest.param(prim, marks=TASKS.get(prim.name, ()))
                                  for prim in CASES], ids=str)
def test_vmap_equals_loop(prim, data):
    fn, operands = CASES[prim](data.draw)
    check_vmap_law(fn, operands, data)


# ------------------------------------------------------------------------------------------
# Completeness
# ------------------------------------------------------------------------------------------

# Primitives whose rules and laws are tested elsewhere (test_vmap_api.py, test_collectives.py,
# test_control_flow_batching.py, stage 4's tests for its own primitives, and
# tests/differential/test_pure_callback_against_jax.py for pure_callback's vmap methods,
# test_io_callback_against_jax.py for io_callback's calls once per example).
ELSEWHERE = {"jit", "custom_vjp_call", "psum", "pmax", "pmin", "all_gather", "axis_index",
             "psum_scatter", "ppermute", "all_to_all", "cond", "while", "scan",
             "shard_slice", "reshard", "shard_map", "custom_jvp_call", "remat2",
             "pure_callback", "io_callback"}


def test_every_primitive_has_a_batching_rule():
    # custom_vjp_call has no rule in the table: binding it hands the interpreter the function
    # and its forward and backward passes (BatchTrace.process_custom_vjp_call batches all three).
    missing = [prim.name for prim in all_primitives
               if prim not in batching_rules
               and prim.name not in ("custom_vjp_call", "custom_jvp_call")]
    assert not missing, f"no batching rule for {missing}"


def test_every_primitive_of_stages_1_and_2_has_a_law_case():
    covered = set(CASES) | {debug_print_p}
    missing = [prim.name for prim in all_primitives
               if prim not in covered and prim.name not in ELSEWHERE]
    assert not missing, f"no vmap law case for {missing}"


# ------------------------------------------------------------------------------------------
# Rules move batch dims only when they must
# ------------------------------------------------------------------------------------------


def primitives_in(fn: Callable, *args: Any) -> list[str]:
    return [eqn.primitive.name for eqn in jax.make_jaxpr(fn)(*args).jaxpr.eqns]


@pytest.mark.task3_1
def test_batched_matvec_is_one_matmul():
    # A @ x for each x in xs is A @ xs.T: the examples come out along axis 1, so asking for
    # them there (out_axes=1) leaves one dot_general and nothing else.
    A, xs = jnp.ones((3, 4)), jnp.ones((5, 4))
    matvec = jax.vmap(lambda x: p.dot_general(A, x, (((1,), (0,)), ((), ()))), out_axes=1)
    assert primitives_in(matvec, xs) == ["dot_general"]
    np.testing.assert_array_equal(np.asarray(matvec(xs)), np.full((3, 5), 4.0, np.float32))


@pytest.mark.task3_2
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_elementwise_and_reductions_keep_the_batch_axis_where_it_is(axis):
    def f(x, y):
        return p.reduce_sum(p.sin(p.mul(x, y)), (1,))
    batched = jax.vmap(f, in_axes=axis, out_axes=axis if axis < 2 else 1)
    xs = jnp.ones(tuple(3 if d == axis else 2 for d in range(3)))
    assert primitives_in(batched, xs, xs) == ["mul", "sin", "reduce_sum"]


def test_gather_with_unbatched_indices_moves_nothing():
    indices = jnp.asarray(np.array([[1], [0]], np.int32))
    points = p.GatherDimensionNumbers((), (0,), (0,))
    batched = jax.vmap(lambda x: p.gather(x, indices, points, (1,)), in_axes=1, out_axes=1)
    assert primitives_in(batched, jnp.ones((2, 3))) == ["gather"]


# ------------------------------------------------------------------------------------------
# debug.print: once per example, as a loop prints
# ------------------------------------------------------------------------------------------


def printed(fn: Callable, *args: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue()


@settings(max_examples=10, deadline=None)
@given(shape=shapes(max_dims=2), size=st.integers(1, 3), data=st.data(), seed=seeds)
def test_debug_print_prints_each_example(shape, size, data, seed):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)), label="in_axes[0]")
    xs = np.moveaxis(np.random.default_rng(seed).uniform(size=(size,) + shape)
                     .astype(np.float32), 0, axis)
    y = jnp.asarray(np.float32(2.0))

    def f(x, y):
        jax.debug.print("x={} y={y}", x, y=y)
        return x

    loop = "".join(printed(f, jnp.asarray(np.take(xs, i, axis)), y) for i in range(size))
    assert printed(jax.vmap(f, in_axes=(axis, None)), jnp.asarray(xs), y) == loop
