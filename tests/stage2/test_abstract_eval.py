"""Abstract evaluation: every primitive has a rule, and the rule is right.

The law: for any operands, the rule applied to their avals gives the aval of the eager result
(shape, dtype and weak type), so a traced program has the types an eager run would have. It is
checked on every bind that a representative call of each stage-1 primitive makes, for float32
and int32 where they apply, with strong, weak and mixed operands.
"""

import inspect
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from backend_under_test import gather_leading, scatter_leading
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from stage1_autodiff.autodiff import custom_vjp_call_p
from stage1_autodiff.core import Array, Primitive, ShapedArray
from stage2_jit.abstract_eval import abstract_eval_rules

from stage1_autodiff import core
from stage1_autodiff import prims as lax

f32, i32, u32, b1 = (np.dtype(d) for d in (np.float32, np.int32, np.uint32, np.bool_))

# The primitives of stage 1's primitives.py (custom_vjp_call, in autodiff.py, is traced apart).
STAGE1_PRIMITIVES = {v.name: v for v in vars(lax).values() if isinstance(v, Primitive)}


# ------------------------------------------------------------------------------------------
# Completeness
# ------------------------------------------------------------------------------------------


def test_every_primitive_has_an_abstract_eval_rule():
    missing = [p.name for p in core.all_primitives
               if p not in abstract_eval_rules and p is not custom_vjp_call_p]
    assert not missing, f"primitives without an abstract_eval rule: {missing}"


def test_abstract_eval_rules_hold_only_registered_primitives():
    known = set(core.all_primitives)
    assert [p for p in abstract_eval_rules if p not in known] == []


def test_rules_are_registered_in_primitives_py_order():
    """One block per primitive, in the order of stage 1's primitives.py and slicing.py
    (STYLE.md): the order they are made in."""
    registered = [p.name for p in abstract_eval_rules if p.name in STAGE1_PRIMITIVES]
    assert registered == [p.name for p in _in_prims_order() if p.name in STAGE1_PRIMITIVES]


def _in_prims_order() -> list[Primitive]:
    """Stage 1's primitives module by module in prims.py's order (primitives.py first), each
    module's in the order it makes them (the order Python imports the modules varies)."""
    modules = [sys.modules[f"stage1_autodiff.{m}"] for m in re.findall(
        r"^from \.(\w+) import \*", inspect.getsource(lax), re.M)]
    order: list[Primitive] = []  # a module imports only from those before it: the first
    for module in modules:        # module holding a primitive is the one that makes it
        made = {id(v) for v in vars(module).values()}
        order += [prim for prim in core.all_primitives if id(prim) in made and prim not in order]
    return order


# ------------------------------------------------------------------------------------------
# The law: abstract evaluation agrees with eager evaluation
# ------------------------------------------------------------------------------------------


@contextmanager
def recording_binds() -> Iterator[list]:
    """Records (primitive, operand avals, params, result avals) of every eager bind: each
    runs on the host (``core.run_on_host``), the arrays here being plain ones."""
    records = []
    original = core.run_on_host

    def run_on_host(prim, arrays, params):
        outs = original(prim, arrays, params)
        records.append((prim, [a.aval for a in arrays], params, [o.aval for o in outs]))
        return outs

    core.run_on_host = run_on_host
    try:
        yield records
    finally:
        core.run_on_host = original


def shapes(min_dims: int = 0, max_dims: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=4)


