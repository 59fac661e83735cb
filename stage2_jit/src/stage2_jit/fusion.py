"""Fusion: what a kernel computes where, decided once for every backend.

Everything here reads the program and knows no backend: which primitives fuse into the loop
of the value that uses them (elementwise ones, by their kind declared in stage 1, and the
index maps), which values must be materialized in memory, which dims of which values are the
same size by construction (``DimClasses``, the run-time dims ``d0``, ``d1``... of a kernel),
and which products BLAS can do. Its result is a ``KernelPlan``: plain data, one step per
stored value (or per group of values one loop computes), which ``lower().as_text()`` prints
and the renderers (``codegen_cpu.py``, ``codegen_cuda.py``) spell as Numba source.

NB: in XLA this is ``xla/service/instruction_fusion.cc`` and its CPU and GPU subclasses, which
decide fusion on HLO before each backend emits LLVM IR.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from stage1_autodiff.core import Primitive, PrimitiveKind
from stage1_autodiff.slicing import window_operand_dims

from stage1_autodiff import prims as p

from .control_flow import cond_p, scan_p, while_p
from .jaxpr import Jaxpr, JaxprEqn, Literal, Var, names_in_order

ARG_REDUCTIONS, SCATTERS = p.ARG_REDUCTIONS, p.SCATTERS  # declared with them, in stage 1


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
    if lb or len(lc) != 1 or x.dtype != y.dtype or x.dtype.kind != "f" or (
            eqn.outvars[0].aval.dtype != x.dtype):  # a preferred_element_type of another width
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
    elif prim in (p.sort_p, p.threefry2x32_p, *p.CUMULATIVE):  # all of one shape
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


# ------------------------------------------------------------------------------------------
# What is stored, and what runs in parallel
# ------------------------------------------------------------------------------------------

PARALLEL_MIN_ELEMENTS = 1 << 15  # smaller loops run serially: threads cost more than they save


def use_counts(jaxpr: Jaxpr) -> Counter:
    """How many times each value is read (by an equation, or as an output)."""
    uses = Counter(a for eqn in jaxpr.eqns for a in eqn.invars if isinstance(a, Var))
    uses.update(v for v in jaxpr.outvars if isinstance(v, Var))
    return uses


# --8<-- [start:choose_materialized]
def choose_materialized(jaxpr: Jaxpr) -> set[Var]:
    """The values written to memory; the rest are computed where they are used."""
    uses = use_counts(jaxpr)
    chosen = {v for v in jaxpr.outvars if isinstance(v, Var)}
    cost: dict[Var, int] = {}  # operations to recompute an inlined value
    for eqn in jaxpr.eqns:
        if is_reduction(eqn.primitive) or not is_fusible(eqn):
            chosen.update(eqn.outvars)
        if eqn.primitive in ARRAY_OPERANDS and not is_fusible(eqn):
            chosen.update(a for a in eqn.invars if isinstance(a, Var))
        if not is_fusible(eqn):
            continue
        out = eqn.outvars[0]
        own = 0 if not is_elementwise(eqn.primitive) else (
            4 if eqn.primitive in EXPENSIVE else 1)
        cost[out] = own + sum(cost.get(a, 0) for a in eqn.invars
                              if isinstance(a, Var) and a not in chosen)
        if is_elementwise(eqn.primitive) and uses[out] > 1 and cost[out] > RECOMPUTE_LIMIT:
            chosen.add(out)  # computed once, not once per use
    return chosen - set(jaxpr.invars)
# --8<-- [end:choose_materialized]


def work_of(eqn: JaxprEqn) -> int:
    """The elements a step's loops go through (multiply-adds for a contraction): what
    decides whether its outer loop is worth threads."""
    first, operand = eqn.outvars[0].aval, eqn.invars[0].aval if eqn.invars else None
    if is_reduction(eqn.primitive) or eqn.primitive in ARG_REDUCTIONS:
        return operand.size
    if eqn.primitive is p.dot_general_p:
        (lc, _), _ = eqn.params["dimension_numbers"]
        return first.size * math.prod(operand.shape[d] for d in lc)
    if eqn.primitive is p.sort_p:
        return first.size * len(eqn.invars)
    return first.size


def runs_parallel(work: int) -> bool:
    """Whether a loop over ``work`` elements is split among threads. The choice is part of
    the source, so a kernel is shared by the shapes on the same side of the threshold."""
    return work >= PARALLEL_MIN_ELEMENTS


class Reads:
    """Which stored values computing a value reads, through the producers inlined into it."""

    def __init__(self, jaxpr: Jaxpr, materialized: set[Var]) -> None:
        self.stored = materialized | set(jaxpr.invars)
        self.producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}

    def in_step(self, eqn: JaxprEqn, shape: tuple[int, ...]) -> bool:
        """Whether ``eqn`` reads every array at the same position as it writes (or reads a
        scalar), so that its loop can run over the flattened arrays: one index, no nest."""
        if eqn.primitive is p.broadcast_in_dim_p:  # only a scalar may be broadcast
            operand = eqn.invars[0]
            return operand.aval.shape == () and (
                isinstance(operand, Literal) or self._var_in_step(operand, ()))
        if not is_elementwise(eqn.primitive):
            return False
        return all(isinstance(a, Literal) or self._var_in_step(a, shape) for a in eqn.invars)

    def _var_in_step(self, var: Var, shape: tuple[int, ...]) -> bool:
        if var in self.stored:
            return var.aval.shape == shape or var.aval.shape == ()
        return self.in_step(self.producer[var], shape)

    def stored_reads(self, eqn: JaxprEqn) -> set[Var]:
        """The stored values (materialized or inputs) ``eqn``'s loop reads."""
        found: set[Var] = set()
        for a in eqn.invars:
            if isinstance(a, Var):
                found |= ({a} if a in self.stored or a not in self.producer
                          else self.stored_reads(self.producer[a]))
        return found

    def inlined(self, eqn: JaxprEqn) -> list[JaxprEqn]:
        """The producers computed inside ``eqn``'s loop, in program order."""
        found: dict[int, JaxprEqn] = {}
        stack = [a for a in eqn.invars if isinstance(a, Var)]
        while stack:
            var = stack.pop()
            if var in self.stored or var not in self.producer:
                continue
            producer = self.producer[var]
            found[id(producer)] = producer
            stack += [a for a in producer.invars if isinstance(a, Var)]
        order = {id(e): k for k, e in enumerate(self.producer.values())}
        return sorted(found.values(), key=lambda e: order[id(e)])


