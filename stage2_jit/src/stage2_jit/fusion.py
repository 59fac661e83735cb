"""Fusion: what a kernel computes where, decided once for every backend.

Everything here reads the program and knows no backend: which primitives fuse into the loop
of the value that uses them (elementwise ones, by their kind declared in stage 1, and the
index maps), which values must be materialized in memory, which dims of which values are the
same size by construction (``DimClasses``, the run-time dims ``d0``, ``d1``... of a kernel),
and which products BLAS can do. The renderers (``codegen_cpu.py``, ``codegen_cuda.py``) spell
the result as Numba source.

NB: in XLA this is ``xla/service/instruction_fusion.cc`` and its CPU and GPU subclasses, which
decide fusion on HLO before each backend emits LLVM IR.
"""

from __future__ import annotations

from stage1_autodiff.core import Primitive, PrimitiveKind
from stage1_autodiff.slicing import window_operand_dims

from stage1_autodiff import primitives as p

from .control_flow import cond_p, scan_p, while_p
from .jaxpr import Jaxpr, JaxprEqn, Var

ARG_REDUCTIONS = (p.argmax_p, p.argmin_p)
SCATTERS = (p.scatter_p, p.scatter_add_p, p.scatter_mul_p, p.scatter_min_p, p.scatter_max_p)


# What an inlined value costs to recompute at each use, in simple operations.
# --8<-- [start:recompute_cost]
EXPENSIVE = {p.exp_p, p.log_p, p.log1p_p, p.expm1_p, p.sin_p, p.cos_p, p.tan_p, p.tanh_p,
              p.logistic_p, p.pow_p, p.atan2_p, p.div_p, p.rem_p, p.sqrt_p, p.erf_inv_p}
RECOMPUTE_LIMIT = 2  # a value this cheap is recomputed where used rather than stored
# --8<-- [end:recompute_cost]

# Primitives that only say where to read: fused as index arithmetic.
INDEX_MAPS = {p.broadcast_in_dim_p, p.transpose_p, p.squeeze_p, p.slice_p, p.rev_p, p.iota_p}


def _is_trivial_reshape(eqn: JaxprEqn) -> bool:
    """A reshape that only adds or removes size-1 dims (keepdims): index arithmetic."""
    before, after = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    return [d for d in before if d != 1] == [d for d in after if d != 1]


def is_elementwise(prim: Primitive) -> bool:
    """An elementwise primitive with one result (its kind, declared in stage 1): computed
    where it is used, inside the loop of the value that reads it."""
    return prim.kind is PrimitiveKind.ELEMENTWISE and not prim.multiple_results


def is_reduction(prim: Primitive) -> bool:
    return prim.kind is PrimitiveKind.REDUCTION


def is_fusible(eqn: JaxprEqn) -> bool:
    if is_elementwise(eqn.primitive) or eqn.primitive in INDEX_MAPS:
        return True
    return eqn.primitive is p.reshape_p and _is_trivial_reshape(eqn)


# Primitives whose rule needs its operands as whole arrays in memory: library calls (BLAS, a
# reshape), and loops that read each operand element many times (a contraction).
ARRAY_OPERANDS = {p.dot_general_p, p.reshape_p, cond_p, while_p, scan_p}