def values(data, shape, dtype: np.dtype, high: int = 4) -> np.ndarray:
    """Values every op accepts: floats in (0.1, 0.9) (log, sqrt, erf_inv), ints in [1, high)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    if dtype == b1:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.uniform(0.1, 0.9, shape).astype(dtype)
    return rng.integers(1, high, shape).astype(dtype)


def subset(data, dims: range) -> tuple[int, ...]:
    return tuple(data.draw(st.lists(st.sampled_from(dims), unique=True)) if dims else [])


# A case builds a call through the lax wrappers and its operands: (data, dtype) -> (fn, arrays).
Case = Callable[..., tuple[Callable, list[np.ndarray]]]


def unary(fn) -> Case:
    return lambda data, dtype: (fn, [values(data, data.draw(shapes()), dtype)])


def binary(fn) -> Case:
    def build(data, dtype):
        shape = data.draw(shapes())
        return fn, [values(data, shape, dtype), values(data, shape, dtype)]
    return build


def integer_pow_case(data, dtype):
    y = data.draw(st.integers(-2 if dtype.kind == "f" else 0, 3))
    return (lambda x: lax.integer_pow(x, y)), [values(data, data.draw(shapes()), dtype)]


def select_n_case(data, dtype):
    shape = data.draw(shapes())
    which_shape = data.draw(st.sampled_from([(), shape]))
    if data.draw(st.booleans()):  # a bool predicate picks between two cases
        which, n = values(data, which_shape, b1), 2
    else:                          # an int32 one between three
        which, n = values(data, which_shape, i32, high=3) - 1, 3
    return lax.select_n, [which] + [values(data, shape, dtype) for _ in range(n)]


def convert_element_type_case(data, dtype):
    new_dtype = data.draw(st.sampled_from([f32, i32, u32, b1]))
    weak_type = new_dtype != b1 and data.draw(st.booleans())
    fn = lambda x: lax.convert_element_type(x, new_dtype, weak_type)
    return fn, [values(data, data.draw(shapes()), dtype)]


def bitcast_convert_type_case(data, dtype):
    new_dtype = data.draw(st.sampled_from([f32, i32, u32]))
    fn = lambda x: lax.bitcast_convert_type_p.bind(x, new_dtype=np.dtype(new_dtype))
    return fn, [values(data, data.draw(shapes()), dtype)]


def broadcast_in_dim_case(data, dtype):
    shape = data.draw(shapes())
    dims = tuple(sorted(subset(data, range(len(shape)))))
    operand_shape = tuple(shape[d] if data.draw(st.booleans()) else 1 for d in dims)
    fn = lambda x: lax.broadcast_in_dim(x, shape, dims)
    return fn, [values(data, operand_shape, dtype)]


def reshape_case(data, dtype):
    shape = data.draw(shapes())
    size = int(np.prod(shape))
    new_sizes = data.draw(st.sampled_from([(size,), shape[::-1], (1, *shape), (*shape, 1)]))
    return (lambda x: lax.reshape(x, new_sizes)), [values(data, shape, dtype)]


def transpose_case(data, dtype):
    shape = data.draw(shapes())
    permutation = tuple(data.draw(st.permutations(range(len(shape)))))
    return (lambda x: lax.transpose(x, permutation)), [values(data, shape, dtype)]


def squeeze_case(data, dtype):
    shape = data.draw(shapes())
    ones = [d for d, n in enumerate(shape) if n == 1]
    dims = tuple(sorted(data.draw(st.lists(st.sampled_from(ones), unique=True)))) if ones else ()
    return (lambda x: lax.squeeze(x, dims)), [values(data, shape, dtype)]


def concatenate_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    dimension = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    operands = [values(data, shape[:dimension] + (n,) + shape[dimension + 1:], dtype)
                for n in sizes]
    return (lambda *xs: lax.concatenate(xs, dimension)), operands


def pad_case(data, dtype):
    shape = data.draw(shapes())
    config = [data.draw(st.tuples(*[st.integers(0, 2)] * 3)) for _ in shape]
    fn = lambda x, padding_value: lax.pad(x, padding_value, config)
    return fn, [values(data, shape, dtype), values(data, (), dtype)]


def slice_case(data, dtype):
    shape = data.draw(shapes())
    starts = [data.draw(st.integers(0, n)) for n in shape]
    limits = [data.draw(st.integers(start, n)) for start, n in zip(starts, shape)]
    strides = data.draw(st.none() | st.tuples(*[st.integers(1, 3)] * len(shape)))
    fn = lambda x: lax.slice(x, starts, limits, strides)
    return fn, [values(data, shape, dtype)]


def rev_case(data, dtype):
    shape = data.draw(shapes())
    dims = subset(data, range(len(shape)))
    return (lambda x: lax.rev(x, dims)), [values(data, shape, dtype)]


def tile_case(data, dtype):
    shape = data.draw(shapes())
    reps = tuple(data.draw(st.integers(0, 3)) for _ in shape)
    return (lambda x: lax.tile(x, reps)), [values(data, shape, dtype)]


def iota_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    dimension = data.draw(st.integers(0, len(shape) - 1))
    return (lambda: lax.iota(dtype, shape, dimension)), []


def reduction(fn) -> Case:
    def build(data, dtype):
        shape = data.draw(shapes())
        axes = subset(data, range(len(shape)))
        return (lambda x: fn(x, axes)), [values(data, shape, dtype)]
    return build


def arg_reduction(fn) -> Case:
    def build(data, dtype):
        shape = data.draw(shapes(min_dims=1))
        axis = data.draw(st.integers(0, len(shape) - 1))
        return (lambda x: fn(x, axis)), [values(data, shape, dtype)]
    return build


def dot_general_case(data, dtype):
    """Batch, contracting and free dims of random sizes, in a random order in each operand."""
    sizes = st.lists(st.integers(1, 3), max_size=2)
    batch, contract, x_free, y_free = (data.draw(sizes) for _ in range(4))
    x_labels = data.draw(st.permutations(
        [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
        + [("f", i) for i in range(len(x_free))]))
    y_labels = data.draw(st.permutations(
        [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))]
        + [("f", i) for i in range(len(y_free))]))
    size_of = {"b": batch, "c": contract}

    def shape(labels, free):
        return tuple({**size_of, "f": free}[kind][i] for kind, i in labels)

    def dims(labels, kind, n):
        return tuple(labels.index((kind, i)) for i in range(n))

    dimension_numbers = ((dims(x_labels, "c", len(contract)), dims(y_labels, "c", len(contract))),
                         (dims(x_labels, "b", len(batch)), dims(y_labels, "b", len(batch))))
    fn = lambda x, y: lax.dot_general(x, y, dimension_numbers)
    return fn, [values(data, shape(x_labels, x_free), dtype),
                values(data, shape(y_labels, y_free), dtype)]


def _operand_and_indices(data, dtype):
    operand_shape = data.draw(shapes(min_dims=1))
    k = data.draw(st.integers(1, len(operand_shape)))
    batch = data.draw(shapes(max_dims=2))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    indices = np.stack([rng.integers(0, n, batch) for n in operand_shape[:k]], axis=-1)
    return values(data, operand_shape, dtype), indices.astype(np.int32), batch, k


MODES = st.sampled_from(["clip", "fill", "promise_in_bounds"])


def gather_case(data, dtype):
    operand, indices, _, _ = _operand_and_indices(data, dtype)
    mode = data.draw(MODES)
    return lambda x, i: gather_leading(x, i, mode=mode), [operand, indices]


def scatter(fn) -> Case:
    def build(data, dtype):
        operand, indices, batch, k = _operand_and_indices(data, dtype)
        mode = data.draw(MODES)
        return (lambda x, i, u: scatter_leading(fn)(x, i, u, mode=mode),
                [operand, indices, values(data, batch + operand.shape[k:], dtype)])
    return build


def sort_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    dtypes = [dtype] + data.draw(st.lists(st.sampled_from([f32, i32]), max_size=2))
    dimension = data.draw(st.integers(0, len(shape) - 1))
    num_keys = data.draw(st.integers(1, len(dtypes)))
    fn = lambda *xs: lax.sort(xs, dimension, num_keys=num_keys)
    return fn, [values(data, shape, d) for d in dtypes]


def cumulative_case(fn):
    def case(data, dtype):
        shape = data.draw(shapes(min_dims=1))
        axis = data.draw(st.integers(0, len(shape) - 1))
        reverse = data.draw(st.booleans())
        return (lambda x: fn(x, axis, reverse)), [values(data, shape, dtype)]
    return case


def top_k_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(0, shape[axis]))
    return (lambda x: lax.top_k(x, k, axis=axis)), [values(data, shape, dtype)]


def dynamic_slice_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    starts = [np.int32(data.draw(st.integers(-3, 3))) for _ in shape]
    fn = lambda x, *i: lax.dynamic_slice(x, i, sizes)
    return fn, [values(data, shape, dtype), *starts]


def dynamic_update_slice_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    starts = [np.int32(data.draw(st.integers(-3, 3))) for _ in shape]
    fn = lambda x, u, *i: lax.dynamic_update_slice(x, u, i)
    return fn, [values(data, shape, dtype), values(data, sizes, dtype), *starts]


def reduce_window_case(fn) -> Case:
    def build(data, dtype):
        shape = data.draw(shapes(min_dims=1))
        window = tuple(data.draw(st.integers(1, n)) for n in shape)
        ones = (1,) * len(shape)
        strides = tuple(data.draw(st.integers(1, 2)) for _ in shape)
        pads = tuple((data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1)))
                     for _ in shape)
        base = tuple(data.draw(st.sampled_from([ones, tuple(2 for _ in shape)])))
        return (lambda x: fn(x, window, strides, pads, base, ones)), [values(data, shape, dtype)]
    return build


def conv_case(data, dtype):
    groups = data.draw(st.integers(1, 2))
    n, c, o = data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2)), groups * 2
    lhs, rhs = (n, c, data.draw(st.integers(2, 4))), (o, c // groups, 2)
    stride = data.draw(st.integers(1, 2))
    fn = lambda x, w: lax.conv_general_dilated(x, w, (stride,), "SAME",
                                               feature_group_count=groups)
    return fn, [values(data, lhs, dtype), values(data, rhs, dtype)]


def threefry2x32_case(data, dtype):
    shape = data.draw(shapes())
    return lax.threefry2x32, [values(data, shape, u32, high=2**32) for _ in range(4)]


def matrices(data, dtype, square: bool = True) -> np.ndarray:
    """A batch of well-conditioned matrices (symmetric positive definite when square)."""
    batch = data.draw(st.lists(st.integers(1, 2), max_size=1))
    m = data.draw(st.integers(1, 3))
    n = m if square else data.draw(st.integers(1, 3))
    x = values(data, (*batch, m, n), dtype)
    if square:
        x = x @ np.swapaxes(x, -1, -2) + m * np.eye(m, dtype=dtype)
    return x


def linalg_case(fn, square: bool = True) -> Case:
    return lambda data, dtype: (fn, [matrices(data, dtype, square)])


def triangular_solve_case(data, dtype):
    a = matrices(data, dtype)
    left = data.draw(st.booleans())
    b_shape = (*a.shape[:-1], 2) if left else (*a.shape[:-2], 2, a.shape[-1])
    lower, transpose = data.draw(st.booleans()), data.draw(st.booleans())
    fn = lambda a, b: lax.triangular_solve(a, b, left_side=left, lower=lower,
                                           transpose_a=transpose)
    return fn, [a, values(data, b_shape, dtype)]


def complex_values(data, shape) -> np.ndarray:
    return (values(data, shape, f32) + 1j * values(data, shape, f32)).astype(np.complex64)


def complex_part_case(fn) -> Case:
    return lambda data, dtype: (fn, [complex_values(data, data.draw(shapes()))])


def complex_case(data, dtype):
    shape = data.draw(shapes())
    return lax.complex, [values(data, shape, dtype), values(data, shape, dtype)]


def fft_case(data, dtype):
    shape = data.draw(shapes(min_dims=1))
    kind = data.draw(st.sampled_from(list(lax.FftType)))
    rank = data.draw(st.integers(1, len(shape)))
    lengths = shape[len(shape) - rank:]
    if kind.name == "RFFT":
        return (lambda x: lax.fft(x, kind, lengths)), [values(data, shape, dtype)]
    if kind.name == "IRFFT":
        x = complex_values(data, (*shape[:-1], shape[-1] // 2 + 1))
        return (lambda x: lax.fft(x, kind, lengths)), [x]
    return (lambda x: lax.fft(x, kind, lengths)), [complex_values(data, shape)]


FLOAT, NUMBERS = (f32,), (f32, i32)

# name -> (the dtypes to run it at, the case)
LAW_CASES: dict[str, tuple[tuple[np.dtype, ...], Case]] = {
    "neg": (NUMBERS, unary(lax.neg)),
    "exp": (FLOAT, unary(lax.exp)),
    "log": (FLOAT, unary(lax.log)),
    "log1p": (FLOAT, unary(lax.log1p)),
    "expm1": (FLOAT, unary(lax.expm1)),
    "sin": (FLOAT, unary(lax.sin)),
    "cos": (FLOAT, unary(lax.cos)),
    "tan": (FLOAT, unary(lax.tan)),
    **{name: (FLOAT, unary(getattr(lax, name))) for name in
       ["sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "cbrt", "exp2"]},
    "tanh": (FLOAT, unary(lax.tanh)),
    "logistic": (FLOAT, unary(lax.logistic)),
    "sqrt": (FLOAT, unary(lax.sqrt)),
    "abs": (NUMBERS, unary(lax.abs)),
    "sign": (NUMBERS, unary(lax.sign)),
    "floor": (FLOAT, unary(lax.floor)),
    "ceil": (FLOAT, unary(lax.ceil)),
    "integer_pow": (NUMBERS, integer_pow_case),
    "erf_inv": (FLOAT, unary(lax.erf_inv)),
    **{name: (FLOAT, unary(getattr(lax, name))) for name in  # special.py
       ["rsqrt", "erf", "erfc", "lgamma", "digamma"]},
    "polygamma": (FLOAT, binary(lambda m, x: lax.polygamma(lax.floor(m * 3), x))),
    "nextafter": (FLOAT, binary(lax.nextafter)),
    "reduce_precision": (FLOAT, unary(lambda x: lax.reduce_precision(x, 5, 2))),
    **{name: (FLOAT, unary(getattr(lax, name))) for name in  # special_functions.py
       ["bessel_i0e", "bessel_i1e", "erfcx", "dawsn", "expi", "spence", "si", "ci",
        "fresnel_s", "fresnel_c"]},
    **{name: (FLOAT, binary(getattr(lax, name))) for name in
       ["igamma", "igammac", "igamma_grad_a", "zeta", "expn", "owens_t"]},
    "regularized_incomplete_beta": (FLOAT, binary(lambda a, x: lax.betainc(a, a, x))),
    "hyp1f1": (FLOAT, binary(lambda a, x: lax.hyp1f1(a, a, x))),
    "hyp2f1": (FLOAT, binary(lambda a, x: lax.hyp2f1(a, a, a, x))),
    "random_gamma_grad": (FLOAT, binary(lambda a, x: lax.random_gamma_grad(abs(a) + 0.5,
                                                                           abs(x) + 0.5))),
    "clamp": (NUMBERS, binary(lambda x, y: lax.clamp(lax.min(x, y), x, lax.max(x, y)))),
    "not": ((i32, b1), unary(lax.bitwise_not)),
    "add": (NUMBERS, binary(lax.add)),
    "sub": (NUMBERS, binary(lax.sub)),
    "mul": (NUMBERS, binary(lax.mul)),
    "div": (NUMBERS, binary(lax.div)),
    "rem": (NUMBERS, binary(lax.rem)),
    "pow": (NUMBERS, binary(lax.pow)),
    "max": (NUMBERS, binary(lax.max)),
    "min": (NUMBERS, binary(lax.min)),
    "atan2": (FLOAT, binary(lax.atan2)),
    "eq": (NUMBERS, binary(lax.eq)),
    "ne": (NUMBERS, binary(lax.ne)),
    "lt": (NUMBERS, binary(lax.lt)),
    "le": (NUMBERS, binary(lax.le)),
    "gt": (NUMBERS, binary(lax.gt)),
    "ge": (NUMBERS, binary(lax.ge)),
    "and": ((i32, b1), binary(lax.bitwise_and)),
    "or": ((i32, b1), binary(lax.bitwise_or)),
    "xor": ((i32, b1), binary(lax.bitwise_xor)),
    "shift_left": ((i32, u32), binary(lax.shift_left)),
    "shift_right_logical": ((i32, u32), binary(lax.shift_right_logical)),
    "shift_right_arithmetic": ((i32, u32), binary(lax.shift_right_arithmetic)),
    "select_n": (NUMBERS, select_n_case),
    "convert_element_type": (NUMBERS, convert_element_type_case),
    "bitcast_convert_type": (NUMBERS, bitcast_convert_type_case),
    "stop_gradient": (NUMBERS, unary(lax.stop_gradient)),
    "copy": (NUMBERS, unary(lax.copy_p.bind)),
    "name": (NUMBERS, unary(lambda x: lax.name_p.bind(x, name="x"))),
    "broadcast_in_dim": (NUMBERS, broadcast_in_dim_case),
    "reshape": (NUMBERS, reshape_case),
    "transpose": (NUMBERS, transpose_case),
    "squeeze": (NUMBERS, squeeze_case),
    "concatenate": (NUMBERS, concatenate_case),
    "pad": (NUMBERS, pad_case),
    "slice": (NUMBERS, slice_case),
    "rev": (NUMBERS, rev_case),
    "iota": (NUMBERS, iota_case),
    "reduce_sum": (NUMBERS, reduction(lax.reduce_sum)),
    "reduce_max": (NUMBERS, reduction(lax.reduce_max)),
    "reduce_min": (NUMBERS, reduction(lax.reduce_min)),
    "reduce_prod": (NUMBERS, reduction(lax.reduce_prod)),
    "reduce_and": ((b1,), reduction(lax.reduce_and)),
    "reduce_or": ((b1,), reduction(lax.reduce_or)),
    "argmax": (NUMBERS, arg_reduction(lax.argmax)),
    "argmin": (NUMBERS, arg_reduction(lax.argmin)),
    "dot_general": (NUMBERS, dot_general_case),
    "gather": (NUMBERS, gather_case),
    "scatter_add": (NUMBERS, scatter(lax.scatter_add)),
    "scatter": (NUMBERS, scatter(lax.scatter)),
    "scatter_mul": (NUMBERS, scatter(lax.scatter_mul)),
    "scatter_min": (NUMBERS, scatter(lax.scatter_min)),
    "scatter_max": (NUMBERS, scatter(lax.scatter_max)),
    "sort": (NUMBERS, sort_case),
    "tile": (NUMBERS, tile_case),
    "threefry2x32": ((u32,), threefry2x32_case),
    **{name: (NUMBERS, reduce_window_case(getattr(lax, name)))  # windowed.py
       for name in ["reduce_window_sum", "reduce_window_max", "reduce_window_min"]},
    "conv_general_dilated": (NUMBERS, conv_case),  # convolution.py
    "cumsum": (NUMBERS, cumulative_case(lax.cumsum)),
    "cumprod": (NUMBERS, cumulative_case(lax.cumprod)),
    "cummax": (NUMBERS, cumulative_case(lax.cummax)),
    "cummin": (NUMBERS, cumulative_case(lax.cummin)),
    "top_k": (NUMBERS, top_k_case),
    "dynamic_slice": (NUMBERS, dynamic_slice_case),
    "dynamic_update_slice": (NUMBERS, dynamic_update_slice_case),
    "real": (FLOAT, complex_part_case(lax.real)),  # complex_numbers.py
    "imag": (FLOAT, complex_part_case(lax.imag)),
    "conj": (FLOAT, complex_part_case(lax.conj)),
    "complex": (FLOAT, complex_case),
    "fft": (FLOAT, fft_case),  # fft.py
    "cholesky": (FLOAT, linalg_case(lax.cholesky)),  # linalg.py
    "triangular_solve": (FLOAT, triangular_solve_case),
    "lu": (FLOAT, linalg_case(lax.lu, square=False)),
    "qr": (FLOAT, linalg_case(lambda x: lax.qr(x, full_matrices=False), square=False)),
    "eigh": (FLOAT, linalg_case(lax.eigh)),
    "eig": (FLOAT, linalg_case(lax.eig)),
    "svd": (FLOAT, linalg_case(lax.svd, square=False)),
}


def test_law_cases_cover_every_stage1_primitive():
    assert LAW_CASES.keys() == STAGE1_PRIMITIVES.keys()


def weak_patterns(data, operands: list[np.ndarray]) -> list[list[bool]]:
    """All strong, all weak, and a mix. Booleans are never weak, as in JAX."""
    can_be_weak = [x.dtype != b1 for x in operands]
    mixed = [w and data.draw(st.booleans(), label="weak") for w in can_be_weak]
    return [[False] * len(operands), can_be_weak, mixed]


def task_marks(name: str) -> tuple:
    """The marker of the task whose rule a case checks: Task 2.1 writes dot_general's."""
    return (pytest.mark.task2_1,) if name == "dot_general" else ()


