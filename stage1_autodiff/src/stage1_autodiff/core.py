"""The core: abstract values, primitives, ``bind``, interpreters (traces) and the array types.

Every operation in the library ends in ``some_p.bind(*args, **params)``. ``bind`` finds the
innermost active interpreter among the arguments and hands it the primitive. With nothing
active that is the :class:`EvalTrace`, which runs the primitive's NumPy implementation from
``impl_rules``. ``grad`` and ``jvp`` push interpreters of their own (see ``autodiff.py``);
later stages add tracing to a jaxpr (stage 2), batching (stage 3) and sharding (stage 4).

Each interpreter has a *level*, its place on the stack. A value from a lower level meets a
higher one by being *lifted* into it as a constant, which is what lets transformations nest
without confusing each other's perturbations.
"""

from __future__ import annotations

import contextvars
import enum
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np

from . import dtypes
from .config import _check_platforms, config
from .errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from .extension import device_memory, executor_for, place
from .special_values import CHECKS, check_results

# --8<-- [start:shaped_array]
_SHORT_DTYPE_NAMES = {
    "bool": "bool", "int32": "i32", "uint32": "u32", "float32": "f32",
    "int64": "i64", "uint64": "u64", "float64": "f64",
    "int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16", "float16": "f16",
    "bfloat16": "bf16", "complex64": "c64", "complex128": "c128",
    "void": "float0",  # the dtype of gradients of integers, the only void dtype here
    **{d.name: d.name.replace("float", "f") for d in dtypes.NARROW_FLOATS},  # f8_e4m3fn
}


class ShapedArray(NamedTuple):
    """The abstract value (aval) of an array: what is known without its numbers.

    A NamedTuple, so it is immutable, hashable (a jit cache key in stage 2) and cheap to make.

    Example:
        >>> ShapedArray((3, 4), np.dtype("float32")).str_short()
        'f32[3,4]'
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False
    sharding: Any = None  # how the array is split over devices: stage 4 fills it in

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def str_short(self) -> str:
        """JAX's short form, ``f32[3,4]``, as printed in jaxprs and error messages."""
        name = _SHORT_DTYPE_NAMES.get(self.dtype.name, self.dtype.name)
        if self.sharding is not None:  # stage 4: ``f32[8@data,4]``, the split in the type
            return f"{name}[{','.join(self.sharding.dim_strings(self.shape))}]"
        return f"{name}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"
# --8<-- [end:shaped_array]


# --8<-- [start:primitive_kind]
class PrimitiveKind(enum.Enum):
    """What a primitive is, declared once where it is made, for every stage that reads it:
    batching, sharding and the partitioner treat all elementwise primitives alike, and the
    kernel generator fuses them and knows a reduction by its identity.

    NB: XLA asks the same of an HLO instruction (``HloInstruction::IsElementwise``); JAX
    builds its elementwise primitives with ``standard_naryop`` in ``jax/_src/lax/lax.py``.
    """

    ELEMENTWISE = "elementwise"  # each result element from the operands' at its index
    REDUCTION = "reduction"  # combines along ``axes``, starting from an identity
    SHAPE = "shape"  # moves, drops or repeats elements and computes none
    OTHER = "other"  # a rule of its own everywhere (contractions, indexing, sorting...)
# --8<-- [end:primitive_kind]


# The kinds by the short names the blocks of primitives.py use.
ELEMENTWISE = PrimitiveKind.ELEMENTWISE
REDUCTION = PrimitiveKind.REDUCTION
SHAPE = PrimitiveKind.SHAPE


# --8<-- [start:primitive]
class Primitive:
    """An operation the interpreters know by name, with one rule per interpreter.

    ``kind`` says what it is (:class:`PrimitiveKind`); a reduction also has an ``identity``,
    a function of the dtype giving the value it starts from (0 for a sum, the lowest value
    for a max).

    Example:
        >>> from stage1_autodiff.primitives import sin_p
        >>> sin_p.bind(np.float32(0.0))
        Array(0., dtype=float32)
        >>> sin_p.kind
        <PrimitiveKind.ELEMENTWISE: 'elementwise'>
    """

    def __init__(self, name: str, multiple_results: bool = False, *,
                 kind: PrimitiveKind = PrimitiveKind.OTHER,
                 identity: Callable[[np.dtype], Any] | None = None) -> None:
        if (kind is PrimitiveKind.REDUCTION) != (identity is not None):
            raise ValueError(f"Primitive {name!r}: a reduction, and only a reduction, has an "
                             f"identity.")
        self.name = name
        self.multiple_results = multiple_results
        self.kind = kind
        self.identity = identity
        all_primitives.append(self)

    def bind(self, *args: Any, **params: Any) -> Any:
        """Applies the primitive through the innermost active interpreter: the heart of the
        library. Every operation ends here."""
        if _all_on_host(args, params):
            # the common eager case, in short: host arrays, which the eval trace would run
            # on the host (``EvalTrace.process_primitive``, with no other executor to ask)
            outs = run_on_host(self, args, params)
        else:
            trace = find_top_trace(args)
            # (the trace's own tracers, the usual operands, need no call to full_raise)
            tracers = [arg if isinstance(arg, Tracer) and arg._trace is trace
                       else full_raise(trace, arg) for arg in args]
            outs = trace.process_primitive(self, tracers, params)
        return outs if self.multiple_results else outs[0]

    def __repr__(self) -> str:
        return self.name


def _all_on_host(args: tuple[Any, ...], params: dict[str, Any]) -> bool:
    """Whether the eval trace would run this op on the host: no ``make_jaxpr`` is staging
    every op, no result is asked for on devices, and every operand is a host array. (A loop
    rather than ``all`` over a generator: this runs once per op, and the loop is 0.3 µs
    quicker.)"""
    for a in args:
        if type(a) is not Array:
            return False  # (a tracer's op is decided here, at its first operand)
    return not (trace_state.dynamic_trace.level
                or params and params.get("out_sharding") is not None)