def is_blas_dot(eqn: JaxprEqn) -> bool:
    """A float product BLAS does as one matrix product: no batch dims, one contracted dim,
    x's last (its other dims flattened into rows) or, for a matrix, its first (a transposed
    view); y a vector or a matrix. vmap of ``x @ W`` gives x of shape (batch, 1, k): rows."""
    (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
    x, y = (a.aval for a in eqn.invars)
    if lb or len(lc) != 1 or x.dtype != y.dtype or x.dtype.kind != "f":
        return False
    x_ok = lc[0] == x.ndim - 1 or (x.ndim == 2 and lc == (0,))
    return x.ndim >= 1 and y.ndim in (1, 2) and x_ok


# ------------------------------------------------------------------------------------------
# Dimensions: which axes of which values are the same size by construction
# ------------------------------------------------------------------------------------------


# --8<-- [start:dim_classes]
class DimClasses:
    """Union-find over (value, axis): two axes are in one class when the program's types make
    them equal (an elementwise operand and its result, a transposed axis, a kept axis of a
    reduction...). Each class is one run-time dim of the kernel, ``d0``, ``d1``...; so the
    source names a softmax's rows and columns once each, and two loops over the same class are
    visibly over the same range (which is what lets them merge)."""

    def __init__(self, jaxpr: Jaxpr) -> None:
        self.parent: dict[tuple[Var, int], tuple[Var, int]] = {}
        for eqn in jaxpr.eqns:
            for a, k, b, j in _equal_axes(eqn):
                if isinstance(a, Var) and isinstance(b, Var):  # not a literal operand
                    self.union((a, k), (b, j))

    def find(self, key: tuple[Var, int]) -> tuple[Var, int]:
        root = key
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while key != root:  # path compression
            self.parent[key], key = root, self.parent.get(key, key)
        return root

    def union(self, a: tuple[Var, int], b: tuple[Var, int]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _equal_axes(eqn: JaxprEqn):
    """(operand, axis, result, axis) pairs that the primitive's typing makes equal."""
    out = eqn.outvars[0] if eqn.outvars else None
    operands = [a for a in eqn.invars if isinstance(a, Var)]
    prim = eqn.primitive
    if is_elementwise(prim):
        for a in operands:
            if a.aval.ndim == out.aval.ndim:
                yield from ((a, k, out, k) for k in range(out.aval.ndim))
    elif prim is p.broadcast_in_dim_p and operands:
        for k, d in enumerate(eqn.params["broadcast_dimensions"]):
            if operands[0].aval.shape[k] == out.aval.shape[d]:
                yield operands[0], k, out, d
    elif prim is p.transpose_p:
        yield from ((operands[0], k, out, j) for j, k in enumerate(eqn.params["permutation"]))
    elif prim in (p.rev_p,) or is_reduction(prim) or prim in ARG_REDUCTIONS or (
            prim is p.squeeze_p or prim is p.reshape_p and _is_trivial_reshape(eqn)):
        yield from _kept_axes(eqn)
    elif prim in (p.sort_p, p.threefry2x32_p):  # operands and results all of one shape
        for x in [*operands, *eqn.outvars[1:]]:
            yield from ((x, k, out, k) for k in range(out.aval.ndim))
    elif prim is p.gather_p or prim in SCATTERS:
        yield from _indexed_axes(eqn)
    elif prim is p.concatenate_p:
        for x in operands:
            yield from ((x, k, out, k) for k in range(out.aval.ndim)
                        if k != eqn.params["dimension"])
    elif prim is p.pad_p:
        yield from ((eqn.invars[0], k, out, k)
                    for k, config in enumerate(eqn.params["padding_config"])
                    if tuple(config) == (0, 0, 0))
    elif prim is p.dot_general_p:
        x, y = eqn.invars
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        yield from ((x, i, y, j) for i, j in zip(lc, rc))
        x_free = [k for k in range(x.aval.ndim) if k not in lc and k not in lb]
        y_free = [k for k in range(y.aval.ndim) if k not in rc and k not in rb]
        for n, (i, j) in enumerate(zip(lb, rb)):
            yield x, i, out, n
            yield y, j, out, n
        yield from ((x, k, out, len(lb) + n) for n, k in enumerate(x_free))
        yield from ((y, k, out, len(lb) + len(x_free) + n) for n, k in enumerate(y_free))


def _indexed_axes(eqn: JaxprEqn):
    """A gather's result (a scatter's updates) has the indices' batch dims, in order, among
    its window dims; a window dim that spans its whole operand dim is that dim. A scatter's
    result is its operand's shape."""
    operand, indices = eqn.invars[:2]
    gathered = eqn.outvars[0] if eqn.primitive is p.gather_p else eqn.invars[2]
    window, batch = window_layout(eqn)
    yield from ((indices, i, gathered, d) for i, d in enumerate(batch))
    for d, g in window.items():
        if operand.aval.shape[d] == gathered.aval.shape[g]:
            yield operand, d, gathered, g
    if eqn.primitive in SCATTERS:
        yield from ((operand, d, eqn.outvars[0], d) for d in range(operand.aval.ndim))


def index_dims(eqn: JaxprEqn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A gather's (scatter's) indexed operand dims, its batching operand dims and their
    indices batch dims."""
    dn = eqn.params["dimension_numbers"]
    if eqn.primitive is p.gather_p:
        return dn.start_index_map, dn.operand_batching_dims, dn.start_indices_batching_dims
    return (dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
            dn.scatter_indices_batching_dims)


def batch_and_window(eqn: JaxprEqn, gathered: Var) -> tuple[list[int], list[int]]:
    """The dims of a gather's result (a scatter's updates) that are the indices' batch dims,
    and the window's: loops over the first read each index vector once."""
    _, batch = window_layout(eqn)
    return batch, [d for d in range(gathered.aval.ndim) if d not in batch]


def window_layout(eqn: JaxprEqn) -> tuple[dict[int, int], list[int]]:
    """For a gather (scatter): which dim of the result (updates) each window operand dim
    is, and which dims are the indices' batch dims, in order."""
    dn, gathered = eqn.params["dimension_numbers"], eqn.outvars[0]
    if eqn.primitive is p.gather_p:
        window_dims, dropped = dn.offset_dims, dn.collapsed_slice_dims
    else:
        window_dims, dropped, gathered = dn.update_window_dims, dn.inserted_window_dims, \
            eqn.invars[2]
    operand_dims = window_operand_dims(eqn.invars[0].aval.ndim, dropped, dn.operand_batching_dims)
    batch = [d for d in range(gathered.aval.ndim) if d not in window_dims]
    return dict(zip(operand_dims, window_dims)), batch
# --8<-- [end:dim_classes]


def _kept_axes(eqn: JaxprEqn):
    operand, out = eqn.invars[0], eqn.outvars[0]
    if eqn.primitive is p.rev_p:
        yield from ((operand, k, out, k) for k in range(out.aval.ndim))
        return
    if is_reduction(eqn.primitive) or eqn.primitive in ARG_REDUCTIONS:
        kept = [k for k in range(operand.aval.ndim) if k not in eqn.params["axes"]]
        yield from ((operand, k, out, j) for j, k in enumerate(kept))
        return
    before = [k for k, n in enumerate(operand.aval.shape) if n != 1]
    after = [k for k, n in enumerate(out.aval.shape) if n != 1]
    yield from ((operand, k, out, j) for k, j in zip(before, after))


# ------------------------------------------------------------------------------------------
# Row groups: a run of row reductions and the elementwise work around them (one kernel per
# row on the GPU: a softmax, a layer norm)
# ------------------------------------------------------------------------------------------


def kept_dims(eqn: JaxprEqn) -> list[int]:
    return [k for k in range(eqn.invars[0].aval.ndim) if k not in eqn.params["axes"]]


def is_row_reduction(eqn: JaxprEqn) -> bool:
    """A reduction over trailing dims that keeps at least one: each row reduces to one."""
    if not is_reduction(eqn.primitive):
        return False
    ndim, axes = eqn.invars[0].aval.ndim, tuple(sorted(eqn.params["axes"]))
    return 0 < len(axes) < ndim and axes == tuple(range(ndim - len(axes), ndim))


def row_group(work: list[JaxprEqn], i: int) -> list[JaxprEqn]:
    """The run of equations from ``work[i]`` (a row reduction) that can share its kernel:
    row reductions of the same shape, and elementwise values of the operand's shape (row
    values) or of the rows' shape, size-1 dims aside (row scalars)."""
    first = work[i]
    if not is_row_reduction(first):
        return [first]
    shape, kept = first.invars[0].aval.shape, len(kept_dims(first))
    rows = [d for d in shape[:kept] if d != 1]
    group = [first]
    for eqn in work[i + 1:]:
        out = eqn.outvars[0].aval.shape
        if is_reduction(eqn.primitive):
            joins = (is_row_reduction(eqn) and eqn.invars[0].aval.shape == shape
                     and len(kept_dims(eqn)) == kept)
        else:
            joins = is_fusible(eqn) and len(eqn.outvars) == 1 and (
                out == shape or [d for d in out if d != 1] == rows)
        if not joins:
            break
        group.append(eqn)
    return group