@pytest.mark.parametrize("name, dtype", [pytest.param(name, dtype, marks=task_marks(name))
                                         for name, (dtypes, _) in LAW_CASES.items()
                                         for dtype in dtypes])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_abstract_eval_agrees_with_eager(name, dtype, data):
    _, build = LAW_CASES[name]
    fn, operands = build(data, dtype)
    for weak in weak_patterns(data, operands):
        with recording_binds() as records:
            fn(*[Array(x, w) for x, w in zip(operands, weak)])
        assert STAGE1_PRIMITIVES[name] in [prim for prim, *_ in records], f"{name} never bound"
        for prim, in_avals, params, eager_avals in records:
            abstract = abstract_eval_rules[prim](*in_avals, **params)
            abstract = abstract if prim.multiple_results else [abstract]
            assert abstract == eager_avals, (
                f"{prim.name}{tuple(in_avals)} with {params}: abstract {abstract}, "
                f"eager {eager_avals}")


@pytest.mark.task2_1
def test_rules_compute_types_without_the_data():
    """40 GB operands: only their types are ever made."""
    big = ShapedArray((100_000, 100_000), f32)
    out = abstract_eval_rules[lax.dot_general_p](
        big, big, dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=None)
    assert out == ShapedArray((100_000, 100_000), f32)
    assert abstract_eval_rules[lax.exp_p](big) == big