all_primitives: list[Primitive] = []


def primitives_of_kind(kind: PrimitiveKind) -> list[Primitive]:
    """The primitives made so far that are of ``kind``, in the order they were made.

    Example:
        >>> from stage1_autodiff import primitives
        >>> [p.name for p in primitives_of_kind(PrimitiveKind.REDUCTION)][:2]
        ['reduce_sum', 'reduce_max']
    """
    return [prim for prim in all_primitives if prim.kind is kind]

# The rule tables of stage 1, one entry per primitive (a test checks they are complete).
impl_rules: dict[Primitive, Callable[..., Any]] = {}  # NumPy arrays in, NumPy arrays out
vjp_rules: dict[Primitive, Callable[..., Any]] = {}   # see autodiff.py for the signature
# Primitives whose result is weakly typed when all their operands are, whatever its dtype:
# the comparisons, so that ``1.5 > 2`` is a weak bool (JAX's rule for every n-ary op; for the
# others we look only at operands of the result's dtype, see _result_weak_type).
weak_when_operands_weak: set[Primitive] = set()
# Primitives whose first operand never counts: ``select_n``'s int32 ``which`` (JAX's rule).
weak_from_the_rest: set[Primitive] = set()
jvp_rules: dict[Primitive, Callable[..., Any]] = {}
# The JVP rules that take None for a zero tangent (a constant's) and skip its term, as JAX's
# rules skip a symbolic ``Zero``: those made by ``primitives.defjvp``, one term per operand.
# A term from an array of zeros can be NaN where the derivative is not (0 * log(x) at x < 0).
jvp_rules_take_none: set[Primitive] = set()
# The VJP rules that also take ``needs`` (one bool per operand) and skip the cotangents of
# operands that are not being differentiated, as JAX's transpose rules skip defined primals.
# Only rules whose skipped work is large bother: dot_general's (the gradient of x @ W with
# respect to the data x is a whole matrix product that nobody wants), and stage 2's jit's.
vjp_rules_take_needs: set[Primitive] = set()
# The VJP rules of primitives with several results that take None for a result no cotangent
# reached (JAX's symbolic zero, ``ad.Zero``) instead of an array of zeros: the linear algebra
# rules, whose pullback would otherwise carry 0 * inf into the others (an eigenvector's
# derivative is infinite at a repeated eigenvalue, the eigenvalues' is not).
vjp_rules_take_none: set[Primitive] = set()
# --8<-- [end:primitive]


# --8<-- [start:trace_stack]
class MainTrace:
    """One active interpreter: its level on the stack, its Trace class and its state."""

    __slots__ = ("level", "trace_type", "global_data", "trace")

    def __init__(self, level: int, trace_type: type[Trace], global_data: Any) -> None:
        self.level = level
        self.trace_type = trace_type
        self.global_data = global_data
        self.trace = trace_type(self)  # traces hold no state of their own: make one, reuse it

    def __repr__(self) -> str:
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class _TraceState(threading.local):
    """The interpreter stack, one per thread, with the eval interpreter at the bottom."""

    def __init__(self) -> None:
        self.trace_stack: list[MainTrace] = [MainTrace(0, EvalTrace, None)]
        # Stage 2's make_jaxpr sets this so that even ops on constants get staged.
        self.dynamic_trace: MainTrace = self.trace_stack[0]
        self.numpy_quiet = False  # whether NumPy's floating-point warnings are already off
        # While a program that a grad claimed runs (``autodiff.primal_below``), the number of
        # interpreters then on the stack: those compute its custom_vjp calls by their fwd.
        self.claim_depth = 0


@contextmanager
def new_main(trace_type: type[Trace], global_data: Any = None) -> Iterator[MainTrace]:
    """Pushes a new interpreter on the stack for the duration of the ``with`` block."""
    stack = trace_state.trace_stack
    main = MainTrace(len(stack), trace_type, global_data)
    stack.append(main)
    try:
        with numpy_warnings_off():
            yield main
    finally:
        stack.pop()


@contextmanager
def dynamic_trace(main: MainTrace) -> Iterator[None]:
    """Makes ``main`` the interpreter every operation goes to, constants included: stage 2's
    ``make_jaxpr`` stages with it, and the eval interpreter (``trace_state.trace_stack[0]``)
    makes operations on concrete values run now again inside a trace."""
    previous = trace_state.dynamic_trace
    trace_state.dynamic_trace = main
    try:
        yield
    finally:
        trace_state.dynamic_trace = previous


class numpy_warnings_off:  # noqa: N801 -- used as a function: ``with numpy_warnings_off():``
    """NaN and inf propagate silently, as in JAX: NumPy's floating-point warnings are off
    inside every transformation (entered once here rather than once per primitive).

    A class rather than a generator function: ``grad`` enters it twice per call, and the
    generator's machinery cost a microsecond each time."""

    __slots__ = ("_errstate",)

    def __enter__(self) -> None:
        state = trace_state
        self._errstate = None if state.numpy_quiet else np.errstate(all="ignore")
        if self._errstate is not None:
            self._errstate.__enter__()
            state.numpy_quiet = True

    def __exit__(self, *exc_info: Any) -> None:
        if self._errstate is not None:
            trace_state.numpy_quiet = False
            self._errstate.__exit__(*exc_info)


def bind(prim: Primitive, *args: Any, **params: Any) -> Any:
    """``prim.bind(*args, **params)``, as a function."""
    return prim.bind(*args, **params)


