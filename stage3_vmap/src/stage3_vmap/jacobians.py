"""Jacobians from ``vmap``: ``jacfwd`` pushes every input direction through ``jvp`` at once,
``jacrev`` pulls every output direction back through ``vjp`` at once, ``hessian`` is
``jacfwd(jacrev(f))``. ``jacfwd_chunked`` pushes the directions through some at a time.

A Jacobian is the derivative applied to each vector of a basis. Each application is one
``jvp`` (a column) or one ``vjp`` (a row); ``vmap`` over the basis computes them all in one
batched pass instead of a Python loop. ``jacfwd`` costs one batched forward pass over the
inputs' size, ``jacrev`` one batched backward pass over the outputs' size: use ``jacfwd``
for tall Jacobians (few inputs), ``jacrev`` for wide ones (few outputs, as a loss's gradient).

The Jacobian of a result leaf of shape ``out`` with respect to an input leaf of shape ``in``
has shape ``out + in``, arranged as the results' pytree of the inputs' pytrees, as JAX's.

NB: in JAX these are jax/_src/api.py:jacfwd, jacrev and hessian.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.api_util import (
    check_callable,
    ensure_index_tuple,
    is_single_index,
    normalize_argnums,
)
from stage1_autodiff.autodiff import check_complex, jvp, vjp
from stage1_autodiff.core import get_aval
from stage1_autodiff.numpy.promotion import convert
from stage1_autodiff.tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten

from stage1_autodiff import dtypes
from stage1_autodiff import numpy as jnp
from stage1_autodiff import prims as lax

from .batching import vmap


# --8<-- [start:jacfwd]
def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, in forward mode.
    ``holomorphic=True``: complex inputs and outputs, and the complex Jacobian.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.jacfwd(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
        Array([[2., 0.],
               [0., 4.]], dtype=float32)
    """
    check_callable(fun)
    ensure_index_tuple(argnums)  # a malformed argnums fails here, its range at the call

    def jacobian(*args: Any) -> Any:
        f, dyn = _split_args(fun, args, argnums, "jacfwd")
        in_leaves, in_tree = tree_flatten(dyn)
        _check_inputs(in_leaves, "jacfwd", holomorphic)

        def pushforward(*tangent_leaves):
            tangents = tree_unflatten(in_tree, tangent_leaves)
            out, out_dot, *aux = jvp(f, (dyn,), (tangents,), has_aux=has_aux)
            if holomorphic:
                _check_complex(tree_flatten(out)[0], "jacfwd", "outputs")
            return (out, tree_map(_int_zeros, out_dot, out), *aux)

        # The basis index last (out + (n,)); the primal output and aux do not depend on it.
        out_axes = (None, -1, None) if has_aux else (None, -1)
        outs = vmap(pushforward, out_axes=out_axes)(*_basis(in_leaves))
        out_leaves, out_tree = tree_flatten(outs[0])
        jac = [_split_last(t, in_leaves, in_tree, typed_as=y)
               for t, y in zip(tree_flatten(outs[1])[0], out_leaves)]
        result = tree_unflatten(out_tree, jac)
        return (result, outs[2]) if has_aux else result

    return _named(jacobian, "jacfwd", fun)
# --8<-- [end:jacfwd]


