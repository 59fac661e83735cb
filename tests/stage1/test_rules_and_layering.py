"""The architecture's invariants: complete rule tables, dtype-preserving impls, stage layering,
package hygiene, and how ``bind`` and the interpreter stack behave."""

import ast
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import stage1_autodiff as jax
from stage1_autodiff import autodiff, core, custom_derivatives, primitives, random_distributions
from stage1_autodiff import numpy as jnp
from stage1_autodiff import prims as lax

Array = core.Array
TapeTrace, custom_vjp_call_p = autodiff.TapeTrace, autodiff.custom_vjp_call_p

REPO = Path(__file__).resolve().parents[2]

f32, i32, u32, b1 = (np.dtype(d) for d in (np.float32, np.int32, np.uint32, np.bool_))


def by_name(name: str) -> core.Primitive:
    matches = [p for p in core.all_primitives if p.name == name]
    assert len(matches) == 1, f"expected one primitive named {name!r}, found {len(matches)}"
    return matches[0]


# ------------------------------------------------------------------------------------------
# Rule tables
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table_name", ["impl_rules", "vjp_rules", "jvp_rules"])
def test_every_primitive_has_a_rule_in_every_stage1_table(table_name):
    table = getattr(core, table_name)
    missing = [p.name for p in core.all_primitives if p not in table]
    assert not missing, f"primitives without an entry in {table_name}: {missing}"


def test_rule_tables_hold_only_registered_primitives():
    known = set(core.all_primitives)
    for table_name in ("impl_rules", "vjp_rules", "jvp_rules"):
        extra = [p for p in getattr(core, table_name) if p not in known]
        assert not extra, f"{table_name} has rules for unregistered primitives: {extra}"


def test_primitive_names_are_unique():
    names = [p.name for p in core.all_primitives]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


# ------------------------------------------------------------------------------------------
# Primitive kinds: what later stages rely on when they treat a kind alike
# ------------------------------------------------------------------------------------------

REDUCTION, ELEMENTWISE = core.PrimitiveKind.REDUCTION, core.PrimitiveKind.ELEMENTWISE


def _reduction_dtypes(prim: core.Primitive) -> list[np.dtype]:
    if prim in (lax.reduce_and_p, lax.reduce_or_p):
        return [b1]
    return [f32, i32, u32] if prim in (lax.reduce_sum_p, lax.reduce_prod_p) else [f32, i32, b1]


@pytest.mark.parametrize("prim", core.primitives_of_kind(REDUCTION), ids=str)
def test_a_reduction_is_unchanged_by_its_identity(prim):
    """The law the kernels' accumulators rest on: combining the identity changes nothing."""
    rng = np.random.default_rng(0)
    for dtype in _reduction_dtypes(prim):
        x = (rng.normal(size=(3, 5)) * 4).astype(dtype)
        identity = np.full((1, 5), prim.identity(dtype), dtype)
        padded = np.concatenate([x, identity, x[:1]], axis=0)
        expected = core.impl_rules[prim](np.concatenate([x, x[:1]]), axes=(0,))
        np.testing.assert_array_equal(core.impl_rules[prim](padded, axes=(0,)), expected)


def test_only_a_reduction_has_an_identity():
    with pytest.raises(ValueError, match="only a reduction, has an identity"):
        core.Primitive("not_registered", identity=lambda dtype: 0)
    assert all((p.kind is REDUCTION) == (p.identity is not None) for p in core.all_primitives)


# ------------------------------------------------------------------------------------------
# Each impl keeps dtypes: one or more representative calls per primitive
# ------------------------------------------------------------------------------------------


def a(values, dtype=np.float32) -> Array:
    return Array(np.asarray(values, dtype=dtype))


X = a([0.25, 0.5, 0.75])          # float32, in the domain of every unary op
Y = a([1.5, 2.0, 2.5])
M = a([[1.0, 2.0], [3.0, 4.0]])
Z = a([0.25 + 1j, 0.5, -0.75j], np.complex64)
c64 = np.dtype(np.complex64)
ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))
POINTS = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
ROW_UPDATES = lax.ScatterDimensionNumbers((1,), (0,), (0,))  # whole rows at an index each
N = a([3, -7, 8], np.int32)
J = a([2, 3, -5], np.int32)
U = a([3, 7, 0xFFFFFFFF], np.uint32)
V = a([1, 2, 31], np.uint32)
B = a([True, False, True], np.bool_)
C = a([False, False, True], np.bool_)
IDX = a([[1], [0]], np.int32)     # picks rows 1 and 0 of M
SPD = a([[2.0, 1.0], [1.0, 2.0]])


@jax.custom_vjp
def _scaled(x):
    return x * 2.0


_scaled.defvjp(lambda x: (x * 2.0, None), lambda _, ct: (ct * 2.0,))


# Each case: a zero-argument call through the lax wrappers, and the dtype of every output.
DtypeCase = tuple[Callable[[], object], tuple[np.dtype, ...]]


def _unary_float(fn) -> list[DtypeCase]:
    return [(lambda: fn(X), (f32,))]