# ------------------------------------------------------------------------------------------
# The kernel plan: what each step computes, and how
# ------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One step of the schedule: the equations whose results it stores, and how."""
    eqns: list[JaxprEqn]  # one equation, or a row group's
    how: str  # "loop", "flat loop", "reduction", "rows", "BLAS", "call", or a rule's name
    inlined: list[JaxprEqn]  # computed inside its loops, never stored
    parallel: bool
    joins: int | None = None  # shares the outer loop of this earlier step (the CPU merges)
    stored: set[Var] = field(default_factory=set)  # rows: the values written to memory
    row_values: set[Var] = field(default_factory=set)  # rows: values of the operand's shape


# --8<-- [start:kernel_plan]
@dataclass
class KernelPlan:
    """What fusion decided for a program: the stored values and the steps that compute them,
    in order. Plain data: the renderers spell it, ``lower().as_text()`` prints it."""
    jaxpr: Jaxpr
    materialized: set[Var]
    flat_loops: bool  # whether elementwise loops may run over flattened arrays
    steps: list[Step] = field(default_factory=list)

    def text(self) -> str:
        names = names_in_order(self.jaxpr)
        lines = []
        for k, step in enumerate(self.steps):
            shown = step.stored if step.how == "rows" else self.materialized
            outs = " ".join(names[v] for e in step.eqns for v in e.outvars
                            if v in shown or step.how != "rows" and is_reduction(e.primitive))
            prims = " ".join(dict.fromkeys(str(e.primitive) for e in step.eqns))
            notes = ["parallel" if step.parallel else "serial"]
            if step.inlined:
                notes.append("inlines " + " ".join(str(e.primitive) for e in step.inlined))
            if step.joins is not None:
                notes.append(f"in step {step.joins}'s loop")
            lines.append(f"{k:<3} {step.how:<10} {outs} = {prims}  ({'; '.join(notes)})")
        return "\n".join(lines) or "(no steps: the outputs are inputs or constants)"
# --8<-- [end:kernel_plan]


# --8<-- [start:in_place]
def in_place_inputs(plan: KernelPlan) -> dict[Var, list[Var]]:
    """For each output a loop of its own writes, the inputs of its type it may be written
    into: that loop reads them only at the position it writes, and no later step reads them;
    for a scatter's output, its operand, when neither its indices nor updates read it.
    The runtime writes there when the caller donated the input (``jit(donate_argnums=)``)."""
    jaxpr, reads = plan.jaxpr, Reads(plan.jaxpr, plan.materialized)
    found: dict[Var, list[Var]] = {}
    for k, step in enumerate(plan.steps):
        eqn = step.eqns[0]
        out = eqn.outvars[0] if eqn.outvars else None
        if out not in jaxpr.outvars or step.joins is not None or any(
                later.joins == k for later in plan.steps):
            continue
        read_later = {v for later in plan.steps[k + 1:] for e in later.eqns
                      for v in reads.stored_reads(e)}
        if step.how in ("loop", "flat loop") and reads.in_step(eqn, out.aval.shape):
            candidates = jaxpr.invars
        elif eqn.primitive in SCATTERS:  # its operand, if its indices and updates don't read it
            candidates = [eqn.invars[0]]
            read_later |= {v for a in eqn.invars[1:] if isinstance(a, Var) for v in (
                {a} if a in reads.stored else reads.stored_reads(reads.producer[a]))}
        else:
            continue
        found[out] = [x for x in candidates if x in jaxpr.invars and x not in read_later
                      and x not in jaxpr.outvars
                      and (x.aval.shape, x.aval.dtype) == (out.aval.shape, out.aval.dtype)]
    return found
