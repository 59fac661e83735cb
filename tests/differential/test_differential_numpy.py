"""Every ``jnp`` function we export that JAX has, called on seeded random inputs, against JAX:
its result (structure, dtype, weak type, shape, values) or its error, and the gradient of a
scalar of it with respect to its float arguments.

The table says how each name is called: an expression over ``a``, ``b``, ``c`` and the kind of
input each is (``f`` float32, ``i`` int32, ``b`` bool, ``pyf`` a Python float, ... with an
optional fixed shape, ``f@2,3``). Unshaped inputs of one call share a drawn shape (later ones
broadcast to it). A name we export without a row here fails ``test_every_name_has_a_call``.
"""

from __future__ import annotations

import inspect
import zlib
from types import ModuleType

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import calls_more_numpy  # noqa: E402
import calls_nn_and_linalg  # noqa: E402
import oracle  # noqa: E402
import stage1_autodiff.nn as ours_nn  # noqa: E402
import stage1_autodiff.numpy as ours_jnp  # noqa: E402
import stage4_sharding.numpy as sjnp  # noqa: E402
from oracle import Outcome, compare  # noqa: E402
from random_programs import broadcastable_to, draw_shape  # noqa: E402
from table import (  # noqa: E402
    ARITHMETIC,
    BITWISE,
    COMPARISON,
    DIVISION,
    Call,
    arg_reduction,
    binary,
    call,
    reduction,
    unary,
)

import stage4_sharding as sj  # noqa: E402

# Names of ours that JAX's jax.numpy does not have, each with its reason (the "Differences
# from JAX" page lists them, test_documented_differences.py checks them).
OURS_ONLY = {
    "Array": "the array class, which JAX exports as jax.Array (and jnp.ndarray)",
}