def bind_below(prim: Primitive, args: list[Any], params: dict[str, Any]) -> list[Any]:
    """``prim.bind`` for an interpreter that passes an op on to the level below, with its
    results always as a list. Host operands of a plain primitive go straight to the host,
    as ``bind`` would send them (a primitive with a ``bind`` of its own still gets it)."""
    if type(prim) is Primitive and _all_on_host(args, params):
        return run_on_host(prim, args, params)
    outs = prim.bind(*args, **params)
    return outs if prim.multiple_results else [outs]


def find_top_trace(xs: Sequence[Any]) -> Trace:
    """The interpreter of the highest level among the arguments' tracers."""
    top = trace_state.dynamic_trace  # the bottom (eval) trace unless make_jaxpr is running
    level = top.level
    for x in xs:
        if isinstance(x, Tracer) and x._trace.main.level > level:
            top = x._trace.main
            level = top.level
    if level:  # (``_check_alive(top)``, inline: this runs once per op)
        stack = trace_state.trace_stack
        if level >= len(stack) or stack[level] is not top:
            _check_alive(top)
    return top.trace


def _check_alive(main: MainTrace) -> None:
    stack = trace_state.trace_stack
    if main.level >= len(stack) or stack[main.level] is not main:
        raise UnexpectedTracerError(
            f"Encountered an escaped tracer: a value from a transformation (grad, jvp, jit, "
            f"vmap, ...) that has already finished ({main}) was used outside of it. Return it "
            f"from the transformed function instead of storing it in a global or closure.")


def full_raise(trace: Trace, val: Any) -> Any:
    """Brings ``val`` into ``trace``: lifts values from lower levels, rejects escaped ones."""
    if not isinstance(val, Tracer):
        return trace.pure(val)
    level = trace.main.level
    if val._trace.main is trace.main:
        return val
    # --8<-- [start:task1_3]
    owner = val._trace.main
    _check_alive(owner)
    if owner.level < level:
        return trace.lift(val)
    raise UnexpectedTracerError(
        f"Can't lift a value of level {owner.level} into level {level}: the value belongs to "
        f"a transformation nested inside the one that is using it.")
    # --8<-- [end:task1_3]
# --8<-- [end:trace_stack]