# --8<-- [end:in_place]


def plan_kernels(jaxpr: Jaxpr, rows: bool = False, flat_loops: bool | None = None) -> KernelPlan:
    """The plan for ``jaxpr``: a step per stored value, in program order. ``rows``: a run of
    row reductions and the values around them is one step (the GPU's kernel per row).
    ``flat_loops``: whether elementwise loops may run over flattened arrays (by default,
    unless the program reduces, whose row loops they could otherwise merge with)."""
    materialized = choose_materialized(jaxpr)
    if flat_loops is None:
        flat_loops = not any(is_reduction(eqn.primitive) for eqn in jaxpr.eqns)
    plan = KernelPlan(jaxpr, materialized, flat_loops)
    reads = Reads(jaxpr, materialized)
    work = [eqn for eqn in jaxpr.eqns if eqn.outvars and (
        eqn.outvars[0] in materialized or is_reduction(eqn.primitive))]
    i = 0
    while i < len(work):
        group = row_group(work, i) if rows else [work[i]]
        step = _row_step(group, jaxpr, reads) if len(group) > 1 else None
        if step is None:  # one equation (or a group whose values are read at other rows)
            plan.steps.append(_step(work[i], reads, flat_loops))
            i += 1
            continue
        plan.steps.append(step)
        materialized -= step.row_values - step.stored  # recomputed inside, never stored
        reads = Reads(jaxpr, materialized)
        i += len(group)
    return plan


def _step(eqn: JaxprEqn, reads: Reads, flat: bool) -> Step:
    prim, out = eqn.primitive, eqn.outvars[0] if eqn.outvars else None
    if is_reduction(prim):
        how = "reduction"
    elif is_fusible(eqn):
        how = "flat loop" if (flat and out.aval.ndim > 1
                              and reads.in_step(eqn, out.aval.shape)) else "loop"
    elif prim is p.dot_general_p:
        how = "BLAS" if is_blas_dot(eqn) else "dot_general"
    elif prim in (cond_p, while_p, scan_p):
        how = "call"
    else:
        how = str(prim)
    parallel = how not in ("call", "BLAS", "reshape") and runs_parallel(work_of(eqn))
    return Step([eqn], how, reads.inlined(eqn), parallel)


# --8<-- [start:row_step]
def _row_step(group: list[JaxprEqn], jaxpr: Jaxpr, reads: Reads) -> Step | None:
    """A row group as one step (one kernel, a block per row): its values of the operand's
    shape are recomputed where used, and stored only when another step or the caller reads
    them. None when a member reads a row's scalar at another row, which one block per row
    cannot do."""
    first = group[0]
    shape, kept = first.invars[0].aval.shape, len(kept_dims(first))
    index = tuple(f"i{k}" for k in range(len(shape)))
    rows = tuple(index[k] for k in range(kept) if shape[k] != 1)
    members = {id(eqn) for eqn in group}
    row_values = {e.outvars[0] for e in group
                  if e.outvars[0].aval.shape == shape and not is_reduction(e.primitive)}
    read_elsewhere = {v for e in jaxpr.eqns if id(e) not in members and e.outvars
                      and (e.outvars[0] in reads.stored or is_reduction(e.primitive))
                      for v in reads.stored_reads(e)}
    read_elsewhere |= {v for v in jaxpr.outvars if isinstance(v, Var)}
    stored = {e.outvars[0] for e in group if e.outvars[0] in read_elsewhere}
    check = _RowCheck(reads, row_values, rows)
    for eqn in group:
        out = eqn.outvars[0]
        if is_reduction(eqn.primitive):
            ok = check.atom(eqn.invars[0], index)
        elif out in row_values:
            ok = out not in stored or check.eqn(eqn, index)
        else:  # a scalar per row
            ok = check.eqn(eqn, row_index(out.aval.shape, rows))
        if not ok:
            return None
        if out not in row_values:
            check.scalars.add(out)
    inlined = {id(e): e for eqn in group for e in reads.inlined(eqn) if id(e) not in members}
    return Step(group, "rows", list(inlined.values()), parallel=True, stored=stored,
                row_values=row_values)


