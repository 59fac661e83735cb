"""The loop rules: primitives whose code is a loop nest of their own, for both renderers.

Gather, scatter, sort, pad, concatenate, argmax and the contractions BLAS cannot do are
neither fused into another loop nor library calls. Each rule here allocates its results and
reads its operands through the writer's ``expr``, so inlined operands stay inlined (a gather
of ``exp(x)`` computes only the elements it picks), and ends in the writer's ``_emit_nest``:
on the CPU a block of loops in the kernel, whose outer loop may be parallel; on CUDA a
grid-stride kernel over the nest's iterations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from stage1_autodiff.core import Primitive
from stage1_autodiff.slicing import GatherScatterMode

from stage1_autodiff import dtypes
from stage1_autodiff import prims as p

from .fusion import batch_and_window, index_dims, strided, window_layout
from .jaxpr import JaxprEqn, Var
from .kernel_writer import cast, indent, loop_index, nest, np_type, typed_constant

if TYPE_CHECKING:
    from .kernel_writer import KernelWriter

# --8<-- [start:scatters]
# How an update {new} combines with the element {old}: an operator, or an extremum's
# comparison; and for bools, whose add is or and multiply is and (as NumPy's).
SCATTER_COMBINES = {
    p.scatter_p: (None, "{new}"),
    p.scatter_add_p: ("+", "({old} | {new})"),
    p.scatter_mul_p: ("*", "({old} & {new})"),
    p.scatter_min_p: ("<", "({old} & {new})"),
    p.scatter_max_p: (">", "({old} | {new})"),
}
# --8<-- [end:scatters]

ARG_COMPARISONS = {p.argmax_p: ">", p.argmin_p: "<"}  # primitive: "better than" comparison


def scatter_combine(w: KernelWriter, prim: Primitive, dtype: np.dtype, old: str, new: str) -> str:
    op, bool_form = SCATTER_COMBINES[prim]
    if op is None or dtype == np.bool_:
        return bool_form.format(old=old, new=new)
    value = (w.extremum(op, old, new, dtype) if op in "<>"
             else f"({old} {op} {new})")
    return value if dtype.kind == "f" else f"{np_type(dtype)}({value})"  # wrap, as NumPy


# --8<-- [start:emit_contraction]
def emit_contraction(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """A dot_general that is not a plain float matrix product, as loops: each result
    element (batch dims, x's free dims, y's free dims) sums ``x * y`` over the contracting
    dims. The sum is in the type stage 1's impl sums in (``dot_accumulation_dtype``: the
    operands', or a wider ``preferred_element_type``; integers wrap, as NumPy's do), then
    converted to the result's."""
    x, y = eqn.invars
    out = eqn.outvars[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    index = loop_index(out.aval.ndim)
    # A contracted dim of size 1 needs no loop (per-example outer products, as vmap of
    # a weight's gradient makes): the innermost loop is then over y's free dim, which
    # vectorizes.
    sums = tuple("0" if x.aval.shape[d] == 1 else f"k{n}" for n, d in enumerate(lc))
    # The result's dims: batch, then x's free dims, then y's free dims.
    x_index = _contraction_index(x.aval.ndim, lb, lc, index, sums, first_free=len(lb))
    y_index = _contraction_index(y.aval.ndim, rb, rc, index, sums,
                                 first_free=x.aval.ndim - len(lc))
    dtype = dtypes.dot_accumulation_dtype(x.aval.dtype, eqn.params["preferred_element_type"])
    acc = f"{w._name_of(out)}_acc"
    inner: list[str] = []
    a, b = w.expr(x, x_index, inner, {}), w.expr(y, y_index, inner, {})
    if dtype != x.aval.dtype:
        a, b = cast(a, dtype), cast(b, dtype)
    body = [*inner, f"{acc} = {w._multiply_add(acc, a, b, dtype)}"]
    for n in reversed(range(len(lc))):
        if sums[n] != "0":
            body = [f"for {sums[n]} in range({w.dim(x, lc[n])}):", *indent(body)]
    result = acc if dtype.kind not in "iu" else f"{np_type(dtype)}({acc})"  # wrap
    if out.aval.dtype != dtype:
        result = cast(result, out.aval.dtype)
    body = [f"{acc} = {typed_constant(0, dtype)}", *body,
            f"{w._at(out, index)} = {result}"]
    shape = w._shape(out)
    w._emit_nest([w._allocate(out, shape)], shape, index, comment, body, {out}, {out})
# --8<-- [end:emit_contraction]

def emit_arg_reduction(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """argmax (argmin): a running best value and its index along the axis, replaced by a
    strictly larger (smaller) value, so the first of equal ones wins, or by the first NaN
    (NumPy's argmax and argmin return the index of the first NaN)."""
    operand, out = eqn.invars[0], eqn.outvars[0]
    axis, dtype = eqn.params["axes"][0], operand.aval.dtype
    better = ARG_COMPARISONS[eqn.primitive]
    index = loop_index(operand.aval.ndim)
    kept = [k for k in range(operand.aval.ndim) if k != axis]
    name = w._name_of(out)
    best, best_index, value = f"{name}_best", f"{name}_index", f"{name}_value"
    inner: list[str] = []
    inner.append(f"{value} = {w.expr(operand, index, inner, {})}")
    condition = f"{value} {better} {best}"
    if dtype.kind == "f":
        condition += f" or ({value} != {value} and {best} == {best})"
    worst = dtypes.lowest(dtype) if better == ">" else dtypes.highest(dtype)
    body = [f"{best} = {typed_constant(worst, dtype)}",
            f"{best_index} = 0",
            f"for {index[axis]} in range({w.dim(operand, axis)}):",
            *indent([*inner, f"if {condition}:",
                     f"    {best}, {best_index} = {value}, {index[axis]}"]),
            f"{w._at(out, tuple(index[k] for k in kept))} = "
            f"{np_type(out.aval.dtype)}({best_index})"]
    shape = w._shape(out)
    w._emit_nest([w._allocate(out, shape)], shape, tuple(index[k] for k in kept),
                    comment, body, {out}, {out})

# --8<-- [start:emit_cumulative]
# How a running value {acc} takes the next element {new}: an operator, or an extremum's
# comparison (NaN propagates, as NumPy's accumulate does).
CUMULATIVE_COMBINES = {p.cumsum_p: "+", p.cumprod_p: "*", p.cummax_p: ">", p.cummin_p: "<"}
CUMULATIVE_IDENTITIES = {p.cumsum_p: lambda dtype: 0, p.cumprod_p: lambda dtype: 1,
                         p.cummax_p: dtypes.lowest, p.cummin_p: dtypes.highest}


def emit_cumulative(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """cumsum, cumprod, cummax, cummin: for each line along ``axis`` (the outer loops, which
    may be parallel), a running value from the reduction's identity, combined with each
    element in turn (from the end with ``reverse``) and stored at its position. Integers
    wrap, as NumPy's accumulate does."""
    operand, out = eqn.invars[0], eqn.outvars[0]
    axis, dtype, prim = eqn.params["axis"], out.aval.dtype, eqn.primitive
    index = loop_index(operand.aval.ndim)
    acc, n = f"{w._name_of(out)}_acc", w.dim(operand, axis)
    step = f"{index[axis]}_step" if eqn.params["reverse"] else index[axis]
    inner: list[str] = []
    if eqn.params["reverse"]:
        inner.append(f"{index[axis]} = {n} - 1 - {step}")
    value = w.expr(operand, index, inner, {})
    op = CUMULATIVE_COMBINES[prim]
    combined = (w.extremum(op, acc, value, dtype) if op in "<>" else f"({acc} {op} {value})")
    if dtype.kind != "f":
        combined = f"{np_type(dtype)}({combined})"  # wrap, as NumPy
    body = [f"{acc} = {typed_constant(CUMULATIVE_IDENTITIES[prim](dtype), dtype)}",
            f"for {step} in range({n}):",
            *indent([*inner, f"{acc} = {combined}", f"{w._at(out, index)} = {acc}"])]
    kept = [k for k in range(operand.aval.ndim) if k != axis]
    w._emit_nest([w._allocate(out, w._shape(out))], [w.dim(out, k) for k in kept],
                 tuple(index[k] for k in kept), comment, body, {out},
                 {out} if axis != 0 else set())
# --8<-- [end:emit_cumulative]

# --8<-- [start:emit_gather]
def emit_gather(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """Loops over the result: the outer ones over the indices' batch dims, where each
    index vector is read once and its window's start put inside the operand (or, in
    ``fill`` mode, found not to fit: the fill value); the inner ones over the window,
    reading the operand at start + offset."""
    operand, out = eqn.invars[0], eqn.outvars[0]
    shape, index = w._shape(out), loop_index(out.aval.ndim)
    body: list[str] = []
    position, fits = window_position(w, eqn, out, index, body, clip=True)
    copy: list[str] = []
    value = w.expr(operand, position, copy, {})
    copy.append(f"{w._at(out, index)} = {value}")
    if eqn.params["mode"] is GatherScatterMode.FILL_OR_DROP:
        fill = typed_constant(eqn.params["fill_value"], out.aval.dtype)
        copy = [f"if {fits}:", *indent(copy),
                "else:", f"    {w._at(out, index)} = {fill}"]
    outer, inner = batch_and_window(eqn, out)
    body += nest(copy, tuple(index[d] for d in inner), [shape[d] for d in inner])
    rows = {out} if outer == list(range(len(outer))) else set()  # written at [row, ...]?
    w._emit_nest([w._allocate(out, shape)], [shape[d] for d in outer],
                    tuple(index[d] for d in outer), comment, body, {out}, rows)
# --8<-- [end:emit_gather]

# --8<-- [start:window_position]
def window_position(w: KernelWriter, eqn: JaxprEqn, gathered: Var, index: tuple[str, ...],
                     body: list[str], clip: bool) -> tuple[tuple[str, ...], str]:
    """The operand position that element ``index`` of a gather's result (a scatter's
    updates, ``gathered``) reads (writes), and a condition: its window fits."""
    operand, indices = eqn.invars[:2]
    indexed, batching, indices_batching = index_dims(eqn)
    window, batch = window_layout(eqn)
    batch_index = [index[d] for d in batch]
    position, fits = [], []
    for d in range(operand.aval.ndim):
        if d in batching:  # example b reads example b
            position.append(batch_index[indices_batching[batching.index(d)]])
            continue
        offset = index[window[d]] if d in window else None
        if d not in indexed:
            position.append(offset or "0")
            continue
        size = w.dim(gathered, window[d]) if d in window else "1"
        bound = f"{w.dim(operand, d)} - {size}"
        raw = w.expr(indices, (*batch_index, str(indexed.index(d))), body, {})
        start = w._temporary()
        body.append(f"{start} = np.int64({raw})  # start on operand dim {d}")
        fits.append(f"0 <= {start} <= {bound}")
        if clip:
            clipped = w._temporary()
            body.append(f"{clipped} = min(max({start}, 0), {bound})")
            start = clipped
        position.append(start if offset is None else f"{start} + {offset}")
    return tuple(position), " and ".join(fits) or "True"
# --8<-- [end:window_position]

def emit_scatter(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """Two loops: a copy of the operand (none when the operand is an array of the kernel's
    own that nothing reads afterwards: the updates go into it), then one serial pass over
    the updates in order, each combined into the element its index vector and window offset
    pick. An update
    whose window does not fit is dropped (clamped into range in ``clip`` mode);
    repeated indices combine one after another, as eager's ``ufunc.at`` does (for plain
    scatter, the last one wins)."""
    operand, updates = eqn.invars[0], eqn.invars[2]
    out = eqn.outvars[0]
    shape, index = w._shape(out), loop_index(out.aval.ndim)
    if w.owns_dead(operand):  # nothing reads the operand after this: update it in place
        w._statements([comment, f"{w._name_of(out)} = {w._array(operand)}  # in place, no copy"])
    else:
        body: list[str] = []
        body.append(f"{w._at(out, index)} = {w.expr(operand, index, body, {})}")
        setup = [w._allocate(out, shape)]
        w._emit_nest(setup, w.unless_aliased(out, operand, shape, setup), index, comment,
                     body, {out}, {out})
    w.reads = [(out, ":")]  # read anywhere: this pass cannot join the copy's loop
    update_index = loop_index(updates.aval.ndim)
    body = []
    clip = eqn.params["mode"] is GatherScatterMode.CLIP
    position, fits = window_position(w, eqn, updates, update_index, body, clip)
    update: list[str] = []
    new = w.expr(updates, update_index, update, {})
    target = w._at(out, position)
    combined = scatter_combine(w, eqn.primitive, out.aval.dtype, target, new)
    update.append(f"{target} = {combined}")
    outer, inner = batch_and_window(eqn, updates)
    update_shape = w._shape(updates)
    update = nest(update, tuple(update_index[d] for d in inner),
                  [update_shape[d] for d in inner])
    body += update if clip else [f"if {fits}:", *indent(update)]
    w._emit_nest([], [update_shape[d] for d in outer],
                    tuple(update_index[d] for d in outer),
                    "#   then the updates, in order (serial: repeated indices combine)",
                    body, {out}, set(), serial=True)

# --8<-- [start:emit_sort]
def emit_sort(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """Sorts each line along ``dimension``. Per line: the keys go into buffers; a stable
    argsort by the last key, then by each earlier one, gives the lexicographic order of
    eager's ``np.lexsort`` (NaN last, equal keys in their original order); every operand
    is then written in that order."""
    dimension, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    first = eqn.outvars[0]
    ndim, name = first.aval.ndim, w._name_of(first)
    used = [(x, out) for x, out in zip(eqn.invars, eqn.outvars) if w.uses[out]]
    setup = [w._allocate(out, w._shape(out)) for _, out in used]
    index = loop_index(ndim)
    line, length, order = index[dimension], w.dim(first, dimension), f"{name}_order"
    body: list[str] = []
    keys = []
    for j, key in enumerate(eqn.invars[:num_keys]):
        buffer = f"{name}_key{j}"
        fill: list[str] = []
        fill.append(f"{buffer}[{line}] = {w.expr(key, index, fill, {})}")
        body += [f"{buffer} = np.empty({length}, dtype={np_type(key.aval.dtype)})",
                 f"for {line} in range({length}):", *indent(fill)]
        keys.append(buffer)
    body.append(f"{order} = np.argsort({keys[-1]}, kind='mergesort')  # stable")
    for buffer in reversed(keys[:-1]):
        body.append(f"{order} = {order}[np.argsort({buffer}[{order}], kind='mergesort')]")
    sorted_index = tuple(f"{order}[{line}]" if k == dimension else i
                         for k, i in enumerate(index))
    write: list[str] = []
    memo: dict[tuple, str] = {}
    for operand, out in used:  # a result nothing reads is not written
        write.append(f"{w._at(out, index)} = "
                     f"{w.expr(operand, sorted_index, write, memo)}")
    body += [f"for {line} in range({length}):", *indent(write)]
    outer = [k for k in range(ndim) if k != dimension]
    written = {out for _, out in used}
    w._emit_nest(setup, [w.dim(first, k) for k in outer],
                    tuple(index[k] for k in outer), comment, body, written,
                    written if dimension != 0 else set())
# --8<-- [end:emit_sort]

def emit_pad(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """Two loops: the result filled with the padding value, then the operand copied in at
    ``low + i * (interior + 1)`` along each dim."""
    operand, padding_value = eqn.invars
    out = eqn.outvars[0]
    shape, index = w._shape(out), loop_index(out.aval.ndim)
    body: list[str] = []
    body.append(f"{w._at(out, index)} = {w.expr(padding_value, (), body, {})}")
    w._emit_nest([w._allocate(out, shape)], shape, index, comment, body, {out}, {out})
    w.reads = []
    body = []
    value = w.expr(operand, index, body, {})
    target = tuple(strided(low, i, interior + 1)
                   for (low, _, interior), i in zip(eqn.params["padding_config"], index))
    body.append(f"{w._at(out, target)} = {value}")
    w._emit_nest([], w._shape(operand), index,
                    "#   then the operand, at its place among the padding", body,
                    {out}, {out} if target[:1] == index[:1] else set())

def emit_concatenate(w: KernelWriter, eqn: JaxprEqn, comment: str) -> None:
    """One loop per operand, copying it into the result along ``dimension`` after the
    operands before it."""
    out, dimension = eqn.outvars[0], eqn.params["dimension"]
    index = loop_index(out.aval.ndim)
    setup = [w._allocate(out, w._shape(out))]
    offset: list[str] = []
    for n, operand in enumerate(eqn.invars):
        w.reads = []
        body: list[str] = []
        value = w.expr(operand, index, body, {})
        target = list(index)
        if offset:
            target[dimension] = f"({' + '.join(offset)} + {index[dimension]})"
        body.append(f"{w._at(out, tuple(target))} = {value}")
        note = comment if n == 0 else f"#   operand {n}, after {' + '.join(offset)}"
        w._emit_nest(setup, w._shape(operand), index, note, body,
                        {out}, {out} if dimension != 0 else set())
        setup = []
        offset.append(w.dim(operand, dimension))


# --8<-- [start:loop_rules]
LOOP_RULES: dict[Primitive, Callable[[KernelWriter, JaxprEqn, str], None]] = {
    **{prim: emit_arg_reduction for prim in p.ARG_REDUCTIONS},
    p.gather_p: emit_gather,
    **{prim: emit_scatter for prim in p.SCATTERS},
    p.sort_p: emit_sort,
    **{prim: emit_cumulative for prim in p.CUMULATIVE},
    p.pad_p: emit_pad,
    p.concatenate_p: emit_concatenate,
}
# --8<-- [end:loop_rules]


def _contraction_index(ndim: int, batch: tuple[int, ...], contract: tuple[int, ...],
                       index: tuple[str, ...], sums: tuple[str, ...],
                       first_free: int) -> tuple[str, ...]:
    """Where a dot_general operand is read: its batch dims at the result's batch indices,
    its free dims at the result's indices from ``first_free`` on, its contracting dims at the
    summation indices."""
    result = [""] * ndim
    for n, d in enumerate(batch):
        result[d] = index[n]
    for n, d in enumerate(contract):
        result[d] = sums[n]
    free = [d for d in range(ndim) if d not in batch and d not in contract]
    for n, d in enumerate(free):
        result[d] = index[first_free + n]
    return tuple(result)