class Trace:
    """An interpreter: how to handle primitives whose inputs are its own tracers."""

    def __init__(self, main: MainTrace) -> None:
        self.main = main

    def pure(self, val: Any) -> Any:
        """Turns a constant (not a tracer) into a value of this interpreter."""
        raise NotImplementedError

    def lift(self, val: Tracer) -> Any:
        """Turns a tracer of a lower level into a value of this interpreter."""
        raise NotImplementedError

    def process_primitive(self, prim: Primitive, tracers: list[Any],
                          params: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def process_custom_vjp_call(self, prim: Primitive, fun: Callable, fwd: Callable,
                                bwd: Callable, tracers: list[Any],
                                out_trees: Callable) -> list[Any]:
        """How a ``custom_vjp`` function is applied; by default it is just called."""
        del prim, fwd, bwd, out_trees
        return fun(*tracers)

    def process_custom_jvp_call(self, prim: Primitive, fun: Callable, jvp: Callable,
                                tracers: list[Any]) -> list[Any]:
        """How a ``custom_jvp`` function is applied: by default as a primitive whose params
        are the function and its rule (``custom_jvp.py`` has the rules)."""
        return self.process_primitive(prim, tracers, dict(fun=fun, jvp=jvp))


# --8<-- [start:eval_trace]
class EvalTrace(Trace):
    """The bottom interpreter: runs each primitive's NumPy implementation."""

    def pure(self, val: Any) -> Array:
        return val if type(val) is Array else asarray(val)

    lift = pure

    def process_primitive(self, prim: Primitive, tracers: list[Array],
                          params: dict[str, Any]) -> list[Array]:
        # An array that lives elsewhere (a GPU, several devices), or a result asked for on
        # several devices, is run there (the extension point's first seam).
        run = executor_for(tracers, params)
        if run is None:
            return run_on_host(prim, tracers, params)
        outs = run(prim, tracers, params)
        if CHECKS.any:  # jax_debug_nans / jax_debug_infs
            check_results(prim, outs, tracers, params)
        return outs

    def process_custom_vjp_call(self, prim: Primitive, fun: Callable, fwd: Callable,
                                bwd: Callable, tracers: list[Array],
                                out_trees: Callable) -> list[Array]:
        # The impl runs ``fun``. Unlike other impls it is given the Arrays, not their NumPy
        # values: ``fun`` binds primitives, which need the weak types.
        return impl_rules[prim](*tracers, fun=fun)

    def process_custom_jvp_call(self, prim: Primitive, fun: Callable, jvp: Callable,
                                tracers: list[Array]) -> list[Array]:
        return impl_rules[prim](*tracers, fun=fun, jvp=jvp)  # Arrays in, as above


def run_on_host(prim: Primitive, arrays: Sequence[Array], params: dict[str, Any]
                ) -> list[Array]:
    """``prim``'s NumPy implementation on host arrays, its results typed as Arrays."""
    values = list(map(_value_of, arrays))  # (a C loop: this runs once per op)
    kind = prim.kind
    if kind is ELEMENTWISE and len(values) == 2 and values[0].dtype != values[1].dtype \
            and prim.name != "select_n":
        raise TypeError(f"lax.{prim.name} requires arguments of one dtype, got "
                        f"{values[0].dtype.name} and {values[1].dtype.name}. lax does not "
                        f"promote: convert one (x.astype(...)), or call jnp's function.")
    if trace_state.numpy_quiet or kind is SHAPE:  # (moves no arithmetic)
        outs = impl_rules[prim](*values, **params)
    elif kind is ELEMENTWISE:  # NumPy's arithmetic, and nothing else
        outs = _quietly(impl_rules[prim], values, params)
    else:  # an eager op outside any transformation: silence NumPy for this one call
        with np.errstate(all="ignore"):
            outs = impl_rules[prim](*values, **params)
    if CHECKS.any:  # jax_debug_nans / jax_debug_infs
        check_results(prim, [outs] if not prim.multiple_results else outs, arrays, params)
    if not prim.multiple_results:
        out = np.asarray(outs)
        if kind is ELEMENTWISE and out.dtype.itemsize == 1 and out.dtype in dtypes.VIA_FLOAT16:
            out = _through_float16(prim, values, params, out.dtype)
        return [Array(out, _result_weak_type(prim, arrays, out.dtype, params))]
    # An impl with several results may return Arrays when it knows their weak types
    # (stage 2's jit does: they come from the program's output types).
    return [out if isinstance(out, Array) else
            Array(np.asarray(out), _result_weak_type(prim, arrays, out.dtype, params))
            for out in outs]


_value_of = attrgetter("_value")
_EXACT_ON_8_BIT_FLOATS = {"convert_element_type", "bitcast_convert_type", "nextafter",
                          "reduce_precision"}  # (each rounds once, or not at all)


def _through_float16(prim: Primitive, values: list[Any], params: dict[str, Any],
                     narrow: np.dtype) -> np.ndarray:
    """An op on 8-bit floats as XLA computes it: in float16 (on a CPU itself in float32,
    rounded), then rounded to the 8-bit type. ml_dtypes rounds float32 results once, which
    differs in a few values in a hundred for the types with few mantissa bits."""
    if prim.name in _EXACT_ON_8_BIT_FLOATS:
        return np.asarray(impl_rules[prim](*values, **params))
    wide = [v.astype(np.float32) if v.dtype == narrow else v for v in values]
    with np.errstate(all="ignore"):
        return np.asarray(impl_rules[prim](*wide, **params)).astype(np.float16).astype(narrow)


class _QuietContext(threading.local):
    """Per thread, a ``contextvars`` context in which NumPy's floating-point warnings are off
    for good. Running a call in it costs a fifth of entering and leaving ``np.errstate``
    (about 0.8 µs, a seventh of an eager op on a small array). NumPy keeps its error state in
    a context variable. The context is empty otherwise, so only elementwise primitives run
    in it: their impls are NumPy arithmetic, which reads no other context variable (a
    callback's user code might)."""

    def __init__(self) -> None:
        self.context = contextvars.Context()
        self.context.run(np.errstate(all="ignore").__enter__)  # never left


_quiet = _QuietContext()


def _quietly(impl: Callable, values: list[Any], params: dict[str, Any]) -> Any:
    """``impl(*values, **params)`` with NumPy's warnings off (and marked off, so that an impl
    which binds primitives itself does not enter the context again)."""
    state = trace_state
    state.numpy_quiet = True
    try:
        return _quiet.context.run(impl, *values, **params)
    finally:
        state.numpy_quiet = False


def _result_weak_type(prim: Primitive, args: Sequence[Array], out_dtype: np.dtype,
                      params: dict[str, Any]) -> bool:
    """A result is weakly typed when all its operands of the same dtype are (JAX's rule for
    most primitives: the predicate of a select or the indices of a gather do not count)."""
    if params and "weak_type" in params:  # convert_element_type says explicitly
        return params["weak_type"]
    if not any(map(_weak_type_of, args)):  # no operand is weak (the usual case), nor is
        return False                         # the result
    if prim in weak_when_operands_weak:
        return all(map(_weak_type_of, args))
    if prim in weak_from_the_rest:
        args = args[1:]
    same_dtype = False
    for a in args:
        if a.dtype == out_dtype:
            if not a.weak_type:
                return False
            same_dtype = True
    return same_dtype


_weak_type_of = attrgetter("weak_type")
# --8<-- [end:eval_trace]


trace_state = _TraceState()


# --8<-- [start:array_methods]
class ArrayMethods:
    """Operators and methods shared by concrete arrays and tracers.

    Each one calls the ``numpy`` module (``jnp``), so a traced value behaves exactly like an
    array: ``x * y`` on tracers is ``jnp.multiply(x, y)``, which binds ``mul_p``.
    """

    __array_priority__ = 100  # so that ``np.ndarray + Array`` gives our __radd__

    # Arithmetic, with reflected forms. (``jnp.add`` and the others are ufunc objects, as in
    # JAX; an operator calls the plain function inside, ``jnp.ufuncs.add``, directly.)
    def __neg__(self): return jnp.ufuncs.negative(self)
    def __pos__(self): return self
    def __abs__(self): return jnp.abs(self)
    def __add__(self, other): return jnp.ufuncs.add(self, other)
    def __radd__(self, other): return jnp.ufuncs.add(other, self)
    def __sub__(self, other): return jnp.ufuncs.subtract(self, other)
    def __rsub__(self, other): return jnp.ufuncs.subtract(other, self)
    def __mul__(self, other): return jnp.ufuncs.multiply(self, other)
    def __rmul__(self, other): return jnp.ufuncs.multiply(other, self)
    def __truediv__(self, other): return jnp.true_divide(self, other)
    def __rtruediv__(self, other): return jnp.true_divide(other, self)
    def __floordiv__(self, other): return jnp.floor_divide(self, other)
    def __rfloordiv__(self, other): return jnp.floor_divide(other, self)
    def __mod__(self, other): return jnp.remainder(self, other)
    def __rmod__(self, other): return jnp.remainder(other, self)
    def __divmod__(self, other): return jnp.divmod(self, other)
    def __rdivmod__(self, other): return jnp.divmod(other, self)
    def __pow__(self, other): return jnp.power(self, other)
    def __rpow__(self, other): return jnp.power(other, self)
    def __matmul__(self, other): return jnp.matmul(self, other)
    def __rmatmul__(self, other): return jnp.matmul(other, self)

    # Comparisons return arrays, so arrays are unhashable, as in JAX.
    def __eq__(self, other): return jnp.equal(self, other)  # type: ignore[override]
    def __ne__(self, other): return jnp.not_equal(self, other)  # type: ignore[override]
    def __lt__(self, other): return jnp.less(self, other)
    def __le__(self, other): return jnp.less_equal(self, other)
    def __gt__(self, other): return jnp.greater(self, other)
    def __ge__(self, other): return jnp.greater_equal(self, other)

    # Bitwise and logical operators.
    def __and__(self, other): return jnp.bitwise_and(self, other)
    def __rand__(self, other): return jnp.bitwise_and(other, self)
    def __or__(self, other): return jnp.bitwise_or(self, other)
    def __ror__(self, other): return jnp.bitwise_or(other, self)
    def __xor__(self, other): return jnp.bitwise_xor(self, other)
    def __rxor__(self, other): return jnp.bitwise_xor(other, self)
    def __invert__(self): return jnp.invert(self)
    def __lshift__(self, other): return jnp.left_shift(self, other)
    def __rlshift__(self, other): return jnp.left_shift(other, self)
    def __rshift__(self, other): return jnp.right_shift(self, other)
    def __rrshift__(self, other): return jnp.right_shift(other, self)

    # Indexing. Arrays are immutable: updates go through ``x.at[idx]``.
    def __getitem__(self, idx): return jnp.indexing.getitem(self, idx)

    def __setitem__(self, idx, value):
        raise TypeError(
            f"JAX arrays are immutable and do not support in-place item assignment. Instead of "
            f"x[idx] = y, use x = x.at[idx].set(y) (or .add, .multiply, .min, .max). "
            f"Array type: {type(self).__name__}.")

    @property
    def at(self): return jnp.indexing.IndexUpdateHelper(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object: the array is 0-dimensional.")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array.")
        return (self[i] for i in range(self.shape[0]))

    @property
    def ndim(self) -> int: return len(self.shape)

    @property
    def size(self) -> int: return int(np.prod(self.shape, dtype=np.int64))

    @property
    def T(self): return jnp.transpose(self)

    # Methods that mirror functions of the numpy module. ``out`` exists so that NumPy's own
    # functions (np.sum(x) calls x.sum(axis=..., dtype=..., out=None)) work on our arrays;
    # ``options`` are the function's others (``where=``, ``initial=``...).
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **options):
        return jnp.sum(self, axis, dtype, _no_out(out), keepdims, **options)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **options):
        return jnp.mean(self, axis, dtype, _no_out(out), keepdims, **options)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **options):
        return jnp.prod(self, axis, dtype, _no_out(out), keepdims, **options)

    def max(self, axis=None, out=None, keepdims=False, **options):
        return jnp.max(self, axis, _no_out(out), keepdims, **options)

    def min(self, axis=None, out=None, keepdims=False, **options):
        return jnp.min(self, axis, _no_out(out), keepdims, **options)

    def all(self, axis=None, out=None, keepdims=False, **options):
        return jnp.all(self, axis, _no_out(out), keepdims, **options)

    def any(self, axis=None, out=None, keepdims=False, **options):
        return jnp.any(self, axis, _no_out(out), keepdims, **options)

    def argmax(self, axis=None, out=None, keepdims=False):
        return jnp.argmax(self, axis, _no_out(out), keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        return jnp.argmin(self, axis, _no_out(out), keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **options):
        return jnp.var(self, axis, dtype, _no_out(out), ddof, keepdims, **options)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **options):
        return jnp.std(self, axis, dtype, _no_out(out), ddof, keepdims, **options)

    def cumsum(self, axis=None, dtype=None, out=None):
        return jnp.cumsum(self, axis, dtype, _no_out(out))

    def cumprod(self, axis=None, dtype=None, out=None):
        return jnp.cumprod(self, axis, dtype, _no_out(out))

    def round(self, decimals=0, out=None): return jnp.round(self, decimals, _no_out(out))
    def __round__(self, ndigits=None):  # as Python's round: an integer without ndigits
        out = jnp.round(self, ndigits or 0)
        return out if ndigits is not None else jnp.astype(out, int)
    def argsort(self, axis=-1, **options): return jnp.argsort(self, axis, **options)
    def sort(self, axis=-1, **options): return jnp.sort(self, axis, **options)
    def argpartition(self, kth, axis=-1): return jnp.argpartition(self, kth, axis)
    def searchsorted(self, v, side="left", sorter=None, **options):
        return jnp.searchsorted(self, v, side, sorter, **options)
    def take(self, indices, axis=None, out=None, mode=None, **options):
        return jnp.take(self, indices, axis, _no_out(out), mode, **options)
    def repeat(self, repeats, axis=None, **options):
        return jnp.repeat(self, repeats, axis, **options)
    def diagonal(self, offset=0, axis1=0, axis2=1):
        return jnp.diagonal(self, offset, axis1, axis2)
    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return jnp.trace(self, offset, axis1, axis2, dtype, _no_out(out))
    def nonzero(self, *, size=None, fill_value=None):
        return jnp.nonzero(self, size=size, fill_value=fill_value)
    def ptp(self, axis=None, out=None, keepdims=False):
        return jnp.ptp(self, axis, _no_out(out), keepdims)
    def compress(self, condition, axis=None, **options):
        return jnp.compress(condition, self, axis, **options)
    def choose(self, choices, out=None, mode="raise"):
        return jnp.choose(self, choices, _no_out(out), mode)
    def conj(self): return jnp.conj(self)
    def conjugate(self): return jnp.conjugate(self)
    def copy(self): return jnp.copy(self)
    def clone(self): return jnp.copy(self)
    def view(self, dtype=None, type=None): return jnp.bits.view(self, dtype, type)  # noqa: A002
    # A new array, as JAX's: donating the copy (of a parameter tree, say) leaves the original.
    def __copy__(self): return jnp.copy(self)
    def __deepcopy__(self, memo): return jnp.copy(self)
    def __complex__(self) -> complex: return complex(self._concrete_value("complex(x)"))

    def __contains__(self, value) -> bool:  # ``value in x``: of a vector, for a scalar
        if value is None or isinstance(value, str) or self.ndim != 1 or np.ndim(value) != 0:
            raise ValueError(f"`value in x` searches a vector x for a scalar value; got x of "
                             f"shape {self.shape} and {value!r}. Use jnp.isin(x, value) for "
                             f"an elementwise search.")
        return bool(jnp.any(jnp.equal(self, value)))

    @property
    def real(self): return jnp.real(self)

    @property
    def imag(self): return jnp.imag(self)

    @property
    def mT(self): return jnp.matrix_transpose(self)  # noqa: N802 -- NumPy's name

    @property
    def itemsize(self) -> int: return self.dtype.itemsize

    @property
    def nbytes(self) -> int: return self.size * self.dtype.itemsize

    @property
    def flat(self):
        raise NotImplementedError("JAX arrays have no .flat iterator (it would write into "
                                  "the array): use x.ravel() or x.flatten() instead.")

    # Names older JAX had, which JAX 0.10 answers with an AttributeError saying what replaced
    # them; so do we.
    @property
    def device_buffer(self):
        raise AttributeError("x.device_buffer was removed from JAX: use x.addressable_data(0).")

    @property
    def device_buffers(self):
        raise AttributeError("x.device_buffers was removed from JAX: use "
                             "[shard.data for shard in x.addressable_shards].")

    def astype(self, dtype, copy=False, device=None):
        return jnp.astype(self, dtype, copy=copy, device=device)
    def to_device(self, device, *, stream=None):  # the array API's name for device_put
        if stream is not None:
            raise NotImplementedError("x.to_device(device, stream=...): there are no streams "
                                      "here (nor in JAX's CPU client); leave stream out.")
        return place(self, device, None)
    def ravel(self, order="C"): return jnp.ravel(self, order)
    def flatten(self, order="C"): return jnp.ravel(self, order)
    def squeeze(self, axis=None): return jnp.squeeze(self, axis)
    def swapaxes(self, axis1, axis2): return jnp.swapaxes(self, axis1, axis2)
    def clip(self, min=None, max=None): return jnp.clip(self, min, max)
    def dot(self, other): return jnp.dot(self, other)

    def reshape(self, *shape, order="C", out_sharding=None):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return jnp.reshape(self, shape, order=order, out_sharding=out_sharding)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return jnp.transpose(self, axes or None)

    # Conversions to Python values need concrete numbers.
    def __array__(self, dtype=None, copy=None):
        value = self._concrete_value("np.asarray(x)")
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)  # a new array
        if copy:
            return value.copy()
        # The array is immutable, as JAX's: NumPy sees its buffer read-only (a write through
        # ``np.asarray(x)`` would change ``x``, and every array computed from it later).
        view = value.view()
        view.flags.writeable = False
        return view

    def __bool__(self) -> bool:
        _check_bool_conversion(self.shape)  # known from the type: no need to concretize
        return bool(self._concrete_value("bool(x)", TracerBoolConversionError))

    def __float__(self) -> float: return float(self._concrete_value("float(x)"))
    def __int__(self) -> int: return int(self._concrete_value("int(x)"))

    def __index__(self) -> int:
        if not dtypes.is_int(self.dtype) or self.shape != ():
            raise TypeError(f"Only integer scalar arrays can be converted to a scalar index, "
                            f"got an array of dtype {self.dtype} and shape {self.shape}.")
        return int(self._concrete_value("operator.index(x)", TracerIntegerConversionError))

    def item(self): return self._concrete_value("x.item()").item()
    def tolist(self): return self._concrete_value("x.tolist()").tolist()
    def tobytes(self, order="C"): return self._concrete_value("x.tobytes()").tobytes(order)

    def _concrete_value(self, context: str,
                        error: type[TypeError] = ConcretizationTypeError) -> np.ndarray:
        """The NumPy value, for ``context`` (``"bool(x)"``); a tracer whose value is not
        known raises ``error``: JAX's class for that conversion."""
        raise NotImplementedError