DTYPE_CASES: dict[str, list[DtypeCase]] = {
    "neg": [(lambda: lax.neg(X), (f32,)), (lambda: lax.neg(N), (i32,))],
    "exp": _unary_float(lax.exp),
    "log": _unary_float(lax.log),
    "log1p": _unary_float(lax.log1p),
    "expm1": _unary_float(lax.expm1),
    "sin": _unary_float(lax.sin),
    "cos": _unary_float(lax.cos),
    "tan": _unary_float(lax.tan),
    **{name: _unary_float(getattr(lax, name)) for name in
       ["sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "cbrt", "exp2"]},
    "tanh": _unary_float(lax.tanh),
    "logistic": [(lambda: lax.logistic(a([-3.0, 0.0, 3.0])), (f32,))],
    "sqrt": _unary_float(lax.sqrt),
    "abs": [(lambda: lax.abs(X), (f32,)), (lambda: lax.abs(N), (i32,))],
    "sign": [(lambda: lax.sign(X), (f32,)), (lambda: lax.sign(N), (i32,))],
    "floor": _unary_float(lax.floor),
    "ceil": _unary_float(lax.ceil),
    "integer_pow": [(lambda: lax.integer_pow(X, 3), (f32,)),
                    (lambda: lax.integer_pow(X, -2), (f32,)),
                    (lambda: lax.integer_pow(N, 2), (i32,))],
    "erf_inv": _unary_float(lax.erf_inv),
    **{name: _unary_float(getattr(lax, name)) for name in  # special.py
       ["rsqrt", "erf", "erfc", "lgamma", "digamma"]},
    "polygamma": [(lambda: lax.polygamma(a([0.0, 1.0, 2.0]), Y), (f32,))],
    **{name: [(lambda fn=getattr(lax, name): fn(a([0.5, 1.0, 3.0]), Y), (f32,))]
       for name in ["igamma", "igammac", "igamma_grad_a", "zeta"]},  # special_functions.py
    "regularized_incomplete_beta": [(lambda: lax.betainc(Y, Y, a([0.1, 0.5, 0.9])), (f32,))],
    "bessel_i0e": _unary_float(lax.bessel_i0e),
    "bessel_i1e": _unary_float(lax.bessel_i1e),
    **{name: _unary_float(getattr(lax, name)) for name in
       ["erfcx", "dawsn", "expi", "spence", "si", "ci", "fresnel_s", "fresnel_c"]},
    "owens_t": [(lambda: lax.owens_t(X, Y), (f32,))],
    "hyp1f1": [(lambda: lax.hyp1f1(X, Y, X), (f32,))],
    "hyp2f1": [(lambda: lax.hyp2f1(X, Y, Y, X), (f32,))],
    "expn": [(lambda: lax.expn(a([0.0, 1.0, 3.0]), Y), (f32,))],
    "clamp": [(lambda: lax.clamp(a([0.3, 0.3, 0.3]), X, a([0.6, 0.6, 0.6])), (f32,)),
              (lambda: lax.clamp(a([0, 0, 0], np.int32), N, a([4, 4, 4], np.int32)), (i32,))],
    "nextafter": [(lambda: lax.nextafter(X, Y), (f32,))],
    "reduce_precision": [(lambda: lax.reduce_precision(X, 5, 2), (f32,))],
    "not": [(lambda: lax.bitwise_not(B), (b1,)), (lambda: lax.bitwise_not(U), (u32,))],
    "add": [(lambda: lax.add(X, Y), (f32,)), (lambda: lax.add(N, J), (i32,)),
            (lambda: lax.add(U, V), (u32,))],
    "sub": [(lambda: lax.sub(X, Y), (f32,)), (lambda: lax.sub(U, V), (u32,))],
    "mul": [(lambda: lax.mul(X, Y), (f32,)), (lambda: lax.mul(U, V), (u32,))],
    "div": [(lambda: lax.div(X, Y), (f32,)), (lambda: lax.div(N, J), (i32,))],
    "rem": [(lambda: lax.rem(X, Y), (f32,)), (lambda: lax.rem(N, J), (i32,))],
    "pow": [(lambda: lax.pow(X, Y), (f32,))],
    "max": [(lambda: lax.max(X, Y), (f32,)), (lambda: lax.max(N, J), (i32,))],
    "min": [(lambda: lax.min(X, Y), (f32,)), (lambda: lax.min(U, V), (u32,))],
    "atan2": [(lambda: lax.atan2(X, Y), (f32,))],
    "eq": [(lambda: lax.eq(X, Y), (b1,)), (lambda: lax.eq(N, J), (b1,))],
    "ne": [(lambda: lax.ne(X, Y), (b1,))],
    "lt": [(lambda: lax.lt(X, Y), (b1,))],
    "le": [(lambda: lax.le(N, J), (b1,))],
    "gt": [(lambda: lax.gt(U, V), (b1,))],
    "ge": [(lambda: lax.ge(X, Y), (b1,))],
    "and": [(lambda: lax.bitwise_and(B, C), (b1,)), (lambda: lax.bitwise_and(U, V), (u32,))],
    "or": [(lambda: lax.bitwise_or(B, C), (b1,)), (lambda: lax.bitwise_or(N, J), (i32,))],
    "xor": [(lambda: lax.bitwise_xor(B, C), (b1,)), (lambda: lax.bitwise_xor(U, V), (u32,))],
    "shift_left": [(lambda: lax.shift_left(U, V), (u32,)),
                   (lambda: lax.shift_left(N, a([1, 2, 40], np.int32)), (i32,))],
    "shift_right_logical": [(lambda: lax.shift_right_logical(U, V), (u32,)),
                            (lambda: lax.shift_right_logical(N, a([1, 2, 3], np.int32)),
                             (i32,))],
    "shift_right_arithmetic": [
        (lambda: lax.shift_right_arithmetic(N, a([1, 2, 40], np.int32)), (i32,)),
        (lambda: lax.shift_right_arithmetic(U, V), (u32,))],
    "select_n": [(lambda: lax.select_n(B, X, Y), (f32,)),
                 (lambda: lax.select_n(a([0, 1, 2], np.int32), N, J, N), (i32,))],
    "convert_element_type": [(lambda: lax.convert_element_type(N, np.float32), (f32,)),
                             (lambda: lax.convert_element_type(X, np.int32), (i32,)),
                             (lambda: lax.convert_element_type(X, np.bool_), (b1,))],
    "bitcast_convert_type": [(lambda: jax.lax.bitcast_convert_type(X, np.uint32), (u32,)),
                             (lambda: jax.lax.bitcast_convert_type(U, np.float32), (f32,))],
    "stop_gradient": [(lambda: lax.stop_gradient(X), (f32,))],
    "copy": [(lambda: lax.copy_p.bind(X), (f32,))],
    "name": [(lambda: lax.name_p.bind(X, name="x"), (f32,))],
    "broadcast_in_dim": [(lambda: lax.broadcast_in_dim(X, (2, 3), (1,)), (f32,)),
                         (lambda: lax.broadcast_in_dim(a(1.0), (2,), ()), (f32,))],
    "reshape": [(lambda: lax.reshape(M, (4,)), (f32,))],
    "transpose": [(lambda: lax.transpose(M, (1, 0)), (f32,))],
    "squeeze": [(lambda: lax.squeeze(a([[1.0]]), (0, 1)), (f32,))],
    "concatenate": [(lambda: lax.concatenate([X, Y], 0), (f32,)),
                    (lambda: lax.concatenate([N, J], 0), (i32,))],
    "pad": [(lambda: lax.pad(X, a(0.0), [(1, 2, 1)]), (f32,))],
    "slice": [(lambda: lax.slice(X, (1,), (3,)), (f32,)),
              (lambda: lax.slice(M, (0, 0), (2, 2), (2, 1)), (f32,))],
    "rev": [(lambda: lax.rev(X, (0,)), (f32,))],
    "tile": [(lambda: lax.tile(M, (2, 1)), (f32,)),
             (lambda: lax.tile(jnp.asarray(np.arange(3, dtype=np.int32)), (2,)), (i32,))],
    "iota": [(lambda: lax.iota(np.int32, (2, 3), 1), (i32,)),
             (lambda: lax.iota(np.uint32, (4,)), (u32,)),
             (lambda: lax.iota(np.float32, (4,)), (f32,))],
    "reduce_sum": [(lambda: lax.reduce_sum(M, (0,)), (f32,)),
                   (lambda: lax.reduce_sum(N, (0,)), (i32,)),
                   (lambda: lax.reduce_sum(U, (0,)), (u32,))],
    "reduce_max": [(lambda: lax.reduce_max(M, (1,)), (f32,)),
                   (lambda: lax.reduce_max(N, (0,)), (i32,))],
    "reduce_min": [(lambda: lax.reduce_min(M, (0, 1)), (f32,))],
    "reduce_prod": [(lambda: lax.reduce_prod(M, (1,)), (f32,)),
                    (lambda: lax.reduce_prod(N, (0,)), (i32,))],
    "reduce_and": [(lambda: lax.reduce_and(B, (0,)), (b1,))],
    "reduce_or": [(lambda: lax.reduce_or(B, (0,)), (b1,))],
    "argmax": [(lambda: lax.argmax(M, 1), (i32,))],
    "argmin": [(lambda: lax.argmin(N, 0), (i32,))],
    "dot_general": [(lambda: lax.dot_general(M, M, (((1,), (0,)), ((), ()))), (f32,)),
                    (lambda: lax.dot_general(X, Y, (((0,), (0,)), ((), ()))), (f32,)),
                    (lambda: lax.dot_general(a(np.ones((2, 2, 3))), a(np.ones((2, 3, 4))),
                                             (((2,), (1,)), ((0,), (0,)))), (f32,)),
                    (lambda: lax.dot_general(N, J, (((0,), (0,)), ((), ()))), (i32,))],
    "gather": [(lambda: lax.gather(M, IDX, ROWS, (1, 2)), (f32,)),
               (lambda: lax.gather(N, a([[2], [0]], np.int32), POINTS, (1,)), (i32,))],
    "scatter_add": [(lambda: lax.scatter_add(M, IDX, a([[1.0, 1.0], [2.0, 2.0]]), ROW_UPDATES),
                     (f32,))],
    "scatter": [(lambda: lax.scatter(M, IDX, a([[1.0, 1.0], [2.0, 2.0]]), ROW_UPDATES),
                 (f32,))],
    "scatter_mul": [(lambda: lax.scatter_mul(M, IDX, a([[1.0, 1.0], [2.0, 2.0]]), ROW_UPDATES),
                     (f32,))],
    "scatter_min": [(lambda: lax.scatter_min(M, IDX, a([[1.0, 1.0], [2.0, 2.0]]), ROW_UPDATES),
                     (f32,))],
    "scatter_max": [(lambda: lax.scatter_max(N, a([[1]], np.int32), a([9], np.int32),
                                             lax.ScatterDimensionNumbers((), (0,), (0,))),
                     (i32,))],
    "sort": [(lambda: lax.sort([X]), (f32,)),
             (lambda: lax.sort([N, X], 0, num_keys=1), (i32, f32))],
    "threefry2x32": [(lambda: lax.threefry2x32(U, V, V, U), (u32, u32))],
    # windowed.py and convolution.py
    "reduce_window_sum": [(lambda: lax.reduce_window_sum(M, (2, 1), (1, 1), ((0, 0), (1, 0))),
                           (f32,)),
                          (lambda: lax.reduce_window_sum(N, (2,), (1,), ((0, 0),)), (i32,))],
    "reduce_window_max": [(lambda: lax.reduce_window_max(M, (1, 2), (1, 1), ((0, 0), (0, 1))),
                           (f32,)),
                          (lambda: lax.reduce_window_max(N, (2,), (1,), ((1, 0),)), (i32,))],
    "reduce_window_min": [(lambda: lax.reduce_window_min(X, (2,), (1,), ((0, 0),)), (f32,))],
    "conv_general_dilated": [
        (lambda: lax.conv_general_dilated(a(np.ones((1, 1, 3))), a(np.ones((1, 1, 2))), (1,),
                                          "SAME"), (f32,)),
        (lambda: lax.conv_general_dilated(a(np.ones((1, 1, 3)), np.int32),
                                          a(np.ones((1, 1, 2)), np.int32), (1,), "VALID"),
         (i32,))],
    # stage1_autodiff/cumulative.py and dynamic_slicing.py
    "cumsum": [(lambda: lax.cumsum(M, 1), (f32,)), (lambda: lax.cumsum(N, reverse=True), (i32,)),
               (lambda: lax.cumsum(U), (u32,))],
    "cumprod": [(lambda: lax.cumprod(M, 0), (f32,)), (lambda: lax.cumprod(N), (i32,))],
    "cummax": [(lambda: lax.cummax(X), (f32,)), (lambda: lax.cummax(U, reverse=True), (u32,))],
    "cummin": [(lambda: lax.cummin(M, 1), (f32,)), (lambda: lax.cummin(N), (i32,))],
    "top_k": [(lambda: lax.top_k(M, 1), (f32, i32)), (lambda: lax.top_k(U, 2), (u32, i32))],
    "dynamic_slice": [(lambda: lax.dynamic_slice(M, (1, 0), (1, 2)), (f32,)),
                      (lambda: lax.dynamic_slice(N, (a(2, np.int32),), (2,)), (i32,))],
    "dynamic_update_slice": [(lambda: lax.dynamic_update_slice(M, a([[7.0]]), (1, 1)), (f32,)),
                             (lambda: lax.dynamic_update_slice(U, V[:1], (2,)), (u32,))],
    # stage1_autodiff/random_distributions.py: one key (two words) per element
    "random_gamma": [(lambda: random_distributions.random_gamma_p.bind(
        U, V, a([0.5, 1.0, 3.0]), log_space=False), (f32,))],
    "random_gamma_grad": [(lambda: random_distributions.random_gamma_grad(
        a([0.5, 1.0, 3.0]), a([0.2, 1.0, 4.0])), (f32,))],
    "random_poisson": [(lambda: random_distributions.random_poisson_p.bind(
        a([0, 7], np.uint32), a([0.5, 3.0, 30.0]), dtype=i32), (i32,))],
    # stage1_autodiff/linalg.py (lax.linalg), on SPD, a symmetric positive-definite matrix
    "cholesky": [(lambda: jax.lax.linalg.cholesky(SPD), (f32,))],
    "triangular_solve": [(lambda: jax.lax.linalg.triangular_solve(SPD, M, lower=True), (f32,))],
    "lu": [(lambda: jax.lax.linalg.lu(M), (f32, i32, i32))],
    "qr": [(lambda: jax.lax.linalg.qr(M), (f32, f32))],
    "eigh": [(lambda: jax.lax.linalg.eigh(SPD), (f32, f32))],
    "eig": [(lambda: jax.lax.linalg.eig(M), (c64, c64, c64)),
            (lambda: jax.lax.linalg.eig(M, compute_left_eigenvectors=False), (c64, c64))],
    "svd": [(lambda: jax.lax.linalg.svd(M), (f32, f32, f32)),
            (lambda: jax.lax.linalg.svd(M, compute_uv=False), (f32,))],
    # At the eval level a custom_vjp function just runs; bind the primitive itself.
    # complex_numbers.py and fft.py
    "real": [(lambda: jax.lax.real(Z), (f32,))],
    "imag": [(lambda: jax.lax.imag(Z), (f32,))],
    "conj": [(lambda: jax.lax.conj(Z), (c64,))],
    "complex": [(lambda: jax.lax.complex(X, Y), (c64,))],
    "fft": [(lambda: jax.lax.fft(Z, "fft", (3,)), (c64,)),
            (lambda: jax.lax.fft(Z, "ifft", (3,)), (c64,)),
            (lambda: jax.lax.fft(X, "rfft", (3,)), (c64,)),
            (lambda: jax.lax.fft(Z, "irfft", (4,)), (f32,))],
    "custom_vjp_call": [(lambda: custom_vjp_call_p.bind(X, fun=lambda x: [jnp.multiply(x, 2.0)]),
                         (f32,))],
    "custom_jvp_call": [(lambda: custom_derivatives.custom_jvp_call_p.bind(
        X, fun=lambda x: [jnp.multiply(x, 2.0)], jvp=None), (f32,))],
}


def _outputs(result) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _stage1_primitives():
    """The primitives stage 1 defines (later stages, when imported, add their own)."""
    from stage1_autodiff import autodiff, prims
    return [v for module in (prims, autodiff, random_distributions, custom_derivatives)
            for v in vars(module).values()
            if isinstance(v, core.Primitive)]


def test_dtype_table_covers_every_primitive():
    """A new primitive must come with a dtype case here (and rules in every table)."""
    names = {p.name for p in _stage1_primitives()}
    assert names - DTYPE_CASES.keys() == set(), "add a DTYPE_CASES entry for these primitives"
    assert DTYPE_CASES.keys() - names == set(), "DTYPE_CASES names primitives that don't exist"


def _impl_calls(prim: core.Primitive) -> list[tuple[tuple, dict]]:
    """The (operands, params) each of ``prim``'s dtype cases hands its impl."""
    calls, original = [], core.impl_rules[prim]

    def spy(*args, **params):
        calls.append((args, params))
        return original(*args, **params)

    core.impl_rules[prim] = spy
    try:
        for call, _ in DTYPE_CASES[prim.name]:
            call()
    finally:
        core.impl_rules[prim] = original
    return calls


@pytest.mark.parametrize("prim", core.primitives_of_kind(ELEMENTWISE), ids=str)
def test_an_elementwise_impl_maps_over_elements(prim):
    """What batching, sharding and fusion assume of every primitive declared elementwise:
    the result on the whole operands is the results on pieces of them, put together (so a
    batch, a shard or a loop iteration can be computed alone)."""
    for operands, params in _impl_calls(prim):
        n = np.shape(operands[0])[0]
        assert all(np.shape(x)[:1] == (n,) for x in operands), "a case of equal shapes"
        whole = _outputs(core.impl_rules[prim](*operands, **params))
        pieces = [_outputs(core.impl_rules[prim](*[x[i:i + 1] for x in operands], **params))
                  for i in range(n)]
        for k, result in enumerate(whole):
            np.testing.assert_array_equal(result, np.concatenate([p[k] for p in pieces]))


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64_mode(request):
    """Both settings of jax_enable_x64: float32 inputs stay float32 either way."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    try:
        yield request.param
    finally:
        jax.config.update("jax_enable_x64", previous)


@pytest.mark.parametrize("name", sorted(DTYPE_CASES))
def test_impl_keeps_dtypes(name, x64_mode):
    prim = by_name(name)
    for call, expected in DTYPE_CASES[name]:
        calls = []
        original = core.impl_rules[prim]

        def spy(*args, **params):
            calls.append(1)
            return original(*args, **params)

        core.impl_rules[prim] = spy  # the case must reach this primitive's impl
        try:
            outs = _outputs(call())
        finally:
            core.impl_rules[prim] = original
        assert calls, f"the {name} case never bound {name}"
        assert len(outs) == len(expected)
        for out, dtype in zip(outs, expected):
            assert isinstance(out, Array)
            assert out.dtype == dtype, f"{name}: got {out.dtype}, expected {dtype}"
            assert out._value.dtype == dtype  # the buffer itself, not only the aval


SCALAR_CASES = {  # 0-d inputs: where NumPy returns scalars and Python floats sneak in
    "exp": lambda: lax.exp(a(0.5)),
    "log": lambda: lax.log(a(0.5)),
    "logistic": lambda: lax.logistic(a(-2.0)),
    "erf_inv": lambda: lax.erf_inv(a(0.5)),
    "integer_pow": lambda: lax.integer_pow(a(0.5), -3),
    "div": lambda: lax.div(a(1.0), a(3.0)),
    "rem": lambda: lax.rem(a(1.0), a(0.3)),
    "pow": lambda: lax.pow(a(2.0), a(0.5)),
    "atan2": lambda: lax.atan2(a(1.0), a(2.0)),
    "tanh": lambda: lax.tanh(a(0.3)),
    "reduce_sum": lambda: lax.reduce_sum(a(2.0), ()),
    "reduce_prod": lambda: lax.reduce_prod(X, (0,)),
    "dot_general": lambda: lax.dot_general(X, Y, (((0,), (0,)), ((), ()))),
}


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_impl_keeps_float32_on_0d_inputs(name):
    out = SCALAR_CASES[name]()
    assert out.shape == ()
    assert out.dtype == f32 and out._value.dtype == f32


# ------------------------------------------------------------------------------------------
# Stage layering and package hygiene
# ------------------------------------------------------------------------------------------

STAGE_DIR = re.compile(r"^stage(\d+)_\w+$")
STAGE_MODULE = re.compile(r"^stage(\d+)_")


def stage_packages(root: Path = REPO) -> dict[str, tuple[int, Path]]:
    """Every stage at the repo root: package name -> (stage number, package folder)."""
    found = {}
    for folder in sorted(root.iterdir()):
        match = STAGE_DIR.match(folder.name)
        if match and (folder / "src" / folder.name).is_dir():
            found[folder.name] = (int(match.group(1)), folder / "src" / folder.name)
    return found


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in a file, including
    ``importlib.import_module("...")`` and ``__import__("...")`` with a literal name. Relative
    imports stay inside the package, so they are skipped."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, first.value


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def layering_violations(root: Path) -> list[str]:
    """Imports of a later stage, by any stage under ``root``. Names of stages that don't exist
    yet count too, so stage 1 can't import stage2_jit before stage 2 is written."""
    packages = stage_packages(root)
    violations = []
    for name, (number, folder) in packages.items():
        for path in sorted(folder.rglob("*.py")):
            for line, module in sorted(imported_modules(path)):
                match = STAGE_MODULE.match(module)
                if match and int(match.group(1)) > number:
                    violations.append(f"{path.relative_to(root)}:{line} imports {module}")
    return violations


def test_stage1_is_found_by_the_layering_scan():
    packages = stage_packages()
    assert packages.get("stage1_autodiff", (None,))[0] == 1
    assert len(list(packages["stage1_autodiff"][1].rglob("*.py"))) >= 10


def test_no_stage_imports_a_later_stage():
    violations = layering_violations(REPO)
    assert not violations, "a stage may import only earlier stages:\n" + "\n".join(violations)


def test_layering_scan_catches_forward_imports(tmp_path):
    """The scan itself works, on a made-up repo with two stages."""
    for name in ("stage1_autodiff", "stage2_jit"):
        (tmp_path / name / "src" / name / "sub").mkdir(parents=True)
    stage1 = tmp_path / "stage1_autodiff" / "src" / "stage1_autodiff"
    stage2 = tmp_path / "stage2_jit" / "src" / "stage2_jit"
    (stage1 / "ok.py").write_text("import numpy\nfrom . import core\nimport stage1_autodiff\n")
    (stage1 / "sub" / "bad.py").write_text(
        "from stage2_jit.core import jit\n"
        "def f():\n    import stage4_sharding.mesh as m\n"
        "import importlib\nimportlib.import_module('stage3_vmap')\n")
    (stage2 / "ok.py").write_text("import stage1_autodiff\nfrom stage1_autodiff import lax\n")
    violations = layering_violations(tmp_path)
    assert violations == [
        "stage1_autodiff/src/stage1_autodiff/sub/bad.py:1 imports stage2_jit.core",
        "stage1_autodiff/src/stage1_autodiff/sub/bad.py:3 imports stage4_sharding.mesh",
        "stage1_autodiff/src/stage1_autodiff/sub/bad.py:5 imports stage3_vmap",
    ]


def private_imports_across_stages(root: Path) -> list[str]:
    """Names a stage imports from another stage that are private there (``_name``, or any
    name from a ``_module``): what a later stage needs must be public API of the earlier."""
    found = []
    for name, (_, folder) in stage_packages(root).items():
        for path in sorted(folder.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                    continue
                parts = node.module.split(".")
                if not STAGE_MODULE.match(parts[0]) or parts[0] == name:
                    continue
                private_module = any(part.startswith("_") for part in parts[1:])
                found += [f"{path.relative_to(root)}:{node.lineno} {node.module}.{alias.name}"
                          for alias in node.names
                          if private_module or alias.name.startswith("_")]
    return found


def test_no_private_name_crosses_a_stage_boundary():
    found = private_imports_across_stages(REPO)
    assert not found, "make these public API of their stage:\n" + "\n".join(found)


def package_imports(folder: Path, package: str) -> dict[str, set[str]]:
    """Which of a package's modules each of its modules imports, anywhere in the file (an
    import inside a function is a dependency too): relative imports and absolute ones."""
    modules = {path.stem for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1:
                deps.update([node.module.split(".")[0]] if node.module else
                            [alias.name for alias in node.names])
            elif node.level == 0 and (node.module or "").startswith(package + "."):
                deps.add(node.module.split(".")[1])
        graph[path.stem] = (deps & modules) - {path.stem}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules that import each other, directly or through others (the
    strongly connected components of more than one module)."""
    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for dep in graph[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    reach = {module: reachable(module) for module in graph}
    circles = []
    for module in sorted(graph):
        circle = {m for m in reach[module] if module in reach[m]} | {module}
        if len(circle) > 1 and circle not in circles:
            circles.append(circle)
    return circles


# The largest group of modules a stage may have that import each other: none in stage 2,
# where a reader follows the compiler one way (issue 16); in stage 1, random.py re-exports the
# distributions of random_distributions.py, which build on it (the primitive modules read one
# way: primitives.py, the modules that build on it, and prims.py naming them all).
MAX_CIRCLE = {"stage1_autodiff": 2, "stage2_jit": 1, "stage3_vmap": 1, "stage4_sharding": 2}


@pytest.mark.parametrize("package", sorted(MAX_CIRCLE))
def test_import_circles_stay_small(package):
    folder = REPO / package / "src" / package
    circles = import_circles(package_imports(folder, package))
    too_large = [sorted(c) for c in circles if len(c) > MAX_CIRCLE[package]]
    assert not too_large, f"modules of {package} that import each other: {too_large}"


def test_import_circles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [{"a", "b", "c"}]


def _requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", requirement.strip()).group(0).lower().replace("-", "_")


def test_stage1_depends_on_numpy_only():
    pyproject = tomllib.loads((REPO / "stage1_autodiff" / "pyproject.toml").read_text())
    project = pyproject["project"]
    names = [_requirement_name(r) for r in project.get("dependencies", [])]
    assert names == ["numpy", "ml_dtypes"]  # ml_dtypes: bfloat16, as JAX has it
    # No optional extras that would pull in more at install time either.
    assert not project.get("optional-dependencies")


def test_no_stage_depends_on_a_later_stage():
    packages = stage_packages()
    for name, (number, _) in packages.items():
        pyproject = tomllib.loads((REPO / name / "pyproject.toml").read_text())
        for requirement in pyproject["project"].get("dependencies", []):
            match = re.match(r"stage(\d+)_", _requirement_name(requirement))
            assert not match or int(match.group(1)) < number, f"{name} depends on {requirement}"


# ------------------------------------------------------------------------------------------
# Interpreter semantics
# ------------------------------------------------------------------------------------------


def test_bind_with_no_active_interpreter_runs_the_impl(monkeypatch):
    assert len(core.trace_state.trace_stack) == 1
    assert core.trace_state.trace_stack[0].trace_type is core.EvalTrace
    calls = []
    original = core.impl_rules[lax.sin_p]

    def spy(x):
        calls.append(x)
        return original(x)

    monkeypatch.setitem(core.impl_rules, lax.sin_p, spy)
    x = np.array([0.0, 1.0], np.float32)
    out = lax.sin_p.bind(Array(x))
    assert type(out) is Array
    assert len(calls) == 1 and isinstance(calls[0], np.ndarray)
    np.testing.assert_array_equal(out._value, np.sin(x))


def test_bind_lifts_python_scalars_and_numpy_arrays():
    out = lax.add_p.bind(np.float32(1.5), 2.5)
    assert type(out) is Array and float(out) == 4.0


def _current_tape():
    main = core.trace_state.trace_stack[-1]
    assert main.trace_type is TapeTrace
    return main.global_data


def test_tape_records_one_entry_per_primitive_on_tracked_values():
    seen = {}
    c = jnp.array(2.0)

    def f(x):
        tape = _current_tape()
        constant = jnp.sin(c) * jnp.cos(c)  # constants only: evaluated, never taped
        assert type(constant) is Array
        y = jnp.sin(x) * c + constant        # sin, mul, add on a tracked value
        seen["names"] = [e.prim.name for e in tape.entries]
        seen["in_nodes"] = [e.in_nodes for e in tape.entries]
        return y

    g = jax.grad(f)(jnp.array(0.5))
    assert seen["names"] == ["sin", "mul", "add"]
    # The constant operands of mul and add have no node: no gradient flows to them.
    assert seen["in_nodes"][1][1] is None and seen["in_nodes"][2][1] is None
    np.testing.assert_allclose(g, np.cos(0.5) * 2.0, rtol=1e-6)


def test_tape_records_nothing_for_constants_lifted_into_the_trace():
    seen = {}

    def f(x):
        main = core.trace_state.trace_stack[-1]
        tape = _current_tape()
        before = len(tape.entries)
        k = core.full_raise(TapeTrace(main), jnp.array(3.0))  # a TapeTracer with no node
        z = jnp.exp(k) + jnp.sin(k)
        assert isinstance(z, core.Tracer) and z.node is None
        seen["added"] = len(tape.entries) - before
        return x * 2.0

    assert float(jax.grad(f)(1.0)) == 2.0
    assert seen["added"] == 0


def test_tape_records_each_use_of_a_primitive():
    seen = {}

    def f(x):
        tape = _current_tape()
        y = x
        for _ in range(4):
            y = jnp.sin(y)
        seen["names"] = [e.prim.name for e in tape.entries]
        return y

    jax.grad(f)(jnp.array(0.3))
    assert seen["names"] == ["sin"] * 4


def test_interpreter_stack_is_restored_after_grad_and_after_errors():
    depth = len(core.trace_state.trace_stack)
    jax.grad(jnp.sin)(1.0)
    with pytest.raises(ZeroDivisionError):
        jax.grad(lambda x: x * (1 // 0))(1.0)
    assert len(core.trace_state.trace_stack) == depth


def test_outer_value_is_a_constant_to_the_inner_grad():
    """Perturbation confusion: d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1, not 2."""
    def outer(x):
        return x * jax.grad(lambda y: x + y)(1.0)

    assert float(jax.grad(outer)(2.0)) == 1.0


def test_inner_tape_does_not_record_outer_only_operations():
    seen = {}

    def outer(x):
        outer_tape = _current_tape()

        def inner(y):
            inner_tape = _current_tape()
            assert inner_tape is not outer_tape
            before_outer = len(outer_tape.entries)
            z = x * x                       # outer values only: the outer tape's business
            seen["inner_after_outer_op"] = len(inner_tape.entries)
            seen["outer_grew"] = len(outer_tape.entries) - before_outer
            out = z * y                     # mixes levels: the inner tape records it
            seen["inner_names"] = [e.prim.name for e in inner_tape.entries]
            return out

        return jax.grad(inner)(3.0)         # = x * x

    result = jax.grad(outer)(2.0)           # d/dx of x * x = 2x
    assert float(result) == 4.0
    assert seen["inner_after_outer_op"] == 0
    assert seen["outer_grew"] == 1
    assert seen["inner_names"] == ["mul"]


def test_levels_increase_with_nesting():
    levels = []

    def inner(y):
        levels.append(y._trace.main.level)
        return y * 2.0

    def outer(x):
        levels.append(x._trace.main.level)
        return jax.grad(inner)(x)

    jax.grad(outer)(1.0)
    assert levels[1] == levels[0] + 1 and levels[0] == len(core.trace_state.trace_stack)


def test_jvp_of_grad_and_grad_of_jvp_agree():
    """Nesting different interpreters: second derivative of sin both ways."""
    x = 0.7
    fwd_over_rev = jax.jvp(jax.grad(jnp.sin), (x,), (1.0,))[1]
    rev_over_fwd = jax.grad(lambda x: jax.jvp(jnp.sin, (x,), (1.0,))[1])(x)
    np.testing.assert_allclose(fwd_over_rev, -np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(rev_over_fwd, -np.sin(x), rtol=1e-6)


def test_custom_vjp_call_is_its_own_primitive_on_the_tape():
    seen = {}

    def f(x):
        tape = _current_tape()
        y = _scaled(x)
        seen["prims"] = [e.prim for e in tape.entries]
        return y

    assert float(jax.grad(f)(1.0)) == 2.0
    assert seen["prims"] == [custom_vjp_call_p]


@pytest.mark.parametrize("operand, shape, dims", [
    (np.arange(3, dtype=np.float32), (2, 3), (1,)),
    (np.arange(3.0), (3, 2), (0,)),  # a column
    (np.float32(2.5), (2, 2), ()),  # a NumPy scalar, as an impl may be given
    (np.arange(6).reshape(2, 3)[:, ::-1], (4, 2, 3), (1, 2)),  # not contiguous: as_strided
    (np.ones((1, 3), np.int8), (5, 3), (0, 1)),  # a stretched dim of size 1
    (np.arange(3).astype(ml_dtypes.bfloat16), (2, 3), (1,)),  # no buffer export: as_strided
    (np.ones((0, 3)), (2, 0, 3), (1, 2)),
    (np.array([True, False]), (3, 2), (1,)),
])
def test_broadcast_in_dim_impl_is_a_read_only_view_equal_to_broadcast_to(operand, shape, dims):
    out = core.impl_rules[primitives.broadcast_in_dim_p](operand, shape=shape,
                                                         broadcast_dimensions=dims)
    value = np.asarray(operand)
    expanded = [1] * len(shape)
    for operand_dim, out_dim in enumerate(dims):
        expanded[out_dim] = value.shape[operand_dim]
    want = np.broadcast_to(value.reshape(expanded), shape)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)
    assert not out.flags.writeable
    if isinstance(operand, np.ndarray) and operand.size:  # a view, not a copy
        assert np.shares_memory(out, operand)
