"""``jax.linear_transpose``: the transpose of a linear function, as a function.

For a linear ``f`` (``f(a x + b y) = a f(x) + b f(y)``), its transpose ``f^T`` is the map with
``<f^T(c), x> = <c, f(x)>``: for a matrix product ``x -> A @ x`` it is ``c -> A.T @ c``. The VJP
of a linear function is its transpose at every point, so ``f^T`` is the pullback of ``vjp(f,
zeros)``. What ``vjp`` alone would not do is refuse a function that is not linear: its
pullback would be the derivative at zero, a silently wrong answer. So the function runs on a
tape that checks each operation applied to the input as it is recorded: a sum, a product by a
constant, a reshape or a slice is linear; ``sin(x)``, ``x * x`` or ``x > 0`` is not, and
raises.

    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> a = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> (ct,) = jax.linear_transpose(lambda x: a @ x, jnp.zeros(2))(jnp.ones(3))
    >>> print(ct)  # a.T @ ones
    [ 9. 12.]

NB: JAX transposes a linear jaxpr with each primitive's transpose rule
(``jax/_src/interpreters/ad.py``, ``backward_pass``); the primitives without one are its
nonlinear ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes
from . import primitives as lax
from .api_util import check_callable
from .autodiff import TapeTrace, _check_cotangents, _vjp
from .complex_numbers import complex_p, conj_p, imag_p, real_p
from .contraction import dot_general_p
from .convolution import conv_general_dilated_p
from .core import Array, get_aval
from .cumulative import cumsum_p
from .dynamic_slicing import dynamic_slice_p, dynamic_update_slice_p
from .fft import fft_p
from .linalg import triangular_solve_p
from .slicing import gather_p, scatter_add_p, tile_p
from .tree_util import tree_flatten, tree_unflatten
from .windowed import reduce_window_sum_p

ANY, ONE = "any", "one"  # every listed operand may depend on the input / at most one of them
P = lax  # (the elementwise and shape primitives are in primitives.py)

linear_operands: dict[Any, tuple[tuple[int, ...], str]] = {
    **{prim: ((0,), ANY) for prim in (
        P.neg_p, P.reduce_sum_p, P.reshape_p, P.broadcast_in_dim_p, P.transpose_p, P.squeeze_p,
        P.slice_p, P.rev_p, P.copy_p, P.name_p, real_p, imag_p, conj_p,
        P.convert_element_type_p, tile_p, reduce_window_sum_p, cumsum_p, fft_p,
        dynamic_slice_p, gather_p)},
    **{prim: ((0, 1), ANY) for prim in (P.add_p, P.sub_p, complex_p, P.pad_p,
                                        dynamic_update_slice_p)},
    P.concatenate_p: (tuple(range(1024)), ANY),
    P.select_n_p: (tuple(range(1, 1024)), ANY),  # the cases, not the predicate
    scatter_add_p: ((0, 2), ANY),  # the operand and the updates, not the indices
    P.div_p: ((0,), ANY),  # the numerator only
    triangular_solve_p: ((1,), ANY),  # the right-hand side only
    **{prim: ((0, 1), ONE) for prim in (P.mul_p, dot_general_p, conv_general_dilated_p)},
}
"""Which operands of each linear primitive may depend on the input; ``ONE``: at most one at a
time (a product of two such values is quadratic). A later stage adds its own (``jit``)."""


inline_rules: dict[Any, Callable[[list[Any], dict[str, Any]], list[Any]]] = {}
"""For a primitive that runs a program (stage 2's ``jit``): how to run it one operation at a
time on the tape's values, so that each of its operations is checked."""


class LinearityTrace(TapeTrace):
    """``grad``'s tape, refusing an operation that is not linear in the input."""

    def process_primitive(self, prim, tracers, params):
        on_tape = [i for i, t in enumerate(tracers) if t.node is not None]
        if on_tape and prim in inline_rules:
            return inline_rules[prim](tracers, params)
        if on_tape:
            _check_linear(prim, on_tape, params)
        return super().process_primitive(prim, tracers, params)

    def process_custom_jvp_call(self, prim, fun, jvp, tracers):
        if any(t.node is not None for t in tracers):
            _check_linear(prim, [0], {})  # a custom rule: not known to be linear
        return super().process_custom_jvp_call(prim, fun, jvp, tracers)

    def process_custom_vjp_call(self, prim, fun, fwd, bwd, tracers, out_trees):
        if any(t.node is not None for t in tracers):
            _check_linear(prim, [0], {})
        return super().process_custom_vjp_call(prim, fun, fwd, bwd, tracers, out_trees)


def _check_linear(prim: Any, on_tape: list[int], params: dict[str, Any]) -> None:
    positions, how = linear_operands.get(prim, ((), ANY))
    if all(i in positions for i in on_tape) and (how == ANY or len(on_tape) == 1):
        if prim is not P.convert_element_type_p or dtypes.is_inexact(params["new_dtype"]):
            return
        raise TypeError(f"linear_transpose takes functions from floating-point arrays to "
                        f"floating-point arrays; this one converts its input to "
                        f"{np.dtype(params['new_dtype'])}.")
    what = (f"{prim} of two values that depend on it (a product is not linear)"
            if how == ONE and len(on_tape) > 1 else
            f"{prim} of a value that depends on it (operand {on_tape[0]}), and {prim} is not "
            f"linear in that operand")
    raise NotImplementedError(
        f"linear_transpose: the function is not linear in its input: it computes {what}. "
        f"linear_transpose takes linear functions "
        f"(sums, products by constants, matrix products with a constant, reshapes, slices, "
        f"FFTs); for the derivative of a nonlinear function, use jax.vjp.")


# --8<-- [start:linear_transpose]
def linear_transpose(fun: Callable, *primals: Any, reduce_axes: tuple = ()) -> Callable:
    """The transpose of the linear function ``fun``, whose arguments have the shapes and dtypes
    of ``primals`` (arrays or ``ShapeDtypeStruct``s). It takes a cotangent shaped as ``fun``'s
    output and returns a tuple, one cotangent per argument. A ``fun`` that is not linear
    raises ``NotImplementedError`` naming the operation."""
    check_callable(fun)
    if reduce_axes:
        raise NotImplementedError("linear_transpose's reduce_axes was removed from JAX; leave "
                                  "it out.")
    flat, in_tree = tree_flatten(primals)
    zeros = [Array(np.zeros(*_shape_and_dtype(x)), False) for x in flat]
    _check_kinds([z.dtype for z in zeros], None)

    def flat_fun(*args):
        return fun(*tree_unflatten(in_tree, list(args)))

    out, pullback, out_tree, primals_out, _ = _vjp(flat_fun, tuple(zeros), False,
                                                    LinearityTrace)
    _check_kinds([z.dtype for z in zeros], [get_aval(o).dtype for o in primals_out])

    def transposed(out_cotangent: Any) -> tuple[Any, ...]:
        cts, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: the cotangent has structure {ct_tree}, but "
                            f"the function's output has structure {out_tree}: pass one "
                            f"cotangent per output, shaped as it.")
        return tree_unflatten(in_tree, list(pullback(_check_cotangents(
            out_cotangent, out_tree, primals_out))))
    return transposed
# --8<-- [end:linear_transpose]


def _shape_and_dtype(x: Any) -> tuple[tuple[int, ...], np.dtype]:
    """An argument's shape and dtype: an array's, a Python number's or a ShapeDtypeStruct's."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__"):
        return tuple(x.shape), dtypes.canonicalize_dtype(x.dtype)  # a ShapeDtypeStruct
    aval = get_aval(x)
    return aval.shape, aval.dtype


def _check_kinds(ins: list[np.dtype], outs: list[np.dtype] | None) -> None:
    """As JAX: floats (or complex numbers) in and out. JAX also transposes integer maps; here
    the tape carries no integer cotangents, so they are refused."""
    kinds = ins + (outs or [])
    if all(dtypes.is_inexact(d) for d in kinds):
        return
    raise TypeError(f"linear_transpose takes functions from floating-point (or complex) "
                    f"arrays to floating-point arrays; got {[str(d) for d in ins]} -> "
                    f"{'...' if outs is None else [str(d) for d in outs]}.")