# --8<-- [end:array_methods]


def _check_bool_conversion(shape: tuple[int, ...]) -> None:
    size = int(np.prod(shape))
    if size == 0:
        raise ValueError("The truth value of an empty array is ambiguous: it has no element "
                         "to test. Use x.size > 0 to ask whether it is empty.")
    if size > 1:
        raise ValueError(f"The truth value of an array with more than one element (shape "
                         f"{shape}) is ambiguous. Use x.any() or x.all().")


def _no_out(out: Any) -> None:
    if out is not None:
        raise TypeError("The 'out' argument is not supported: JAX arrays are immutable. Use "
                        "the returned array instead.")
    return None


class Tracer(ArrayMethods):
    """A value that stands for an array while an interpreter is running.

    Subclasses say what they carry: a primal and a tape node (``grad``), a primal and a
    tangent (``jvp``), an abstract value (``jit``), a batch dimension (``vmap``).
    """

    __slots__ = ("_trace",)
    _trace: Trace

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]: return self.aval.shape

    @property
    def dtype(self) -> np.dtype: return self.aval.dtype

    @property
    def weak_type(self) -> bool: return self.aval.weak_type

    def _concrete_value(self, context: str,
                        error: type[TypeError] = ConcretizationTypeError) -> np.ndarray:
        raise error(
            f"{context} needs a concrete value, but it was called on an abstract tracer "
            f"{self.aval.str_short()} ({type(self).__name__}).")

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on a tracer "
            f"{self.aval.str_short()} ({type(self).__name__}). A NumPy array would leave the "
            f"transformation, so derivatives (or, in later stages, compiled code) could not see "
            f"the operations on it. Use jax.numpy functions instead of numpy ones on traced "
            f"values.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.aval.str_short()}>"