class _RowCheck:
    """Whether every read of a row's scalar inside a row group is at the row being computed:
    the index walked through the inlined producers, as the renderer will write it."""

    def __init__(self, reads: Reads, row_values: set[Var], rows: tuple[str, ...]) -> None:
        self.producer, self.rows = reads.producer, rows
        self.stored = reads.stored - row_values  # row values are recomputed inside
        self.scalars: set[Var] = set()

    def atom(self, atom, index: tuple[str, ...]) -> bool:
        if isinstance(atom, Literal):
            return True
        if atom in self.scalars:
            return index == row_index(atom.aval.shape, self.rows)
        if atom in self.stored or atom not in self.producer:
            return True
        return self.eqn(self.producer[atom], index)

    def eqn(self, eqn: JaxprEqn, index: tuple[str, ...]) -> bool:
        if is_elementwise(eqn.primitive):
            return all(self.atom(a, index) for a in eqn.invars)
        return eqn.primitive is p.iota_p or self.atom(eqn.invars[0], read_index(eqn, index))


def row_index(shape: tuple[int, ...], rows: tuple[str, ...]) -> tuple[str, ...]:
    """Where a row scalar of ``shape`` (the rows' dims, maybe with size-1 dims) is read for
    the row at ``rows`` (the indices of the rows' dims that are not of size 1): those
    indices in order, 0 at the size-1 dims."""
    names = iter(rows)
    return tuple("0" if d == 1 else next(names) for d in shape)
# --8<-- [end:row_step]


def read_index(eqn: JaxprEqn, index: tuple[str, ...],
               extent: Callable[[Var, int], str] = lambda var, k: f"n{k}") -> tuple[str, ...]:
    """Where in its operand an index map (``eqn``) reads for element ``index`` of its result;
    ``extent(var, k)`` names the size of a dim (a reversal counts from it)."""
    prim, operand = eqn.primitive, eqn.invars[0].aval
    if prim is p.broadcast_in_dim_p:
        dims, out_shape = eqn.params["broadcast_dimensions"], eqn.outvars[0].aval.shape
        return tuple("0" if operand.shape[k] == 1 and out_shape[d] != 1 else index[d]
                     for k, d in enumerate(dims))
    if prim is p.transpose_p:
        result = [""] * operand.ndim
        for j, k in enumerate(eqn.params["permutation"]):
            result[k] = index[j]
        return tuple(result)
    if prim is p.slice_p:
        strides = eqn.params["strides"] or (1,) * operand.ndim
        return tuple(strided(start, i, stride) for start, i, stride
                     in zip(eqn.params["start_indices"], index, strides))
    if prim is p.rev_p:
        return tuple(f"({extent(eqn.invars[0], k)} - 1 - {i})"
                     if k in eqn.params["dimensions"] else i for k, i in enumerate(index))
    # squeeze, or a reshape that only adds or removes size-1 dims
    kept = iter(i for i, n in zip(index, eqn.outvars[0].aval.shape) if n != 1)
    return tuple("0" if n == 1 else next(kept) for n in operand.shape)


def strided(start: int, i: str, stride: int) -> str:
    """``start + i * stride`` as plain as it can be written (a number, for a number ``i``)."""
    if i.isdigit():
        return str(start + int(i) * stride)
    scaled = i if stride == 1 else f"{i} * {stride}"
    return scaled if start == 0 else f"({start} + {scaled})"


# ------------------------------------------------------------------------------------------
# Merging loops (the CPU): consecutive loops over the same dim become one
# ------------------------------------------------------------------------------------------


@dataclass
class Loop:
    """What merging needs to know of a loop a renderer wrote."""
    index: str | None  # the outer loop's index and extent; None for plain statements
    extent: str | None
    produces: set[Var] = field(default_factory=set)  # the values it computes
    writes: set[Var] = field(default_factory=set)  # of those, written at [outer index, ...]
    reads: list[tuple[Var, str]] = field(default_factory=list)  # read at [first index, ...]
    serial: bool = False  # iterations must run in order (a scatter's updates)


# --8<-- [start:can_join]
def row_local(group: list[Loop]) -> set[Var]:
    """The values the group writes only at its own outer index: a value that one loop
    writes row by row and another anywhere (a pad's fill, then its copy) is not."""
    written = set().union(*(b.writes for b in group))
    return written - set().union(*(b.produces - b.writes for b in group))


def can_join(group: list[Loop], loop: Loop) -> bool:
    """Whether ``loop`` can run inside the group's outer loop: same range, and it reads what
    the group computes only at its own outer index."""
    first = group[0]
    if loop.index is None or first.index is None or loop.extent != first.extent:
        return False
    if loop.serial or any(b.serial for b in group):
        return False  # a parallel loop joined to it would run it in parallel
    produced = set().union(*(b.produces for b in group))
    local = row_local(group)
    return all(var in local and first_index == loop.index
               for var, first_index in loop.reads if var in produced)
# --8<-- [end:can_join]