CALLS: dict[str, list[Call]] = {
    # ufuncs
    "abs": unary("abs", "f", "i"), "absolute": unary("absolute", "f", "i"),
    "negative": unary("negative", "f", "i"), "sign": unary("sign", "f", "i"),
    "square": unary("square", "f", "i"), "ceil": unary("ceil", "f", "i"),
    "floor": unary("floor", "f", "i"),
    "cos": unary("cos", "f", "i"), "sin": unary("sin", "f", "pyf"),
    "tan": unary("tan", "funit"), "tanh": unary("tanh", "f", "i"),
    "exp": unary("exp", "f", "i", "pyi"), "expm1": unary("expm1", "f"),
    "log": unary("log", "fpos", "ipos"), "log1p": unary("log1p", "funit"),
    "sqrt": unary("sqrt", "fpos", "ipos"), "reciprocal": unary("reciprocal", "fnz"),
    "isfinite": unary("isfinite", "f", "i"), "isinf": unary("isinf", "f"),
    "isnan": unary("isnan", "f"),
    "logical_not": unary("logical_not", "b", "i"),
    "invert": unary("invert", "i", "b"), "bitwise_not": unary("bitwise_not", "i", "b"),
    "add": binary("add", *ARITHMETIC), "subtract": binary("subtract", *ARITHMETIC[:-2]),
    "multiply": binary("multiply", *ARITHMETIC),
    "maximum": binary("maximum", *ARITHMETIC), "minimum": binary("minimum", *ARITHMETIC),
    "divide": binary("divide", *DIVISION), "true_divide": binary("true_divide", *DIVISION),
    "floor_divide": binary("floor_divide", *DIVISION),
    "mod": binary("mod", *DIVISION), "remainder": binary("remainder", *DIVISION),
    "fmod": binary("fmod", *DIVISION), "divmod": binary("divmod", *DIVISION),
    "power": binary("power", "fpos f", "i ishift", "fpos pyf", "f pyi", "ipos pyi"),
    "arctan2": binary("arctan2", "f f", "f pyf", "i i"),
    "equal": binary("equal", *COMPARISON), "not_equal": binary("not_equal", *COMPARISON),
    "greater": binary("greater", *COMPARISON), "less": binary("less", *COMPARISON),
    "greater_equal": binary("greater_equal", *COMPARISON),
    "less_equal": binary("less_equal", *COMPARISON),
    "logical_and": binary("logical_and", "b b", "b i"),
    "logical_or": binary("logical_or", "b b", "i i"),
    "logical_xor": binary("logical_xor", "b b", "b pyb"),
    "bitwise_and": binary("bitwise_and", *BITWISE), "bitwise_or": binary("bitwise_or", *BITWISE),
    "bitwise_xor": binary("bitwise_xor", *BITWISE),
    "left_shift": binary("left_shift", "i ishift", "i pyi"),
    "right_shift": binary("right_shift", "i ishift", "i pyi"),
    "where": [call("jnp.where(c, a, b)", c="b", a="f", b="f"),
              call("jnp.where(c, a, b)", c="b", a="i", b="pyf"),
              call("jnp.where(a > 0, a, 0.0)", a="f"), call("jnp.where(a > 0)", a="f@2,3"),
              call("jnp.where(a, size=4, fill_value=-1)", a="b@5")],
    "clip": [call("jnp.clip(a, -0.5, 0.5)", a="f"), call("jnp.clip(a, min=0)", a="i"),
             call("jnp.clip(a, b, 1.0)", a="f", b="f")],
    "astype": [call("jnp.astype(a, jnp.int32)", a="f"), call("jnp.astype(a, jnp.float32)", a="i"),
               call("jnp.astype(a, jnp.bool_)", a="f"), call("a.astype(jnp.uint32)", a="ipos")],
    # reductions
    "sum": reduction("sum") + reduction("sum", "i")[:2] + unary("sum", "b", "pyf") + [
        call("jnp.sum(a, axis=1, where=b > 0, initial=2.0)", a="f@3,4", b="f@3,4"),
        call("jnp.sum(a, where=b, promote_integers=False)", a="i@3", b="b@3")],
    "prod": reduction("prod", "funit") + [
        call("jnp.prod(a, axis=0, where=a > 0, initial=-1.5)", a="funit@3,2"),
        call("jnp.prod(a, promote_integers=False)", a="i@3")],
    "mean": reduction("mean") + reduction("mean", "i")[:1] + unary("mean", "pyi") + [
        call("jnp.mean(a, axis=0, where=b > -1)", a="f@3,2", b="f@3,2"),
        call("jnp.mean(a, where=b, keepdims=True)", a="i@2,3", b="b@3")],
    "max": reduction("max") + unary("max", "pyi") + [
        call("jnp.max(a, axis=1, where=a < 1, initial=-3.0)", a="f@3,4"),
        call("jnp.max(a, initial=2)", a="i@4")],
    "min": reduction("min") + [call("jnp.min(a, axis=0, where=b, initial=1.0)", a="f@2,3",
                                    b="b@2,3")],
    "amax": reduction("amax", "i"),
    "amin": reduction("amin"),
    "all": reduction("all", "b") + [call("jnp.all(a, axis=0, where=b)", a="b@3,2", b="b@3,2")],
    "any": reduction("any", "i") + [call("jnp.any(a > 0, where=b)", a="f@4", b="b@4")],
    "var": reduction("var") + [call("jnp.var(a, ddof=1)", a="f@5"),
                               call("jnp.var(a, axis=1, where=b > -1, ddof=1)", a="f@3,4",
                                    b="f@3,4"),
                               call("jnp.var(a, axis=0, mean=jnp.mean(a, axis=0, keepdims=True), "
                                    "correction=1)", a="f@4,2")],
    "std": reduction("std") + [call("jnp.std(a, axis=0, ddof=1)", a="f@4,3"),
                               call("jnp.std(a, where=a > 0, correction=0.5)", a="f@6")],
    "argmax": arg_reduction("argmax"), "argmin": arg_reduction("argmin"),
    # creation
    "arange": [call("jnp.arange(5)"), call("jnp.arange(1, 7, 2)"),
               call("jnp.arange(0.0, 1.0, 0.25)"), call("jnp.arange(3, dtype=jnp.float32)"),
               call("jnp.arange(5, 1, -1)")],
    "array": [call("jnp.array([[1, 2], [3, 4]])"), call("jnp.array([1.5, 2])"),
              call("jnp.array(a)", a="f"), call("jnp.array(2.5)"), call("jnp.array(a, jnp.int32)",
                                                                         a="f"),
              call("jnp.array(a, ndmin=3)", a="i@2"), call("jnp.array(1.5, ndmin=1)")],
    "asarray": [call("jnp.asarray(a)", a="i"), call("jnp.asarray(3)"), call("jnp.asarray(True)"),
                call("jnp.asarray([1.0, 2.0], dtype=jnp.int32)")],
    "eye": [call("jnp.eye(3)"), call("jnp.eye(3, 4, k=1)"), call("jnp.eye(2, dtype=jnp.int32)")],
    "identity": [call("jnp.identity(3)"), call("jnp.identity(2, dtype=jnp.bool_)")],
    "full": [call("jnp.full((2, 3), 1.5)"), call("jnp.full(3, 7)"),
             call("jnp.full((2,), 1, dtype=jnp.float32)")],
    "full_like": [call("jnp.full_like(a, 2)", a="f"), call("jnp.full_like(a, 0.5)", a="i"),
                  call("jnp.full_like(a, 2)", a="pyf")],
    "linspace": [call("jnp.linspace(0, 1, 5)"), call("jnp.linspace(-1.0, 2.0, 4, endpoint=False)"),
                 call("jnp.linspace(a, b, 4, axis=-1)", a="f", b="f"),
                 call("jnp.linspace(a, 3, 5, retstep=True)", a="f@2"),
                 call("jnp.linspace(-3.0, a, 4, dtype=jnp.int32)", a="fpos@"),
                 call("jnp.linspace(a, 1j, 3)", a="f@"), call("jnp.linspace(a, 2, 1)", a="f@2")],
    "geomspace": [call("jnp.geomspace(1, 1000, 4)"), call("jnp.geomspace(-1.0, -8.0, 4)"),
                  call("jnp.geomspace(a, 10.0, 3, axis=1)", a="fpos@2")],
    "ones": [call("jnp.ones((2, 3))"), call("jnp.ones(4, dtype=jnp.int32)")],
    "zeros": [call("jnp.zeros((2,))"), call("jnp.zeros((), jnp.bool_)")],
    "ones_like": [call("jnp.ones_like(a)", a="i"), call("jnp.ones_like(a, dtype=jnp.float32)",
                                                        a="b"), call("jnp.ones_like(a)", a="pyi")],
    "zeros_like": [call("jnp.zeros_like(a)", a="f"), call("jnp.zeros_like(a)", a="pyf")],
    # shapes
    "reshape": [call("jnp.reshape(a, (3, -1))", a="f@2,3,2"), call("jnp.reshape(a, (-1,))", a="f"),
                call("a.reshape(2, 6)", a="f@3,4")],
    "ravel": unary("ravel", "f", "i"), "atleast_1d": unary("atleast_1d", "pyf", "f@", "f@2,2"),
    "atleast_2d": unary("atleast_2d", "pyf", "f@3", "f@2,2"),
    "shape": unary("shape", "f", "pyf"), "ndim": unary("ndim", "f", "pyi"),
    "size": unary("size", "f", "pyf") + [call("jnp.size(a, 1)", a="f@2,3,4"),
                                         call("jnp.size(a, (0, -1))", a="f@2,3,4")],
    "transpose": [call("jnp.transpose(a)", a="f"), call("jnp.transpose(a, (1, 0, 2))",
                                                        a="f@2,3,4")],
    "swapaxes": [call("jnp.swapaxes(a, 0, -1)", a="f@2,3,4")],
    "moveaxis": [call("jnp.moveaxis(a, 0, -1)", a="f@2,3,4"),
                 call("jnp.moveaxis(a, (0, 1), (2, 0))", a="f@2,3,4")],
    "expand_dims": [call("jnp.expand_dims(a, 1)", a="f@2,3"),
                    call("jnp.expand_dims(a, (0, -1))", a="f@2")],
    "squeeze": [call("jnp.squeeze(a)", a="f@1,3,1"), call("jnp.squeeze(a, axis=2)", a="f@1,3,1")],
    "flip": [call("jnp.flip(a)", a="f"), call("jnp.flip(a, 1)", a="f@2,3"),
             call("jnp.flip(a, (0, 2))", a="f@2,3,2")],
    "broadcast_to": [call("jnp.broadcast_to(a, (4, 3))", a="f@3"),
                     call("jnp.broadcast_to(a, (2, 3))", a="pyf")],
    "broadcast_arrays": [call("jnp.broadcast_arrays(a, b)", a="f@3,1", b="i@4")],
    "concatenate": [call("jnp.concatenate([a, b])", a="f@2,3", b="f@1,3"),
                    call("jnp.concatenate([a, b], axis=1)", a="f@2,3", b="i@2,2"),
                    call("jnp.concatenate([a, b], axis=None)", a="f@2,3", b="f@4"),
                    call("jnp.concatenate([a, b], dtype=jnp.float16)", a="f@2", b="i@1")],
    "stack": [call("jnp.stack([a, b])", a="f@2,3", b="f@2,3"),
              call("jnp.stack([a, b], axis=-1)", a="i@3", b="f@3"),
              call("jnp.stack([a, b], dtype=jnp.int32)", a="f@2", b="f@2")],
    "split": [call("jnp.split(a, 2)", a="f@4,3"), call("jnp.split(a, [1, 3], axis=1)",
                                                       a="f@2,5")],
    "tile": [call("jnp.tile(a, 2)", a="f@3"), call("jnp.tile(a, (2, 1, 2))", a="f@2,3")],
    # contractions
    "dot": [call("jnp.dot(a, b)", a="f@3", b="f@3"), call("jnp.dot(a, b)", a="f@2,3", b="f@3,4"),
            call("jnp.dot(a, b)", a="f@2,3,4", b="f@4,2"), call("jnp.dot(a, b)", a="i@2,3",
                                                                 b="f@3"),
            call("jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST)", a="f@2,3", b="f@3"),
            call("jnp.dot(a.astype(jnp.int8) * 40, b.astype(jnp.int8) * 40, "
                 "preferred_element_type=jnp.int32)", a="i@2,3", b="i@3,2"),
            call("jnp.dot(a, b, precision=('high', 'default'), "
                 "preferred_element_type=jnp.float32)", a="pyf", b="i@2")],
    "matmul": [call("jnp.matmul(a, b)", a="f@2,3,4", b="f@4,5"),
               call("jnp.matmul(a, b)", a="f@4", b="f@2,4,3"), call("a @ b", a="i@2,3", b="i@3"),
               call("jnp.matmul(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), precision="
                    "'highest', preferred_element_type=jnp.float32)", a="f@2,2,3", b="f@3,4")],
    "einsum": [call("jnp.einsum('ij,jk->ik', a, b)", a="f@2,3", b="f@3,4"),
               call("jnp.einsum('...ij,jk->...ik', a, b)", a="f@2,2,3", b="f@3,4"),
               call("jnp.einsum('...j,...j', a, b)", a="f@2,3", b="f@1,3"),
               call("jnp.einsum('ii->i', a)", a="f@3,3"), call("jnp.einsum('bii', a)", a="f@2,3,3"),
               call("jnp.einsum('ij,kj', a, b, optimize='greedy', precision='highest', "
                    "preferred_element_type=jnp.float32)", a="i@2,3", b="i@4,3"),
               call("jnp.einsum('bij,bj->bi', a, b)", a="f@2,3,4", b="f@2,4"),
               call("jnp.einsum('ij->j', a)", a="f@3,2"),
               # an index of size 1 in one operand broadcasts against the other's
               call("jnp.einsum('ij,ij->ij', a, b)", a="f@1,3", b="f@4,3"),
               call("jnp.einsum('ij,jk->ik', a, b)", a="f@2,1", b="f@4,5")],
    # (two operands: one path in both; with more, JAX's is opt_einsum's, a documented
    # difference, and the descriptions differ)
    "einsum_path": [call("jnp.einsum_path('ij,jk->ik', a, b)[0]", a="f@2,3", b="f@3,4")],
    "tensordot": [call("jnp.tensordot(a, b)", a="f@2,3,4", b="f@3,4,2"),
                  call("jnp.tensordot(a, b, axes=([0], [1]))", a="f@3,2", b="f@4,3"),
                  call("jnp.tensordot(a, b, 1, precision='float32', preferred_element_type="
                       "jnp.float32)", a="i@2,3", b="i@3")],
    "inner": [call("jnp.inner(a, b)", a="f@2,3", b="f@4,3"),
              call("jnp.inner(a, b, preferred_element_type=jnp.float32)", a="i@3", b="i@3")],
    "outer": [call("jnp.outer(a, b)", a="f@3", b="f@2,2")],
    "vdot": [call("jnp.vdot(a, b)", a="f@2,3", b="f@6"),
             call("jnp.vdot(a, b, precision='highest')", a="f@3", b="f@3")],
    # indexing
    "take": [call("jnp.take(a, jnp.array([0, 2, -1]), axis=1)", a="f@2,3"),
             call("jnp.take(a, jnp.array([[1, 0]]))", a="f@2,3")],
    "take_along_axis": [call("jnp.take_along_axis(a, jnp.argmax(a, axis=1, keepdims=True), "
                             "axis=1)", a="f@3,4")],
    # scalar types and constants
    "float32": [call("jnp.float32(1.5)"), call("jnp.float32(a)", a="i")],
    "int32": [call("jnp.int32(2.7)"), call("jnp.int32(a)", a="f")],
    "uint32": [call("jnp.uint32(3)"), call("jnp.uint32(a)", a="ipos")],
    "bool_": [call("jnp.bool_(1)"), call("jnp.bool_(a)", a="i")],
    "bool": [call("jnp.bool(0)"), call("jnp.bool(a)", a="f")],
    "float64": [call("jnp.float64(1.5)")], "int64": [call("jnp.int64(2)")],
    "uint64": [call("jnp.uint64(2)")],
    "int8": [call("jnp.int8(-3)"), call("jnp.int8(a)", a="i")],
    "int16": [call("jnp.int16(300)"), call("jnp.int16(a)", a="f")],
    "uint8": [call("jnp.uint8(200)"), call("jnp.uint8(a)", a="ipos")],
    "uint16": [call("jnp.uint16(3)"), call("jnp.uint16(a)", a="ipos")],
    "float16": [call("jnp.float16(1.5)"), call("jnp.float16(a) * 2", a="f")],
    "bfloat16": [call("jnp.bfloat16(1.5)"), call("jnp.bfloat16(a) + 1", a="f")],
    "complex64": [call("jnp.complex64(1.5)"), call("jnp.complex64(a) * 1j", a="f")],
    **{name: [call(f"jnp.{name}(2.5)"), call(f"jnp.{name}(a) * 2", a="f")] for name in (
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3", "float8_e3m4", "float8_e4m3fnuz",
        "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e8m0fnu", "float4_e2m1fn")},
    # (named by jnp; an array of one is refused, by XLA's CPU and by us)
    "float6_e2m3fn": [call("jnp.dtype(jnp.float6_e2m3fn).itemsize")],
    "float6_e3m2fn": [call("jnp.dtype(jnp.float6_e3m2fn).itemsize")],
    "complex128": [call("jnp.complex128(2)")],
    "ndarray": [call("isinstance(jnp.asarray(a), jnp.ndarray)", a="f")],
    "pi": [call("jnp.pi")], "e": [call("jnp.e")], "inf": [call("jnp.inf")],
    "nan": [call("jnp.isnan(jnp.nan)")], "newaxis": [call("jnp.newaxis")],
    # the primitives of more_math.py
    "sinh": unary("sinh", "f", "i"), "cosh": unary("cosh", "f", "pyf"),
    "arcsin": unary("arcsin", "funit", "pyf"), "arccos": unary("arccos", "funit"),
    "arctan": unary("arctan", "f", "i"), "arcsinh": unary("arcsinh", "f"),
    "arccosh": [call("jnp.arccosh(1.5 + jnp.abs(a))", a="f")],
    "arctanh": unary("arctanh", "funit"), "cbrt": unary("cbrt", "f", "i"),
    "exp2": unary("exp2", "f", "i", "pyi"),
    # compositions: elementwise (more_ufuncs.py)
    "ldexp": [call("jnp.ldexp(a, b)", a="f", b="i"), call("jnp.ldexp(a, b)", a="i", b="i"),
              call("jnp.ldexp(a, b)", a="pyf", b="i")],
    "frexp": [call("jnp.frexp(a)", a="f"), call("jnp.frexp(a)", a="i")],
    "gcd": binary("gcd", "i i", "i pyi", "ipos inz"),
    "lcm": binary("lcm", "i i", "i pyi", "ipos inz"),
    "nextafter": binary("nextafter", "f f", "f pyf", "i f"),
    "float_power": binary("float_power", "fpos f", "i ipos", "fpos pyi"),
    "logaddexp2": binary("logaddexp2", "f f", "f pyf", "i f"),
    "isposinf": [call("jnp.isposinf(a / b)", a="f", b="f"), *unary("isposinf", "i")],
    "isneginf": [call("jnp.isneginf(a / b)", a="f", b="f"), *unary("isneginf", "i", "pyf")],
    # compositions: elementwise (mathematical.py)
    "log2": unary("log2", "fpos", "ipos"), "log10": unary("log10", "fpos", "pyf"),
    "deg2rad": unary("deg2rad", "f", "i"), "rad2deg": unary("rad2deg", "f", "pyf"),
    "hypot": binary("hypot", "f f", "f pyf", "i i"),
    "logaddexp": binary("logaddexp", "f f", "f pyf"),
    "sinc": unary("sinc", "f", "i"), "trunc": unary("trunc", "f", "i"),
    "heaviside": binary("heaviside", "f f", "f pyf"),
    "fmax": binary("fmax", "f f", "i i", "f pyf"), "fmin": binary("fmin", "f f", "i pyi"),
    "signbit": unary("signbit", "f", "i"), "copysign": binary("copysign", "f f", "f pyf"),
    "real": unary("real", "f", "i"), "imag": unary("imag", "f", "i"),
    "conj": unary("conj", "f", "i"), "conjugate": unary("conjugate", "f"),
    "isclose": [call("jnp.isclose(a, b)", a="f", b="f"), call("jnp.isclose(a, a + 1e-7)", a="f"),
                call("jnp.isclose(a, b, atol=0.5)", a="i", b="i"),
                call("jnp.isclose(a, jnp.where(a > 0, jnp.inf, jnp.nan), equal_nan=True)",
                     a="f")],
    "nan_to_num": [call("jnp.nan_to_num(a / (a > 0))", a="f"),
                   call("jnp.nan_to_num(jnp.log(a), neginf=-9.0)", a="f"),
                   call("jnp.nan_to_num(a)", a="i")],
    # compositions: arrangement.py
    "atleast_3d": [call("jnp.atleast_3d(a)", a="f@3"), call("jnp.atleast_3d(a)", a="f@2,3"),
                   call("jnp.atleast_3d(a)", a="pyf")],
    "hstack": [call("jnp.hstack([a, b])", a="f@2,3", b="f@2,1"),
               call("jnp.hstack([a, b])", a="f@2", b="i@3"),
               call("jnp.hstack([a, b], dtype=jnp.int32)", a="f@2", b="f@3")],
    "vstack": [call("jnp.vstack([a, b])", a="f@3", b="f@2,3"),
               call("jnp.vstack([a, b], dtype=jnp.int8)", a="f@3", b="i@3")],
    "dstack": [call("jnp.dstack([a, b])", a="f@2,3", b="f@2,3"),
               call("jnp.dstack([a, b], dtype=jnp.float32)", a="i@2", b="i@2")],
    "column_stack": [call("jnp.column_stack([a, b])", a="f@3", b="f@3,2")],
    "append": [call("jnp.append(a, b)", a="f@2,2", b="f@3"),
               call("jnp.append(a, b, axis=0)", a="f@2,3", b="f@1,3")],
    "hsplit": [call("jnp.hsplit(a, 2)", a="f@3,4")], "vsplit": [call("jnp.vsplit(a, 3)", a="f@3,4"),
                                                  call("jnp.vsplit(a, 2)", a="f@4")],
    "dsplit": [call("jnp.dsplit(a, 2)", a="f@2,3,4")],
    "fliplr": [call("jnp.fliplr(a)", a="f@2,3")], "flipud": [call("jnp.flipud(a)", a="f@3,2")],
    "rot90": [call("jnp.rot90(a)", a="f@2,3"), call("jnp.rot90(a, 2)", a="f@2,3"),
              call("jnp.rot90(a, -1, axes=(1, 2))", a="f@2,3,4")],
    "roll": [call("jnp.roll(a, 2)", a="f@2,3"), call("jnp.roll(a, -1, axis=1)", a="f@2,3"),
             call("jnp.roll(a, (1, 2), axis=(0, 1))", a="i@2,3")],
    "diff": [call("jnp.diff(a)", a="f@5"), call("jnp.diff(a, n=2, axis=0)", a="f@4,3"),
             call("jnp.diff(a, prepend=0.0)", a="f@2,3"), call("jnp.diff(a)", a="b@4")],
    "repeat": [call("jnp.repeat(a, 2)", a="f@2,3"), call("jnp.repeat(a, 3, axis=1)", a="i@2,2"),
               call("jnp.repeat(a, jnp.array([1, 0, 2]), axis=0)", a="f@3,2")],
    "tri": [call("jnp.tri(3)"), call("jnp.tri(2, 4, k=1, dtype=jnp.int32)")],
    "tril": [call("jnp.tril(a)", a="f@3,3"), call("jnp.tril(a, -1)", a="i@2,3,4")],
    "triu": [call("jnp.triu(a)", a="f@3,4"), call("jnp.triu(a, 1)", a="f@4,3")],
    "diagonal": [call("jnp.diagonal(a)", a="f@3,4"), call("jnp.diagonal(a, 1)", a="f@3,4"),
                 call("jnp.diagonal(a, -1, 1, 2)", a="f@2,3,3")],
    "diag": [call("jnp.diag(a)", a="f@3"), call("jnp.diag(a, -1)", a="f@2"),
             call("jnp.diag(a, 1)", a="f@3,3")],
    "trace": [call("jnp.trace(a)", a="f@3,3"), call("jnp.trace(a, 1)", a="i@3,4")],
    "kron": [call("jnp.kron(a, b)", a="f@2,2", b="f@2,3"), call("jnp.kron(a, b)", a="f@2",
                                                                 b="i@3")],
    "cross": [call("jnp.cross(a, b)", a="f@3", b="f@3"), call("jnp.cross(a, b)", a="f@4,3",
                                                               b="f@4,3"),
              call("jnp.cross(a, b)", a="f@2", b="f@2")],
    "meshgrid": [call("jnp.meshgrid(a, b)", a="f@3", b="f@2"),
                 call("jnp.meshgrid(a, b, indexing='ij')", a="f@3", b="i@2"),
                 call("jnp.meshgrid(a, b, sparse=True)", a="f@2", b="f@4")],
    # creation
    "empty": [call("jnp.empty((2, 3))"), call("jnp.empty(3, dtype=jnp.int32)")],
    "empty_like": [call("jnp.empty_like(a)", a="i@2,3")], "copy": [call("jnp.copy(a)", a="f")],
    "logspace": [call("jnp.logspace(0, 2, 5)"), call("jnp.logspace(0.0, 1.0, 4, base=2.0)"),
                 call("jnp.logspace(a, 2.0, 3, axis=-1)", a="f@2")],
    # statistics.py
    "allclose": [call("jnp.allclose(a, b)", a="f", b="f"), call("jnp.allclose(a, a)", a="f")],
    "array_equal": [call("jnp.array_equal(a, a)", a="f"), call("jnp.array_equal(a, b)",
                                                                a="f@2", b="f@3")],
    "count_nonzero": [call("jnp.count_nonzero(a)", a="i"),
                      call("jnp.count_nonzero(a > 0, axis=1)", a="f@2,3")],
    "average": [call("jnp.average(a)", a="f"), call("jnp.average(a, axis=1)", a="i@2,3"),
                call("jnp.average(a, axis=0, weights=b)", a="f@3,2", b="fpos@3"),
                call("jnp.average(a, weights=b)", a="f@2,3", b="fpos@2,3")],
    "nansum": [call("jnp.nansum(jnp.where(a > 1, jnp.nan, a))", a="f"),
               call("jnp.nansum(a, axis=0)", a="f@2,3")],
    "nanmax": [call("jnp.nanmax(jnp.where(a > 1, jnp.nan, a))", a="f"),
               call("jnp.nanmax(a, axis=1)", a="i@2,3")],
    "nanmin": [call("jnp.nanmin(jnp.where(a > 1, jnp.nan, a), axis=0)", a="f@3,2"),
               call("jnp.nanmin(jnp.where(a > 1, jnp.nan, a), where=b, initial=0.5)", a="f@4",
                    b="b@4")],
    "nanmean": [call("jnp.nanmean(jnp.where(a > 1, jnp.nan, a))", a="f"),
                call("jnp.nanmean(jnp.where(a > 1, jnp.nan, a), axis=1, where=b)", a="f@2,3",
                     b="b@2,3"),
                call("jnp.nanmean(a, axis=1)", a="f@2,3")],
    "sort": [call("jnp.sort(a)", a="f@5"), call("jnp.sort(a, axis=0)", a="i@3,2"),
             call("jnp.sort(a, axis=None)", a="f@2,3"),
             call("jnp.sort(a, descending=True)", a="f@4")],
    "argsort": [call("jnp.argsort(a)", a="f"), call("jnp.argsort(a, axis=0)", a="f@3,2"),
                call("jnp.argsort(a // 2, descending=True)", a="i@6")],
    "result_type": [call("jnp.result_type(a, 1.0)", a="i"), call("jnp.result_type(a, b)",
                                                                  a="f", b="i"),
                    call("jnp.result_type(jnp.int32, jnp.float32)")],
    "promote_types": [call("jnp.promote_types(jnp.int32, jnp.uint32)"),
                      call("jnp.promote_types(jnp.bool_, jnp.float32)")],
    "isscalar": [call("jnp.isscalar(a)", a="f"), call("jnp.isscalar(1.0)"),
                 call("jnp.isscalar(a)", a="pyf")],
    "dtype": [call("jnp.dtype('float32')"), call("jnp.dtype(jnp.int32)"),
              call("jnp.dtype(a.dtype)", a="f"), call("jnp.dtype(np.float32)"),
              call("jnp.dtype(float)")],
    "finfo": [call("jnp.finfo(jnp.float32).eps"), call("jnp.finfo(np.float16).eps"),
              call("jnp.finfo(a.dtype).max", a="f")],
    "iinfo": [call("jnp.iinfo(jnp.int32).min"), call("jnp.iinfo(a.dtype).max", a="i")],
    "issubdtype": [call("jnp.issubdtype(a.dtype, jnp.floating)", a="f"),
                   call("jnp.issubdtype(jnp.int32, jnp.integer)"),
                   call("jnp.issubdtype(jnp.float32, jnp.int32)")],
    "floating": [call("jnp.issubdtype(a.dtype, jnp.floating)", a="i")],
    "integer": [call("jnp.issubdtype(a.dtype, jnp.integer)", a="i")],
    "inexact": [call("jnp.issubdtype(a.dtype, jnp.inexact)", a="f")],
    "number": [call("jnp.issubdtype(a.dtype, jnp.number)", a="b")],
    "complexfloating": [call("jnp.issubdtype(a.dtype, jnp.complexfloating)", a="f")],
    "angle": [call("jnp.angle(a)", a="f"), call("jnp.angle(a)", a="i"),
              call("jnp.angle(a * 1j + b)", a="f", b="f"), call("jnp.angle(a, deg=True)", a="f")],
    "quantile": [call("jnp.quantile(a, 0.3)", a="f@7"),
                 call("jnp.quantile(a, b, axis=1)", a="f@3,5", b="funit@2"),
                 call("jnp.quantile(a, 0.5, axis=0, keepdims=True)", a="f@4,3"),
                 call("jnp.quantile(a, 0.4, method='nearest')", a="f@6"),
                 call("jnp.quantile(a, 0.25, axis=1, method='lower')", a="i@2,5"),
                 call("jnp.quantile(a, 0.75, method='higher')", a="f@5")],
    "percentile": [call("jnp.percentile(a, 40.0)", a="f@6"),
                   call("jnp.percentile(a, 50, axis=0)", a="i@4,2")],
    "median": [call("jnp.median(a)", a="f@6"), call("jnp.median(a, axis=1)", a="f@2,5"),
               call("jnp.median(a, keepdims=True)", a="i@3,3")],
    "searchsorted": [call("jnp.searchsorted(jnp.sort(a), b)", a="f@6", b="f@4"),
                     call("jnp.searchsorted(jnp.sort(a), b, side='right')", a="i@5", b="i@3")],
    "bincount": [call("jnp.bincount(jnp.abs(a) % 4, length=5)", a="i@6"),
                 call("jnp.bincount(jnp.abs(a) % 3, weights=b, length=3)", a="i@5", b="f@5"),
                 call("jnp.bincount(jnp.array([0, 2, 2, 5]))")],
    "unravel_index": [call("jnp.unravel_index(a, (3, 4))", a="i@5"),
                      call("jnp.unravel_index(jnp.abs(a) % 24, (2, 3, 4))", a="i@3")],
    "select": [call("jnp.select([a > 0.5, a < -0.5], [a, -a], 0.0)", a="f"),
               call("jnp.select([b], [a], default=b)", a="i", b="b")],
    "pad": [call("jnp.pad(a, 2)", a="f@3"), call("jnp.pad(a, ((1, 0), (2, 3)))", a="i@2,2"),
            call("jnp.pad(a, (1, 2), constant_values=7.5)", a="f@2,3"),
            call("jnp.pad(a, ((1, 2), (0, 1)), constant_values=((1, 2), (3, 4)))", a="f@2,3"),
            call("jnp.pad(a, (3, 4), mode='edge')", a="f@2,3"),
            call("jnp.pad(a, (5, 6), mode='wrap')", a="f@3"),
            call("jnp.pad(a, ((2, 5), (1, 0)), mode='reflect')", a="f@3,2"),
            call("jnp.pad(a, 4, mode='symmetric')", a="f@2,3")],
    "interp": [call("jnp.interp(a, jnp.array([-1.0, 0.0, 0.5, 2.0]), b)", a="f", b="f@4"),
               call("jnp.interp(a, jnp.array([-1.0, 0.0, 1.0]), b, left=-5.0, right=5.0)",
                    a="f", b="f@3"),
               call("jnp.interp(a, jnp.array([0.0, 0.5, 1.5]), b, period=2.0)", a="f",
                    b="f@3"),
               call("jnp.interp(a * 3, jnp.array([-1.0, 0.0, 1.0]), b, left='extrapolate', "
                    "right='extrapolate')", a="f", b="f@3"),
               call("jnp.interp(a, jnp.array([0.0, 1.0, 1.0, 2.0]), b, period=-1.5, left=0.0)",
                    a="f", b="f@4")],
    "histogram": [call("jnp.histogram(a, 4)", a="f@20"),
                  call("jnp.histogram(a, jnp.array([-1.0, 0.0, 1.0]), weights=b)", a="f@9",
                       b="fpos@9"),
                  call("jnp.histogram(a, 3, range=(-1.0, 1.0), density=True)", a="f@12"),
                  call("jnp.histogram(a * 0, 3)", a="f@5")],
    "histogram_bin_edges": [call("jnp.histogram_bin_edges(a, 4)", a="f@7"),
                            call("jnp.histogram_bin_edges(a, 2, range=(1, 1))", a="f@3")],
    "nonzero": [call("jnp.nonzero(a > 0, size=4)", a="f@6"),
                call("jnp.nonzero(a, size=5, fill_value=-1)", a="i@2,3"),
                call("jnp.nonzero(jnp.array([[0, 1], [2, 0]]))")],
    # cumulative.py
    "cumsum": [call("jnp.cumsum(a)", a="f@2,3"), call("jnp.cumsum(a, axis=1)", a="i@2,3"),
               call("jnp.cumsum(a, axis=0, dtype=jnp.float32)", a="b@4")],
    "cumprod": [call("jnp.cumprod(a, axis=-1)", a="funit@2,3"), call("jnp.cumprod(a)", a="i@4")],
    "nancumsum": [call("jnp.nancumsum(jnp.where(a > 1, jnp.nan, a), axis=0)", a="f@3,2")],
    "nancumprod": [call("jnp.nancumprod(jnp.where(a > 0.9, jnp.nan, a))", a="funit@5")],
    "round": [call("jnp.round(a * 4.0)", a="f"), call("jnp.round(a, 2)", a="f"),
              call("jnp.round(a)", a="i")],
    "around": [call("jnp.around(a * 10.0, -1)", a="f")],
    "unique": [call("jnp.unique(a // 2, size=4)", a="i@7"),
               call("jnp.unique(jnp.round(a), return_counts=True, size=5, fill_value=0.0)",
                    a="f@6")],
    # the array API's spellings, and NumPy's other names of scalar types
    "acos": unary("acos", "funit"), "acosh": [call("jnp.acosh(1.5 + jnp.abs(a))", a="f")],
    "asin": unary("asin", "funit"), "asinh": unary("asinh", "f"), "atan": unary("atan", "i"),
    "atanh": unary("atanh", "funit"), "atan2": binary("atan2", "f f", "f pyf"),
    "concat": [call("jnp.concat([a, b], axis=1)", a="f@2,3", b="f@2,1")],
    "pow": binary("pow", "f fpos", "i ipos"),
    "permute_dims": [call("jnp.permute_dims(a, (2, 0, 1))", a="f@2,3,4")],
    "bitwise_invert": unary("bitwise_invert", "i", "b"),
    "bitwise_left_shift": binary("bitwise_left_shift", "i ishift"),
    "bitwise_right_shift": binary("bitwise_right_shift", "i ishift"),
    "degrees": unary("degrees", "f", "i"), "radians": unary("radians", "f", "pyf"),
    "fabs": unary("fabs", "f", "i", "pyf"), "positive": unary("positive", "f", "i", "pyf"),
    "matrix_transpose": [call("jnp.matrix_transpose(a)", a="f@2,3,4")],
    "tril_indices": [call("jnp.tril_indices(3)"), call("jnp.tril_indices(3, -1, 4)")],
    "triu_indices": [call("jnp.triu_indices(4, 1)"), call("jnp.triu_indices(2, 0, 3)")],
    "float_": [call("jnp.float_(1.5)")], "double": [call("jnp.double(1.5)")],
    "single": [call("jnp.single(1.5)")], "int_": [call("jnp.int_(3)")],
    "uint": [call("jnp.uint(3)")], "complex_": [call("jnp.complex_(1.5)")],
    "cdouble": [call("jnp.cdouble(1.5)")], "csingle": [call("jnp.csingle(1.5)")],
}