@dataclass(frozen=True)
class Device:
    """Where an array's buffer lives. Stage 1 has one: the host CPU, holding NumPy arrays.
    Stage 2 adds a CUDA GPU (``jax.devices("gpu")``)."""
    platform: str  # "cpu" or "gpu", as JAX names them
    id: int = 0
    device_kind: str = "cpu"
    process_index: int = 0  # the process that drives it (stage 4, on several processes)

    def __repr__(self) -> str:
        return f"{'Cpu' if self.platform == 'cpu' else 'Cuda'}Device(id={self.id})"

    def memory_stats(self) -> dict[str, int]:
        """The memory this device's buffers use, with JAX's key names: ``bytes_in_use`` and
        ``peak_bytes_in_use``, ``num_allocs`` and ``largest_alloc_size``, ``pool_bytes`` and
        ``peak_pool_bytes`` (what stage 2's pool holds, in use or kept for reuse), and
        ``bytes_limit`` (the host's memory, where every simulated device lives; a GPU's
        own)."""
        return {"bytes_limit": _HOST_MEMORY, **device_memory(self)}


_HOST_MEMORY = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


CPU_DEVICE = Device("cpu")


def _check_default_device(value: Any) -> None:
    """``jax_default_device`` takes a device, one platform's name, or None."""
    if value is None or isinstance(value, Device):
        return
    if not isinstance(value, str) or "," in value:
        raise ValueError(f"jax.default_device takes a device (jax.devices('cpu')[0]), one "
                         f"platform name such as 'cpu' or 'gpu', or None, got {value!r} of type "
                         f"{type(value).__name__}.")
    _check_platforms(value)