# --8<-- [start:jacrev]
def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, in reverse mode.
    ``holomorphic=True``: complex inputs and outputs, and the complex Jacobian.
    ``allow_int=True``: integer and boolean inputs too, whose Jacobians are zeros of their
    own dtype (as JAX's).

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.jacrev(lambda x: jnp.sum(x ** 2))(jnp.array([1.0, 2.0]))
        Array([2., 4.], dtype=float32)
    """
    check_callable(fun)  # argnums is checked at the call, as JAX's jacrev does

    def jacobian(*args: Any) -> Any:
        f, dyn = _split_args(fun, args, argnums, "jacrev")
        in_leaves, in_tree = tree_flatten(dyn)
        _check_inputs([x for x in in_leaves if not allow_int or _is_inexact(x)], "jacrev",
                      holomorphic, complex_ok=True)
        if has_aux:
            out, pullback, aux = vjp(f, dyn, has_aux=True)
        else:
            out, pullback = vjp(f, dyn)
        out_leaves, out_tree = tree_flatten(out)
        if holomorphic:
            _check_complex(out_leaves, "jacrev", "outputs")
        for leaf in [] if holomorphic else out_leaves:
            if not dtypes.is_float(get_aval(leaf).dtype):
                hint = (" For holomorphic differentiation, pass holomorphic=True."
                        if dtypes.is_complex(get_aval(leaf).dtype) else "")
                raise TypeError(f"jacrev requires real-valued outputs (a floating dtype), but "
                                f"{getattr(fun, '__name__', 'fun')} returned an output of "
                                f"dtype {get_aval(leaf).dtype.name}.{hint} For integer or "
                                f"non-holomorphic complex outputs, use jax.vjp directly.")
        rows = []
        for k, leaf in enumerate(out_leaves):  # one batched pullback per result leaf
            basis = _basis([leaf])[0]
            others = [jnp.zeros(get_aval(o).shape, get_aval(o).dtype) for o in out_leaves]

            def pull(ct_leaf, k=k, others=others):
                cts = list(others)
                cts[k] = ct_leaf
                return pullback(tree_unflatten(out_tree, cts))[0]

            cts_in = vmap(pull)(basis)  # leading: this result's elements
            shape = get_aval(leaf).shape
            rows.append(tree_unflatten(in_tree, [
                _typed_as(jnp.reshape(c, shape + get_aval(x).shape), x) if _is_inexact(x)
                else jnp.zeros(shape + get_aval(x).shape, get_aval(x).dtype)
                for c, x in zip(tree_flatten(cts_in)[0], in_leaves)]))
        result = tree_unflatten(out_tree, rows)
        return (result, aux) if has_aux else result

    return _named(jacobian, "jacrev", fun)
# --8<-- [end:jacrev]


# --8<-- [start:jacfwd_chunked]

jacobian = jacrev  # JAX's other name for it

def jacfwd_chunked(fun: Callable, chunk_size: int,
                   argnums: int | Sequence[int] = 0) -> Callable:
    """``jacfwd(fun, argnums)``, with the basis pushed through ``jvp`` ``chunk_size`` vectors at
    a time: one ``vmap`` per chunk, so that the batched values are ``chunk_size`` wide instead
    of as wide as the inputs' size. Not exported: JAX's ``jacfwd`` has no such argument.

    Example:
        >>> import stage3_vmap.numpy as jnp
        >>> jacfwd_chunked(lambda x: x ** 2, chunk_size=2)(jnp.array([1.0, 2.0, 3.0]))
        Array([[2., 0., 0.],
               [0., 4., 0.],
               [0., 0., 6.]], dtype=float32)
    """
    # --8<-- [start:task3_4]
    if chunk_size < 1:
        raise ValueError(f"jacfwd_chunked needs a chunk_size of 1 or more, got {chunk_size}.")

    def jacobian(*args: Any) -> Any:
        f, dyn = _split_args(fun, args, argnums, "jacfwd_chunked")
        in_leaves, in_tree = tree_flatten(dyn)
        _check_inputs(in_leaves, "jacfwd_chunked")

        def pushforward(*tangent_leaves):
            out, out_dot = jvp(f, (dyn,), (tree_unflatten(in_tree, tangent_leaves),))
            return tree_map(_int_zeros, out_dot, out)

        n = sum(get_aval(x).size for x in in_leaves)
        chunks = []  # per chunk: the results' tangents, the chunk's vectors along the last dim
        for start in range(0, max(n, 1), chunk_size):  # no inputs: one empty chunk
            basis = _basis(in_leaves, start, min(start + chunk_size, n))
            out_dot = vmap(pushforward, out_axes=-1)(*basis)
            chunks.append(tree_flatten(out_dot)[0])
        joined = [jnp.concatenate(parts, axis=-1) for parts in zip(*chunks)]
        jac = [_split_last(t, in_leaves, in_tree) for t in joined]
        return tree_unflatten(tree_structure(out_dot), jac)

    return _named(jacobian, "jacfwd_chunked", fun)
    # --8<-- [end:task3_4]
# --8<-- [end:jacfwd_chunked]


# --8<-- [start:hessian]
def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))``.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.hessian(lambda x: jnp.sum(x ** 3))(jnp.array([1.0, 2.0]))
        Array([[ 6.,  0.],
               [ 0., 12.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
# --8<-- [end:hessian]


def _int_zeros(tangent: Any, primal: Any) -> Any:
    """An integer result's tangent (float0: no values) as zeros of its own dtype, as JAX's
    Jacobian of an integer result."""
    if dtypes.is_float0(tangent):
        return jnp.zeros(tangent.shape, get_aval(primal).dtype)
    return tangent


def _split_args(fun: Callable, args: tuple, argnums: int | Sequence[int],
                name: str) -> tuple[Callable, Any]:
    """``fun`` as a function of the differentiated arguments alone (one, or a tuple), and
    those arguments."""
    single = is_single_index(argnums)
    nums = normalize_argnums(ensure_index_tuple(argnums), len(args), name)

    def f(dyn):
        full = list(args)
        for n, value in zip(nums, (dyn,) if single else dyn):
            full[n] = value
        return fun(*full)

    dyn = args[nums[0]] if single else tuple(args[n] for n in nums)
    return f, dyn


def _check_inputs(leaves: list, name: str, holomorphic: bool = False,
                  complex_ok: bool = False) -> None:
    """Real inputs (or complex ones, in reverse mode: ``complex_ok``), or with
    ``holomorphic=True`` complex ones, as JAX's checks."""
    if holomorphic:
        _check_complex(leaves, name, "inputs")
    for x in [] if holomorphic else leaves:
        dtype = get_aval(x).dtype
        if not (dtypes.is_inexact(dtype) if complex_ok else dtypes.is_float(dtype)):
            hint = (" For holomorphic differentiation, pass holomorphic=True."
                    if dtypes.is_complex(dtype) else "")
            kinds = ("real- or complex-valued inputs (input dtype that is a sub-dtype of "
                     "np.inexact)" if complex_ok else
                     "real-valued inputs (input dtype that is a sub-dtype of np.floating)")
            raise TypeError(f"{name} requires {kinds}, but got {dtype.name}.{hint} For integer "
                            f"or non-holomorphic complex inputs, use jax.vjp or jax.jvp "
                            f"directly.")


def _is_inexact(x: Any) -> bool:
    return dtypes.is_inexact(get_aval(x).dtype)


def _check_complex(leaves: list, name: str, what: str) -> None:
    check_complex([get_aval(x).dtype for x in leaves], name, what)  # stage 1's, on values


# --8<-- [start:basis]
def _basis(leaves: list, start: int = 0, stop: int | None = None) -> list:
    """The standard basis of the flattened inputs, split back into leaves: for ``n``
    elements in all, leaf ``k`` gets an ``(n,) + shape_k`` array of 0s and 1s. ``start`` and
    ``stop`` keep only the vectors ``start`` to ``stop - 1``, and make only those."""
    avals = [get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    n = sum(sizes)
    stop = n if stop is None else stop
    dtype = np.result_type(*[a.dtype for a in avals]) if avals else np.float32
    eye = np.eye(stop - start, n, k=start, dtype=dtype)  # rows start..stop of the identity
    parts = np.split(eye, np.cumsum(sizes)[:-1], axis=1)
    return [_laid_out_as(jnp.asarray(part.reshape((stop - start,) + a.shape).astype(a.dtype)), a)
            for part, a in zip(parts, avals)]
# --8<-- [end:basis]


def _laid_out_as(part: Any, aval: Any) -> Any:
    """A part of the basis split as its input is (stage 4; the basis index is not split), so
    that the Jacobian is laid out as JAX's."""
    if aval.sharding is None:
        return part
    shape = get_aval(part).shape
    return lax.broadcast_in_dim(part, shape, tuple(range(len(shape))),
                                aval.sharding.inserted(0))


def _typed_as(block: Any, example: Any) -> Any:
    """A Jacobian block with the dtype and weak type of ``example``: the output it is of
    (jacfwd) or the input it is with respect to (jacrev).
    NB: in JAX this is jax/_src/api.py:_possible_downcast."""
    aval = get_aval(example)
    return convert(block, aval.dtype, aval.weak_type)


def _split_last(t: Any, in_leaves: list, in_tree: Any, typed_as: Any = None) -> Any:
    """A result's tangents with the basis index last (``out + (n,)``), as the inputs'
    pytree of ``out + in_k`` blocks (each typed as the result ``typed_as``, if given)."""
    shape = get_aval(t).shape[:-1]
    blocks, start = [], 0
    for x in in_leaves:
        aval = get_aval(x)
        block = t[..., start:start + aval.size]
        block = jnp.reshape(block, shape + aval.shape)
        blocks.append(block if typed_as is None else _typed_as(block, typed_as))
        start += aval.size
    return tree_unflatten(in_tree, blocks)


def _named(jacobian: Callable, kind: str, fun: Callable) -> Callable:
    jacobian.__name__ = f"{kind}({getattr(fun, '__name__', 'fun')})"
    jacobian.__wrapped__ = fun
    return jacobian