def test_weak_type_examples():
    """Spelled out: weak only when every operand of the result's dtype is weak (for a
    comparison, whose bool has no such operand: when both operands are, as in JAX)."""
    weak, strong = ShapedArray((3,), f32, True), ShapedArray((3,), f32)
    pred = ShapedArray((3,), b1)
    assert abstract_eval_rules[lax.add_p](weak, weak).weak_type
    assert not abstract_eval_rules[lax.add_p](weak, strong).weak_type
    assert abstract_eval_rules[lax.select_n_p](pred, weak, weak).weak_type  # pred doesn't count
    assert abstract_eval_rules[lax.lt_p](weak, weak).weak_type              # 1.5 < 2: weak
    assert not abstract_eval_rules[lax.lt_p](weak, strong).weak_type        # a strong bool
    assert not abstract_eval_rules[lax.iota_p](dtype=f32, shape=(3,), dimension=0).weak_type
    convert = abstract_eval_rules[lax.convert_element_type_p]
    assert convert(strong, new_dtype=i32, weak_type=True) == ShapedArray((3,), i32, True)
    indices = ShapedArray((2, 1), i32)
    rows = {"dimension_numbers": lax.GatherDimensionNumbers((), (0,), (0,)),
            "slice_sizes": (1,), "mode": lax.GatherScatterMode.CLIP, "fill_value": None}
    assert abstract_eval_rules[lax.gather_p](weak, indices, **rows) == ShapedArray((2,), f32,
                                                                                   True)


