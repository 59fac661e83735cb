"""Contractions, all on the one primitive ``dot_general``: dot, matmul, tensordot, outer,
inner, einsum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from ..precision import canonicalize_precision
from .promotion import as_value, convert, promote
from .reductions import sum as _sum
from .shapes import ravel, reshape, transpose


def _check_contracted(name: str, x_shape, y_shape, x_dims, y_dims) -> None:
    for a, b in zip(x_dims, y_dims):
        if x_shape[a] != y_shape[b]:
            raise TypeError(f"{name}: contracting dims must match, got shapes {x_shape} and "
                            f"{y_shape} (dim {a} of size {x_shape[a]} against dim {b} of size "
                            f"{y_shape[b]}).")


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's ``dot``: the inner product for vectors, ``matmul`` for matrices, and a
    contraction of ``a``'s last dim with ``b``'s second-to-last in general. ``out_sharding``:
    the result's sharding (stage 4), where the operands' leave it ambiguous. Every
    contraction here takes ``preferred_element_type`` (the result's type, which integers
    accumulate in) and ``precision`` (checked; see ``lax.Precision``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.dot(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
        Array(11., dtype=float32)
    """
    a, b = promote(a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if not a_shape or not b_shape:
        return _scaled(a, b, precision, preferred_element_type)
    a_dim = len(a_shape) - 1
    b_dim = 0 if len(b_shape) == 1 else len(b_shape) - 2
    _check_contracted("dot", a_shape, b_shape, (a_dim,), (b_dim,))
    return lax.dot_general(a, b, (((a_dim,), (b_dim,)), ((), ())), precision,
                           _preferred(preferred_element_type), out_sharding)


def _preferred(dtype: Any) -> Any:
    return None if dtype is None else dtypes.check_and_canonicalize_user_dtype(dtype, "dot")


def _scaled(a, b, precision, preferred_element_type):
    """A product with a scalar operand: an elementwise one, in the preferred type."""
    from .ufuncs import multiply
    canonicalize_precision(precision)
    out = multiply(a, b)
    preferred = _preferred(preferred_element_type)
    return out if preferred is None else convert(out, preferred)


# --8<-- [start:matmul]
def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy's rules: leading dims are batch dims and broadcast, a 1-d
    operand is a vector. ``out_sharding``: the result's sharding (stage 4), where the
    operands' leave it ambiguous.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.matmul(jnp.ones((5, 2, 3)), jnp.ones((3, 4))).shape
        (5, 2, 4)
    """
    a, b = promote(a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if not a_shape or not b_shape:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes "
                         f"{a_shape} and {b_shape}. Use * for scalars.")
    a_matrix, b_matrix = len(a_shape) > 1, len(b_shape) > 1
    _check_contracted("matmul", a_shape, b_shape, (len(a_shape) - 1,),
                      (len(b_shape) - 1 - b_matrix,))
    plan = _MatmulPlan(a_shape[:-2] if a_matrix else (), b_shape[:-2] if b_matrix else ())
    if plan.problem:
        raise ValueError(f"matmul: the batch dims of shapes {a_shape} and {b_shape} do not "
                         f"broadcast (dims before the last two must be equal or 1).")
    # The result's dims, as dot_general orders them: the batch dims, a's free dims (its
    # row last), b's (its column last). ``perm`` puts them in matmul's order.
    n = plan.batch_rank
    order = [*plan.batch, *plan.a_free, *[n] * a_matrix, *plan.b_free, *[n + a_matrix] * b_matrix]
    perm = tuple(sorted(range(len(order)), key=order.__getitem__))
    if out_sharding is not None and order != sorted(order):
        out_sharding = out_sharding.transposed(tuple(order))  # (the layout before perm)
    a = lax.squeeze(a, plan.a_squeeze) if plan.a_squeeze else a
    b = lax.squeeze(b, plan.b_squeeze) if plan.b_squeeze else b
    a_ndim, b_ndim = len(a_shape) - len(plan.a_squeeze), len(b_shape) - len(plan.b_squeeze)
    out = lax.dot_general(a, b, (((a_ndim - 1,), (b_ndim - 1 - b_matrix,)),
                                 (plan.a_batch, plan.b_batch)),
                          precision, _preferred(preferred_element_type), out_sharding)
    return transpose(out, perm)  # (jnp's: nothing is bound for the identity)


class _MatmulPlan:
    """How matmul's batch dims (aligned at the right, as broadcasting aligns them) become one
    ``dot_general``, with nothing broadcast: a dim both operands have, of one size, is a
    batch dim of the contraction; a dim only one has, or of size 1 in the other (squeezed
    from it), is a free dim of the one that has it. So a matrix times a stack of matrices
    reads the matrix once, and keeps the stack's sharding."""

    def __init__(self, a_sizes: Sequence[int], b_sizes: Sequence[int]) -> None:
        n = self.batch_rank = max(len(a_sizes), len(b_sizes))
        a_sizes = [None] * (n - len(a_sizes)) + list(a_sizes)
        b_sizes = [None] * (n - len(b_sizes)) + list(b_sizes)
        self.batch: list[int] = []  # positions in the result, of each kind of dim
        self.a_free: list[int] = []
        self.b_free: list[int] = []
        self.a_batch: tuple[int, ...] = ()  # dims of the squeezed operands
        self.b_batch: tuple[int, ...] = ()
        self.a_squeeze: tuple[int, ...] = ()  # dims of the operands as given
        self.b_squeeze: tuple[int, ...] = ()
        self.problem = False
        a_dim = b_dim = 0  # the next dim of each operand, as given
        for position, (p, q) in enumerate(zip(a_sizes, b_sizes)):
            if p is not None and q is not None and p == q != 1:
                self.a_batch += (a_dim - len(self.a_squeeze),)
                self.b_batch += (b_dim - len(self.b_squeeze),)
                self.batch.append(position)
            elif q is None or (p is not None and q == 1 and p != 1):
                self.a_free.append(position)
                self.b_squeeze += (b_dim,) * (q is not None)
            elif p is None or p == 1:
                self.b_free.append(position)
                self.a_squeeze += (a_dim,) * (p is not None)
            else:
                self.problem = True
            a_dim, b_dim = a_dim + (p is not None), b_dim + (q is not None)
# --8<-- [end:matmul]


def tensordot(a, b, axes: int | Sequence[Any] = 2, *, precision=None,
              preferred_element_type=None):
    """Contracts the last ``axes`` dims of ``a`` with the first of ``b``, or the given pairs.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5))).shape
        (2, 5)
    """
    a, b = promote(a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if isinstance(axes, int):
        a_dims = tuple(range(len(a_shape) - axes, len(a_shape)))
        b_dims = tuple(range(axes))
    else:
        a_axes, b_axes = axes
        a_dims = (a_axes,) if isinstance(a_axes, int) else tuple(a_axes)
        b_dims = (b_axes,) if isinstance(b_axes, int) else tuple(b_axes)
        a_dims = tuple(d % len(a_shape) for d in a_dims)
        b_dims = tuple(d % len(b_shape) for d in b_dims)
    _check_contracted("tensordot", a_shape, b_shape, a_dims, b_dims)
    return lax.dot_general(a, b, ((a_dims, b_dims), ((), ())), precision,
                           _preferred(preferred_element_type))


def outer(a, b):
    """The outer product of two flattened arrays."""
    a, b = promote(ravel(a), ravel(b))
    return lax.dot_general(reshape(a, (-1, 1)), reshape(b, (1, -1)), (((1,), (0,)), ((), ())))


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contracts the last dims of ``a`` and ``b`` (a scalar operand multiplies)."""
    a, b = promote(a, b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    if not a_ndim or not b_ndim:
        return _scaled(a, b, precision, preferred_element_type)
    return tensordot(a, b, ((a_ndim - 1,), (b_ndim - 1,)), precision=precision,
                     preferred_element_type=preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of two flattened arrays, the first conjugated when it is complex."""
    a = ravel(a)
    if get_aval(a).dtype.kind == "c":
        a = lax.conj(a)
    return dot(a, ravel(b), precision=precision, preferred_element_type=preferred_element_type)


# --8<-- [start:einsum]
def einsum_path(subscripts: str, *operands: Any, optimize: Any = "greedy"
                ) -> tuple[list[tuple[int, ...]], str]:
    """The order ``einsum`` contracts ``operands`` in, as NumPy's and JAX's ``einsum_path``
    give it: a list of pairs of positions in the list of operands not yet contracted (each
    contraction's result goes last), and a description. Here the order is always left to
    right (``optimize`` is accepted), so the path is ``[(0, 1), (0, 1), ...]``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.einsum_path("ij,jk,kl->il", jnp.ones((2, 3)), jnp.ones((3, 4)),
        ...                 jnp.ones((4, 5)))[0]
        [(0, 1), (0, 1)]
    """
    inputs, output = _parse_einsum(subscripts, [get_aval(as_value(v)).ndim for v in operands])
    # In opt_einsum's convention a contraction's result goes last in the list, so the
    # running result is contracted with the first of the operands left: (0, last).
    path = [(0, 1)] + [(0, m - 1) for m in range(len(inputs) - 1, 1, -1)]
    steps, spec = [], inputs[0]
    for k, other in enumerate(inputs[1:], 1):
        needed = set(output).union(*inputs[k + 1:])
        kept = "".join(c for c in dict.fromkeys(spec + other) if c in needed)
        steps.append(f"  {spec},{other}->{kept}")
        spec = kept
    text = (f"  Complete contraction:  {','.join(inputs)}->{output}\n"
            f"  Contracted left to right, two operands at a time (optimize={optimize!r} is "
            f"accepted):\n" + "\n".join(steps))
    return (path if len(inputs) > 1 else [(0,)]), text


def einsum(subscripts: str, *operands: Any, out=None, optimize: Any = "auto", precision=None,
           preferred_element_type=None, out_sharding=None):
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Operands are contracted left to right, two at a time, each pair with one ``dot_general``;
    an index used by only one operand and not in the output is summed away first, and one
    repeated within an operand takes its diagonal (``"ii->i"``). ``...`` stands for the
    leading dims, which broadcast. ``optimize`` is accepted and the order stays left to
    right (JAX asks opt_einsum for a cheaper one; the result differs by rounding only).
    ``out_sharding`` (stage 4) is the result's layout, asked of the last contraction (with
    one operand there is none, and JAX's is ignored too).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.einsum("...ij,jk->...ik", jnp.ones((2, 3, 4)), jnp.ones((4, 5))).shape
        (2, 3, 5)
    """
    if out is not None:
        raise NotImplementedError("einsum: the 'out' argument is not supported: JAX arrays "
                                  "are immutable. Use the returned array instead.")
    canonicalize_precision(precision)
    preferred = _preferred(preferred_element_type)
    values = list(promote(*operands))
    inputs, output = _parse_einsum(subscripts, [get_aval(v).ndim for v in values])
    for k, (spec, v) in enumerate(zip(inputs, values)):
        if len(spec) != get_aval(v).ndim:
            raise ValueError(f"einsum: operand with subscripts {spec!r} has {get_aval(v).ndim} "
                             f"dims, expected {len(spec)}.")
        inputs[k], values[k] = _take_diagonals(spec, v)
    inputs, values = _broadcast_labels(inputs, values)
    _check_label_sizes(inputs, values)
    spec, acc = inputs[0], values[0]
    for i in range(1, len(values)):
        needed = set(output).union(*inputs[i + 1:])
        last = out_sharding is not None and i == len(values) - 1
        spec, acc = _einsum_pair(spec, acc, inputs[i], values[i], needed, precision, preferred,
                                 (out_sharding, output) if last else None)
    spec, acc = _sum_unused(spec, acc, set(output))
    acc = transpose(acc, [spec.index(c) for c in output])
    return acc if preferred is None else convert(acc, preferred)


def _take_diagonals(spec: str, x: Any) -> tuple[str, Any]:
    """An index repeated within one operand (``"ii"``) reads its diagonal: the two dims
    become one, last."""
    from .arrangement import diagonal
    for label in spec:
        if spec.count(label) > 1:
            first = spec.index(label)
            second = spec.index(label, first + 1)
            x = diagonal(x, axis1=first, axis2=second)
            spec = spec[:first] + spec[first + 1:second] + spec[second + 1:] + label
            return _take_diagonals(spec, x)
    return spec, x


def _broadcast_labels(inputs: list[str], values: list[Any]) -> tuple[list[str], list[Any]]:
    """An index of size 1 in one operand and more in another broadcasts, as in NumPy and
    JAX: the size-1 dim is squeezed out of its operand, which then does not use the index
    (its one value multiplies every term of the others)."""
    sizes = {label: size for spec, v in zip(inputs, values)
             for label, size in zip(spec, get_aval(v).shape) if size != 1}
    for k, (spec, v) in enumerate(zip(inputs, values)):
        shape = get_aval(v).shape
        drop = tuple(d for d, label in enumerate(spec) if shape[d] == 1 and label in sizes)
        if drop:
            inputs[k] = "".join(c for d, c in enumerate(spec) if d not in drop)
            values[k] = lax.squeeze(v, drop)
    return inputs, values


def _check_label_sizes(inputs: list[str], values: list[Any]) -> None:
    """Each index has one size in every operand that uses it (a ValueError, as in JAX)."""
    sizes: dict[str, int] = {}
    for k, (spec, v) in enumerate(zip(inputs, values)):
        for label, size in zip(spec, get_aval(v).shape):
            seen = sizes.setdefault(label, size)
            if seen != size:
                raise ValueError(f"einsum: index {label!r} has size {size} in operand {k}, but "
                                 f"{seen} in an earlier one.")


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, output = subscripts.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ndims):
        raise ValueError(f"einsum: {subscripts!r} names {len(inputs)} operands, but "
                         f"{len(ndims)} were given.")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            if c not in subscripts]
    counts = [ndim - len(spec.replace("...", "")) for spec, ndim in zip(inputs, ndims)]
    width = max([c for spec, c in zip(inputs, counts) if "..." in spec], default=0)
    leading = "".join(free[:width])  # the ellipsis' dims, right-aligned as they broadcast
    inputs = [spec.replace("...", leading[width - c:]) if "..." in spec else spec
              for spec, c in zip(inputs, counts)]
    if not arrow:  # implicit output: the ellipsis, then indices used once, alphabetically
        letters = "".join(inputs)
        output = leading + "".join(sorted(c for c in set(letters) - set(leading)
                                          if letters.count(c) == 1))
    elif "..." in output:
        output = output.replace("...", leading)
    if "." in "".join(inputs) + output:
        raise ValueError(f"einsum: {subscripts!r} has a '.' that is not part of '...'.")
    return inputs, output


def _sum_unused(spec: str, x: Any, needed: set[str]) -> tuple[str, Any]:
    unused = [d for d, c in enumerate(spec) if c not in needed]
    if not unused:
        return spec, x
    return "".join(c for c in spec if c in needed), _sum(x, tuple(unused))


def _einsum_pair(x_spec, x, y_spec, y, needed, precision, preferred, layout=None):
    """One contraction of einsum. ``layout``: (the result's out_sharding, its labels), for
    the last one, whose labels are the result's in another order."""
    x_spec, x = _sum_unused(x_spec, x, needed | set(y_spec))
    y_spec, y = _sum_unused(y_spec, y, needed | set(x_spec))
    shared = [c for c in x_spec if c in y_spec]
    batch = [c for c in shared if c in needed]
    contract = [c for c in shared if c not in needed]
    dims = (((tuple(x_spec.index(c) for c in contract), tuple(y_spec.index(c) for c in contract)),
             (tuple(x_spec.index(c) for c in batch), tuple(y_spec.index(c) for c in batch))))
    _check_contracted("einsum", get_aval(x).shape, get_aval(y).shape,
                      dims[0][0] + dims[1][0], dims[0][1] + dims[1][1])
    x_free = [c for c in x_spec if c not in shared]
    y_free = [c for c in y_spec if c not in shared]
    labels = "".join(batch + x_free + y_free)
    out_sharding = None if layout is None else layout[0].transposed(
        tuple(layout[1].index(c) for c in labels))
    return labels, lax.dot_general(x, y, dims, precision, preferred, out_sharding)
# --8<-- [end:einsum]