# jax.nn: each function stage 1 defines there, called as jax.nn.NAME.
NN_CALLS: dict[str, list[Call]] = {
    "relu": [call("jax.nn.relu(a)", a="f"), call("jax.nn.relu(a)", a="pyf"),
             call("jax.nn.relu(a)", a="i")],
    "gelu": [call("jax.nn.gelu(a)", a="f"), call("jax.nn.gelu(a)", a="pyf")],
    "sigmoid": [call("jax.nn.sigmoid(a)", a="f"), call("jax.nn.sigmoid(a)", a="pyf")],
    "softplus": [call("jax.nn.softplus(a)", a="f"), call("jax.nn.softplus(a)", a="i")],
    "softmax": [call("jax.nn.softmax(a)", a="f@3,4"), call("jax.nn.softmax(a, axis=0)",
                                                          a="f@3,4"),
                call("jax.nn.softmax(a, where=b > -0.5)", a="f@3,4", b="f@3,4")],
    "log_softmax": [call("jax.nn.log_softmax(a)", a="f@3,4"),
                    call("jax.nn.log_softmax(a, axis=(0, 1))", a="f@2,3"),
                    call("jax.nn.log_softmax(a, axis=0, where=b)", a="f@3,2", b="b@3,2")],
    "logsumexp": [call("jax.nn.logsumexp(a)", a="f"),
                  call("jax.nn.logsumexp(a, axis=1, keepdims=True)", a="f@2,3")],
    "one_hot": [call("jax.nn.one_hot(a, 5)", a="ipos@3"),
                call("jax.nn.one_hot(a, 3, axis=0)", a="i@2,2")],
    # more activations (nn.py; kinks and edges in test_nn_against_jax.py)
    **{name: [call(f"jax.nn.{name}(a)", a="f"), call(f"jax.nn.{name}(a)", a="pyf"),
              *([] if name in ("silu", "swish") else [call(f"jax.nn.{name}(a)", a="i")])]
       for name in ["silu", "swish", "log_sigmoid", "soft_sign", "selu", "relu6",
                    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh"]},
    "elu": [call("jax.nn.elu(a)", a="f"), call("jax.nn.elu(a, 0.5)", a="pyf")],
    "celu": [call("jax.nn.celu(a, 0.7)", a="f"), call("jax.nn.celu(a)", a="i")],
    "leaky_relu": [call("jax.nn.leaky_relu(a)", a="f"),
                   call("jax.nn.leaky_relu(a, negative_slope=0.2)", a="pyf")],
    "glu": [call("jax.nn.glu(a)", a="f@3,4"), call("jax.nn.glu(a, axis=0)", a="f@2,3")],
    "standardize": [call("jax.nn.standardize(a)", a="f@3,4"),
                    call("jax.nn.standardize(a, axis=0, epsilon=0.1)", a="f@3,2"),
                    call("jax.nn.standardize(a, where=b > 0, algorithm='stable')",
                         a="f@2,4", b="f@2,4")],
}


# Calls JAX refuses: ours must raise too, an error of the same broad class (oracle.compare).
ERROR_CALLS: list[Call] = [
    call("jnp.sum(a, out=a)", a="f@3"), call("jnp.sum(a, axis=3)", a="f@2,3"),
    call("jnp.fabs(a * 1j)", a="f@3"), call("jnp.matrix_transpose(a)", a="f@3"),
    call("jnp.max(a, axis=-3)", a="f@2,3"), call("jnp.reshape(jnp.asarray(a), (7,))", a="f@2,3"),
    call("jnp.add(a, b)", a="f@2,3", b="f@4"), call("jnp.where(c, a)", c="b@3", a="f@3"),
    call("jnp.concatenate([a, b])", a="f@2,3", b="f@2,4"),
    call("jnp.stack([a, b])", a="f@2", b="f@3"), call("jnp.dot(a, b)", a="f@2,3", b="f@4"),
    call("jnp.matmul(a, b)", a="f@2,3", b="f@2,3"),
    call("jnp.einsum('ij,jk->ik', a, b)", a="f@2,3", b="f@4,2"),
    call("jnp.transpose(a, (0, 0))", a="f@2,3"), call("jnp.squeeze(a, axis=0)", a="f@2,3"),
    call("jnp.split(a, 4)", a="f@6"), call("jnp.expand_dims(a, 3)", a="f@2"),
    call("jnp.moveaxis(a, 0, 5)", a="f@2,3"), call("jnp.broadcast_to(a, (2,))", a="f@3"),
    call("jnp.take(a, jnp.array([0]), axis=2)", a="f@2,3"), call("jnp.ones(-1)"),
    call("jnp.full((2,), a)", a="f@3"), call("jnp.asarray('text')"),
    call("jnp.tile(a, (2, -1))", a="f@2,3"),
    call("jnp.sort(a)", a="f@"), call("jnp.tril(a)", a="f@3"), call("jnp.fliplr(a)", a="f@3"),
    call("jnp.dsplit(a, 2)", a="f@4,2"), call("jnp.rot90(a, axes=(0, 0))", a="f@2,2"),
    call("jnp.diagonal(a, 0, 1, 1)", a="f@2,2"), call("jnp.cross(a, b)", a="f@4", b="f@4"),
    call("jnp.meshgrid(a, indexing='yx')", a="f@2"), call("jnp.result_type()"),
    call("jnp.quantile(a, 0.5, method='median')", a="f@3"),
    call("jnp.searchsorted(a, b)", a="f@2,2", b="f@2"),
    call("jnp.select([a > 0], [a, a])", a="f@3"), call("jnp.bincount(a)", a="f@3"),
    call("jnp.pad(a, -1)", a="f@3"), call("jnp.pad(a, ((1, 2), (3, 4)))", a="f@3"),
    call("jnp.interp(a, b, b)", a="f@2", b="f@2,2"),
    call("jnp.interp(a, b, b, left='nearest')", a="f@2", b="f@2"),
    call("jnp.interp(a * 1j, b, b)", a="f@2", b="f@2"),
    call("jnp.histogram(a, b)", a="f@2", b="f@2,2"),
    call("jnp.histogram(a, 2, weights=b)", a="f@2", b="f@3"),
    call("jnp.linspace(0.0, 1.0, -1)"),
    call("jnp.dot(a, a, precision='fast')", a="f@2"),
    call("jnp.matmul(a, a, precision=('highest',))", a="f@2,2"),
    call("jnp.matmul(a, a, precision=('highest', None))", a="f@2,2"),
    call("jnp.einsum('i.j', a)", a="f@2,2"), call("jnp.max(a, where=a > 0)", a="f@3"),
    call("jnp.var(a, ddof=1, correction=1)", a="f@3"), call("jnp.size(a, 2)", a="f@3"),
    call("jnp.where(a > 0, a, a, size=2)", a="f@3"), call("jnp.where(a > 0, a)", a="f@3"),
    call("jnp.einsum('ij', a, out=a)", a="f@2,2"),
    call("jax.nn.silu(a)", a="i@3"), call("jnp.gcd(a, b)", a="f@2", b="i@2"),
    call("jnp.ldexp(a, b)", a="f@2", b="f@2"),
]


# Calls where we differ from JAX, found by this suite: each is expected to fail, strictly, so
# that the fix shows up as an unexpected pass and its line here is deleted.
KNOWN: dict[tuple[str, int], str] = {
}


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------


def draw(kind: str, shape: tuple[int, ...], rng: np.random.Generator):
    """One input of ``kind`` (a Python scalar for the ``py`` kinds)."""
    python = {"pyf": 1.75, "pyi": 3, "pyb": True}
    if kind in python:
        return python[kind]
    if kind.startswith("i"):
        low = {"i": -5, "inz": -5, "ipos": 1, "ishift": 0}[kind]
        high = {"i": 6, "inz": 6, "ipos": 6, "ishift": 5}[kind]
        x = rng.integers(low, high, size=shape).astype(np.int32)
        return np.where(x == 0, 2, x).astype(np.int32) if kind == "inz" else x
    if kind == "b":
        return rng.random(size=shape) < 0.5
    low, high = {"f": (-2, 2), "fnz": (0.25, 2), "fpos": (0.1, 3), "funit": (-0.9, 0.9)}[kind]
    x = rng.uniform(low, high, size=shape).astype(np.float32)
    return x * np.where(rng.random(size=shape) < 0.5, -1, 1).astype(np.float32) if (
        kind == "fnz") else x


def inputs_of(case: Call, seed: int, complex_: bool = False) -> dict:
    """The inputs of a call: fixed shapes as written, the others one drawn shape (the first)
    and shapes that broadcast to it; with ``complex_``, float arrays become complex64 (an
    imaginary part drawn as the real one)."""
    rng = np.random.default_rng(seed)
    base = draw_shape(rng, (1, 2, 3, 4))
    values, first = {}, True
    for name, spec in case.kinds:
        kind, _, shape_text = spec.partition("@")
        if "@" in spec:
            shape = tuple(int(d) for d in shape_text.split(",")) if shape_text else ()
        else:
            shape = base if first else broadcastable_to(rng, base)
            first = False
        values[name] = draw(kind, shape, rng)
        if complex_ and kind.startswith("f"):
            values[name] = (values[name] + 1j * draw(kind, shape, rng)).astype(np.complex64)
    return values


# ------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------


def evaluate(code: str, jax_module: ModuleType, jnp: ModuleType, values: dict) -> Outcome:
    return oracle.evaluate(code, {"jax": jax_module, "jnp": jnp, "np": np, **values})


def grad_code(case: Call) -> str:
    """A scalar of the call's result, differentiated with respect to its float arrays."""
    names = [n for n, _ in case.kinds]
    floats = tuple(k for k, (_, spec) in enumerate(case.kinds) if spec.startswith("f"))
    params = ", ".join(names)
    return (f"jax.grad(lambda {params}: jnp.sum(jnp.sin(jnp.asarray({case.expr}, "
            f"jnp.float32))), argnums={floats})({params})")


def seed_of(name: str, number: int) -> int:
    return zlib.crc32(f"{name}:{number}".encode())


def first_float_calls() -> set[tuple[str, int]]:
    """Per name, the first call with a float input: the one whose gradient is checked too
    (one per function keeps the suite fast; the random programs differentiate the rest)."""
    firsts = {}
    for name, calls in [*CALLS.items(), *((f"nn.{n}", c) for n, c in NN_CALLS.items())]:
        for number, case in enumerate(calls):
            if name not in firsts and any(spec.startswith("f") for _, spec in case.kinds):
                firsts[name] = number
    return set(firsts.items())


DIFFERENTIATED = first_float_calls()


def is_float_result(outcome: Outcome) -> bool:
    """A float array, or a sequence of float arrays of one shape (``jnp.asarray`` of it is
    what the gradient's scalar is made of; ``histogram``'s counts and edges are not that)."""
    value = outcome.value
    if outcome.error is not None or (isinstance(value, (tuple, list))
                                     and len({np.shape(v) for v in value}) > 1):
        return False
    return np.asarray(value).dtype.kind == "f"


def mismatches(name: str, number: int, case: Call) -> list[str]:
    """What differs from JAX in the call, and in its gradient where that is checked."""
    values = inputs_of(case, seed_of(name, number))
    inputs = ", ".join(f"{k}={v!r}" for k, v in values.items())
    want = evaluate(case.expr, jax, jax.numpy, values)
    if want.error is not None:  # the table's fault: a call must be a real use in JAX
        return [f"the table's call fails in JAX: {want}\n    inputs: {inputs}"]
    got = evaluate(case.expr, sj, sjnp, values)
    found = [f"call {case.expr}: {p}\n    ours:  {got}\n    JAX's: {want}"
             for p in compare(got, want)]
    if (name, number) in DIFFERENTIATED and is_float_result(want):
        code = grad_code(case)
        want = evaluate(code, jax, jax.numpy, values)
        got = evaluate(code, sj, sjnp, values)
        found += [f"{code}: {p}\n    ours:  {got}\n    JAX's: {want}"
                  for p in compare(got, want)]
    return [f"{m}\n    inputs: {inputs}" for m in found]


CALLS.update(calls_more_numpy.CALLS)
NN_CALLS.update(calls_nn_and_linalg.NN_CALLS)
ERROR_CALLS += calls_more_numpy.ERROR_CALLS + calls_nn_and_linalg.ERROR_CALLS

CASES = [(name, number, case) for name, calls in CALLS.items()
         for number, case in enumerate(calls)] + [
    (f"nn.{name}", number, case) for name, calls in NN_CALLS.items()
    for number, case in enumerate(calls)]


def marked(name: str, number: int, case: Call):
    reason = KNOWN.get((name, number))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(name, number, case, marks=marks, id=f"{name}-{number}")


@pytest.mark.parametrize("name, number, case", [marked(*c) for c in CASES])
def test_function_equals_jax(name: str, number: int, case: Call) -> None:
    found = mismatches(name, number, case)
    assert not found, f"{name}, {case}:\n" + "\n".join(found)


@pytest.mark.parametrize("name, number, case", [c for c in CASES if c[:2] not in KNOWN],
                         ids=[f"{n}-{k}" for n, k, _ in CASES if (n, k) not in KNOWN])
def test_function_equals_jax_with_x64(name: str, number: int, case: Call) -> None:
    """The same calls with jax_enable_x64 on in both libraries: Python scalars are 64-bit
    then, and every rule that picks a default type shows (int32 stays int32 in a running
    sum, a float from an int32 is a float32, one_hot is float64). Values and types only."""
    ours, theirs = sj.config.jax_enable_x64, jax.config.jax_enable_x64
    sj.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        values = inputs_of(case, seed_of(name, number))
        want = evaluate(case.expr, jax, jax.numpy, values)
        got = evaluate(case.expr, sj, sjnp, values)
    finally:
        sj.config.update("jax_enable_x64", ours)
        jax.config.update("jax_enable_x64", theirs)
    problems = compare(got, want)
    assert not problems, f"{name}, {case} with x64:\n    ours:  {got}\n    JAX's: {want}\n" + (
        "\n".join(problems))


COMPLEX_CASES = [(name, number, case) for name, number, case in CASES
                 if (name, number) not in KNOWN and any(k.startswith("f") for _, k in case.kinds)]


@pytest.mark.parametrize("name, number, case", COMPLEX_CASES,
                         ids=[f"{n}-{k}" for n, k, _ in COMPLEX_CASES])
def test_function_equals_jax_on_complex_numbers(name: str, number: int, case: Call) -> None:
    """The same calls with every float array made complex: the value JAX computes (logaddexp
    wraps its angle, sigmoid is 1/(1 + exp(-z)), histogram's edges are complex...) or JAX's
    refusal (interp of complex x). Values and types only."""
    values = inputs_of(case, seed_of(name, number), complex_=True)
    want = evaluate(case.expr, jax, jax.numpy, values)
    got = evaluate(case.expr, sj, sjnp, values)
    problems = compare(got, want)
    assert not problems, f"{name}, {case} on complex numbers:\n    ours:  {got}\n    " \
        f"JAX's: {want}\n" + "\n".join(problems)


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[("raises", k)])]
                 if ("raises", k) in KNOWN else [], id=f"{k}-{case.expr}")
    for k, case in enumerate(ERROR_CALLS)])