# ------------------------------------------------------------------------------------------
# Errors: TypeError naming the primitive and the operand types
# ------------------------------------------------------------------------------------------

_DTYPES = {"f32": f32, "i32": i32, "u32": u32, "bool": b1}


def aval(short: str) -> ShapedArray:
    """``aval("f32[2,3]")``: an aval from its short form, as printed in jaxprs."""
    dtype, dims = re.fullmatch(r"(\w+)\[([\d,]*)\]", short).groups()
    return ShapedArray(tuple(int(d) for d in dims.split(",") if d), _DTYPES[dtype])


MATMUL = {"dimension_numbers": (((1,), (0,)), ((), ())), "preferred_element_type": None}

GATHER_ROWS = {"dimension_numbers": lax.GatherDimensionNumbers((1,), (0,), (0,)),
               "slice_sizes": (1, 2), "mode": lax.GatherScatterMode.CLIP, "fill_value": None}
SCATTER_ROWS = {"dimension_numbers": lax.ScatterDimensionNumbers((1,), (0,), (0,)),
                "mode": lax.GatherScatterMode.FILL_OR_DROP}

# (primitive, operands, params, what the message must say)
ERROR_CASES = [
    (lax.add_p, "f32[3] f32[4]", {}, "add requires arguments of equal shapes and dtypes, got "
                                     "f32[3] and f32[4]"),
    (lax.mul_p, "f32[3] i32[3]", {}, "mul requires arguments of equal shapes and dtypes, got "
                                     "f32[3] and i32[3]"),
    (lax.lt_p, "i32[2,3] i32[3,2]", {}, "lt requires arguments of equal shapes and dtypes, got "
                                        "i32[2,3] and i32[3,2]"),
    (lax.exp_p, "i32[3]", {}, "exp requires floating-point or complex arguments, got i32[3]"),
    (lax.shift_left_p, "f32[3] f32[3]", {}, "shift_left requires integer arguments"),
    (lax.dot_general_p, "f32[2,3] f32[4,5]", MATMUL,
     "dot_general requires contracting dims of equal sizes, got (3,) (dims (1,) of f32[2,3]) "
     "and (4,) (dims (0,) of f32[4,5])"),
    (lax.dot_general_p, "f32[2,3] i32[3,5]", MATMUL, "dot_general requires operands of one "
                                                     "dtype, got f32[2,3] and i32[3,5]"),
    (lax.reshape_p, "f32[2,3]", {"new_sizes": (4,), "dimensions": None},
     "reshape can't reshape f32[2,3] to f32[4]"),
    (lax.broadcast_in_dim_p, "f32[3]", {"shape": (2, 4), "broadcast_dimensions": (1,)},
     "broadcast_in_dim can't broadcast f32[3] to f32[2,4]"),
    (lax.broadcast_in_dim_p, "f32[3,1]", {"shape": (1, 3), "broadcast_dimensions": (1, 0)},
     "broadcast_in_dim can't broadcast f32[3,1] to f32[1,3]"),
    (lax.gather_p, "f32[3,2] f32[2,1]", GATHER_ROWS, "gather requires integer indices"),
    (lax.gather_p, "f32[3,2] i32[2,2]", GATHER_ROWS, "gather requires index vectors of "
                                                     "length 1 (one per indexed dim (0,))"),
    (lax.gather_p, "f32[3,2] i32[2,1]", {**GATHER_ROWS, "slice_sizes": (1, 3)},
     "gather requires one slice size per operand dim, each at most the dim's size"),
    (lax.scatter_add_p, "f32[3,2] i32[2,1] f32[2,3]", SCATTER_ROWS,
     "scatter_add requires updates whose windows fit the operand"),
    (lax.select_n_p, "f32[3] f32[3] f32[3]", {}, "select_n requires a bool or int32 predicate"),
    (lax.select_n_p, "bool[3] f32[3] i32[3]", {}, "select_n requires arguments of equal shapes "
                                                  "and dtypes, got f32[3] and i32[3]"),
    (lax.transpose_p, "f32[2,3]", {"permutation": (0, 0)}, "transpose permutation"),
    (lax.squeeze_p, "f32[2,1]", {"dimensions": (0,)}, "squeeze can only remove dims of size 1"),
    (lax.concatenate_p, "f32[2,3] f32[3,2]", {"dimension": 0},
     "concatenate requires operands of one dtype and rank"),
    (lax.pad_p, "f32[3] i32[]", {"padding_config": ((1, 1, 0),)},
     "pad requires a scalar padding value of the operand's dtype, got f32[3] and i32[]"),
    (lax.slice_p, "f32[3]", {"start_indices": (2,), "limit_indices": (1,), "strides": None},
     "slice requires 0 <= start <= limit <= size"),
    (lax.reduce_sum_p, "f32[2,3]", {"axes": (2,)}, "reduce_sum axes must be distinct dims in "
                                                   "[0, 2), got (2,) for f32[2,3]"),
    (lax.reduce_and_p, "i32[3]", {"axes": (0,)},
     "reduce_and requires boolean arguments, got i32[3]"),
    (lax.argmax_p, "f32[0]", {"axes": (0,), "index_dtype": i32}, "argmax requires one "
                                                                 "non-empty axis"),
    (lax.bitcast_convert_type_p, "bool[3]", {"new_dtype": f32}, "bitcast_convert_type"),
    (lax.sort_p, "f32[3] i32[4]", {"dimension": 0, "num_keys": 1},
     "sort requires operands of one shape"),
    (lax.threefry2x32_p, "u32[2] u32[2] u32[2] f32[2]", {},
     "threefry2x32 requires four uint32 arrays of one shape"),
]


@pytest.mark.parametrize("prim, operands, params, message", [
    pytest.param(*case, marks=task_marks(case[0].name), id=f"{case[0].name}-{case[1]}")
    for case in ERROR_CASES])
def test_rules_reject_bad_operands_with_a_type_error(prim, operands, params, message):
    in_avals = [aval(s) for s in operands.split()]
    with pytest.raises(TypeError, match=re.escape(message)):
        abstract_eval_rules[prim](*in_avals, **params)