config.on_update("jax_default_device", _check_default_device)


@dataclass(frozen=True)
class SingleDeviceSharding:
    """The layout of an array that one device holds whole: every array's until stage 4
    splits them (``x.sharding``; JAX's ``jax.sharding.SingleDeviceSharding``)."""

    device: Device
    memory_kind: str = "device"

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self.device!r}, memory_kind={self.memory_kind})"

    device_set = property(lambda self: {self.device})
    addressable_devices = device_set
    num_devices = property(lambda self: 1)
    is_fully_replicated = is_fully_addressable = property(lambda self: True)

    def shard_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape)

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Device, tuple]:
        return {self.device: (slice(None),) * len(shape)}

    addressable_devices_indices_map = devices_indices_map


@dataclass(frozen=True, eq=False)
class Shard:
    """One block of an array, as ``x.addressable_shards`` lists them (JAX's ``jax.Shard``):
    the device holding it, its ``index`` (a tuple of slices into the global array), which
    copy of that block it is (``replica_id``: 0 for the first device holding it) and the
    block itself, an array (``data``)."""

    device: Device
    index: tuple
    replica_id: int
    data: Any

    def __repr__(self) -> str:
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


class DeletedBuffer:
    """What a deleted array holds instead of its buffer: its shape and dtype, and an error for
    every use of its values (through NumPy's conversion and dispatch protocols)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape, self.dtype = shape, dtype

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def _deleted(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"Array has been deleted with shape={self.dtype.name}"
                           f"[{','.join(map(str, self.shape))}].")

    __array__ = __array_ufunc__ = __array_function__ = __getitem__ = __setitem__ = _deleted
    __len__ = __iter__ = __float__ = __int__ = __bool__ = __index__ = item = _deleted
    reshape = astype = copy = tolist = view = _deleted
    # what later stages read off a device buffer, or off a sharded array's blocks
    copy_to_host = get = items = values = keys = __contains__ = _deleted
    __cuda_array_interface__ = property(_deleted)


# --8<-- [start:array]
class Array(ArrayMethods):
    """A concrete array: a NumPy buffer plus whether it is weakly typed.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.array([1.0, 2.0])
        Array([1., 2.], dtype=float32)
    """

    __slots__ = ("_value", "weak_type")

    def __init__(self, value: np.ndarray, weak_type: bool = False) -> None:
        self._value = value
        self.weak_type = weak_type

    # Read by C getters (``attrgetter``) rather than Python functions: dispatch reads an
    # operand's shape and dtype several times per op, and a Python property is a call.
    shape = property(attrgetter("_value.shape"), doc="The array's shape.")
    dtype = property(attrgetter("_value.dtype"), doc="The array's dtype.")

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self._value.shape, self._value.dtype, self.weak_type)

    def block_until_ready(self) -> Array:
        """Waits for the computation to finish; eager NumPy work is already finished."""
        return self

    def delete(self) -> None:
        """Lets go of the buffer (as donating the array to ``jit`` does); the array keeps its
        type, and any use of its values raises JAX's error."""
        if not self.is_deleted():
            self._value = DeletedBuffer(self._value.shape, self._value.dtype)

    def is_deleted(self) -> bool:
        return type(self._value) is DeletedBuffer

    @property
    def device(self) -> Device:
        """The device holding the buffer: the host CPU (stage 2's GPU arrays override it)."""
        return CPU_DEVICE

    def devices(self) -> set[Device]:
        return {self.device}

    @property
    def sharding(self) -> SingleDeviceSharding:
        """The array's layout: all of it on its one device (stage 4's arrays are split)."""
        return SingleDeviceSharding(self.device)

    is_fully_replicated = property(lambda self: self.sharding.is_fully_replicated)
    is_fully_addressable = property(lambda self: self.sharding.is_fully_addressable)

    @property
    def addressable_shards(self) -> list[Shard]:
        """The blocks this process holds: here one, the whole array."""
        self._concrete_value("x.addressable_shards")  # (a deleted array raises)
        return [Shard(self.device, (slice(None),) * self.ndim, 0, self)]

    def addressable_data(self, index: int) -> Array:
        """The block this process holds on its ``index``-th device, as an array: this array,
        which its one device holds whole (JAX answers so for any ``index``)."""
        self._concrete_value("x.addressable_data")  # (a deleted array raises)
        return self

    def on_device_size_in_bytes(self) -> int:
        """The bytes the array takes on all its devices together: a block per device, so a
        block that several devices hold counts once for each, as in JAX."""
        if self.is_deleted():
            self._value._deleted()  # (a deleted array's value is its DeletedBuffer)
        block = self.sharding.shard_shape(self.shape)
        return math.prod(block) * self.dtype.itemsize * self.sharding.num_devices

    @property
    def committed(self) -> bool:
        """Whether the array was placed on its devices on purpose, so that a computation
        must run where it is. A host array never was (JAX's ``device_put(x, device)`` is:
        see "Differences from JAX"); stage 2's GPU arrays and stage 4's sharded ones are."""
        return False

    def copy_to_host_async(self) -> None:
        """Starts copying the array to the host; its data is already in host memory."""

    def is_ready(self) -> bool:
        """Whether the computation has finished: an array here is made finished."""
        return True

    def _concrete_value(self, context: str,
                        error: type[TypeError] = ConcretizationTypeError) -> np.ndarray:
        if type(self._value) is DeletedBuffer:
            self._value._deleted()
        return self._value

    def __repr__(self) -> str:
        body = np.array2string(self._concrete_value("repr"), separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        shape = f", shape={self.shape}" if self.size == 0 else ""  # (NumPy's and JAX's way)
        return f"Array({body}{shape}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._concrete_value("str"))

    def __format__(self, spec: str) -> str:
        return format(self._value.item(), spec) if self.ndim == 0 and spec else str(self)
# --8<-- [end:array]


def asarray(x: Any, dtype: Any = None, copy: bool = True) -> Array:
    """Converts Python scalars, NumPy arrays and lists into an :class:`Array`.

    Python scalars become weakly typed, as in JAX. 64-bit NumPy data is canonicalized to
    32 bits unless ``jax_enable_x64`` is on. NumPy data is copied, as JAX's transfer to a
    device copies it: the Array does not change when the NumPy array does. (``copy=False``
    lends it instead, for a caller that only reads it and lets go of it before returning:
    ``jit``'s arguments.)
    """
    if isinstance(x, Array) and dtype is None:
        return x
    if isinstance(x, Tracer):
        raise TypeError(f"asarray got a tracer {x!r}; expected a concrete value.")
    # Exact types: NumPy scalars such as np.float64 subclass float but are strongly typed.
    python_scalar = type(x) in (bool, int, float, complex)
    weak = type(x) in (int, float, complex) and dtype is None  # Python bools are not weak
    if python_scalar:
        np_dtype = dtypes.python_scalar_dtype(x) if dtype is None else dtype
        value = _python_scalar_to_numpy(x, dtypes.canonicalize_dtype(np_dtype))
    else:
        value = np.asarray(x._value if isinstance(x, Array) else x)
        if value.dtype == object:
            if isinstance(x, (list, tuple)) and any(v is None for v in value.flat):
                raise ValueError(f"None is not an array value, in {x!r}: use jnp.nan for a "
                                 f"missing number.")
            raise TypeError(f"Can't convert {type(x).__name__} to an array: {x!r}.")
        target = dtypes.canonicalize_dtype(value.dtype if dtype is None else dtype)
        if isinstance(x, (list, tuple)):
            _check_python_ints_fit(value, target)
        if value.dtype != target:
            value = value.astype(target)
        elif copy and not isinstance(x, Array) and (value is x or value.base is not None):
            # The caller's buffer, which the caller may still write to: an Array owns its
            # own, as JAX's transfer to a device makes one.
            value = value.copy()
    return Array(value, weak)


def _check_python_ints_fit(value: np.ndarray, dtype: np.dtype) -> None:
    """The Python ints of a list must fit ``dtype``, as a lone one must: NumPy made them
    int64, and narrowing that to 32 bits would wrap them silently."""
    if value.dtype.kind not in "iu" or not dtypes.is_int(dtype) or value.size == 0:
        return
    info = np.iinfo(dtype)
    for extreme in (int(value.min()), int(value.max())):
        if not info.min <= extreme <= info.max:
            raise OverflowError(f"Python int {extreme} in the list is too large to convert to "
                                f"{dtype}. Pass a NumPy array of the type you want, or turn on "
                                f"jax_enable_x64 for 64-bit integers.")


def _python_scalar_to_numpy(x: bool | int | float | complex, dtype: np.dtype) -> np.ndarray:
    if isinstance(x, int) and not isinstance(x, bool) and dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} is too large to convert to {dtype}.")
    return np.asarray(x, dtype=dtype)


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of an array, tracer or Python scalar."""
    if isinstance(x, (Array, Tracer)):
        return x.aval
    if isinstance(x, np.ndarray) and x.dtype != object:  # its type, without copying it
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), False)
    return asarray(x).aval



# The operators above call the numpy module, which is itself built on this one. Python looks
# the name ``jnp`` up when an operator runs, by which time the import below has finished.
from . import numpy as jnp  # noqa: E402