def test_function_raises_as_jax(case: Call) -> None:
    values = inputs_of(case, seed_of("raises", 0))
    want = evaluate(case.expr, jax, jax.numpy, values)
    assert want.error is not None, f"JAX runs {case.expr}: it belongs in CALLS"
    got = evaluate(case.expr, sj, sjnp, values)
    problems = compare(got, want)
    assert not problems, f"{case}: {problems}"


def public_names(module: ModuleType) -> list[str]:
    return sorted(n for n in dir(module) if not n.startswith("_")
                  and not inspect.ismodule(getattr(module, n)))


def test_every_name_has_a_call() -> None:
    """Our jnp's public names, each called above (if JAX has it) or listed as ours only."""
    names = public_names(ours_jnp)
    missing = [n for n in names if n not in CALLS and n not in OURS_ONLY]
    assert not missing, f"jnp names with no call in CALLS: {missing}"
    ours_only = [n for n in names if not hasattr(jax.numpy, n)]
    assert sorted(ours_only) == sorted(OURS_ONLY), (
        f"names JAX lacks: {ours_only}; OURS_ONLY lists {sorted(OURS_ONLY)}")
    stale = sorted(set(CALLS) - set(names))
    assert not stale, f"CALLS has rows for names we do not export: {stale}"


def test_the_calls_use_their_inputs_and_name_their_function() -> None:
    """The table itself: each call reads each input it declares and calls its function
    (that JAX runs each call is checked with the call)."""
    broken = []
    for name, number, case in CASES:
        unused = [n for n, _ in case.kinds if n not in case.expr]
        named = (f"jnp.{name}" in case.expr or f"jax.{name}" in case.expr
                 or name in ("matmul", "astype", "reshape"))
        if unused or not named:
            broken.append(f"{name}-{number}: {case} (unused inputs {unused})")
    assert not broken, "\n".join(broken)


def test_every_nn_function_has_a_call() -> None:
    """Each function nn.py defines has rows, and each row's name is a function of both our
    nn and JAX's (nn.py also takes some from elsewhere: tanh, dot_product_attention)."""
    defined = sorted(n for n in dir(ours_nn) if callable(getattr(ours_nn, n))
                     and getattr(getattr(ours_nn, n), "__module__", "") == ours_nn.__name__
                     and not n.startswith("_"))
    assert not set(defined) - set(NN_CALLS), f"no rows: {sorted(set(defined) - set(NN_CALLS))}"
    assert all(hasattr(ours_nn, name) and hasattr(jax.nn, name) for name in NN_CALLS)


def test_stage_4_exports_the_same_names() -> None:
    """Stage 4's jnp (what the suite calls) re-exports stage 1's, so the table covers it."""
    assert set(public_names(ours_jnp)) <= set(public_names(sjnp))
