"""``jit``: trace a function once per input signature, cache the jaxpr, run it on a backend.

``jit_p`` is itself a primitive holding a closed jaxpr, with an impl (compile and run), an
abstract-eval rule (the jaxpr's output types), and JVP and VJP rules that are themselves
jitted programs, so ``grad(jit(f))`` runs a compiled backward pass and ``jit(grad(f))``,
nested ``jit`` and ``jit`` inside a taped function all work.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from stage1_autodiff.api_util import (
    check_callable,
    check_no_intersection,
    check_static_argnames,
    check_static_argnums,
    ensure_index_tuple,
)
from stage1_autodiff.config import PLATFORMS, State, config
from stage1_autodiff.core import (
    Array,
    Primitive,
    PrimitiveKind,
    ShapedArray,
    Tracer,
    asarray,
    impl_rules,
    jvp_rules,
    trace_state,
    vjp_rules,
    vjp_rules_take_needs,
    vjp_rules_take_none,
)
from stage1_autodiff.linear_transpose import inline_rules
from stage1_autodiff.special_values import (
    CHECKS,
    rerun_rules,
    special_value_error,
    special_value_in,
)
from stage1_autodiff.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_structure,
    tree_unflatten,
)

from stage1_autodiff import dtypes

from .abstract_eval import abstract_eval_rules
from .arrays import GpuArray
from .derived import jvp_program, split_tangents, vjp_program
from .devices import GPU_PLATFORM_NAMES, cuda_unavailable_reason, device_put, gpu_device
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal
from .runtime import (
    BACKEND_ALIASES,
    BACKENDS,
    backend_for,
    call_donating,
    compile_jaxpr,
    values_for,
)
from .shape_dtype_struct import stand_ins, struct_of
from .tiers import Tiered
from .tracing import closed_with_consts_as_args, eval_jaxpr, trace_to_jaxpr

config.define("jax_disable_jit", False, "Runs jitted functions eagerly, op by op (debugging).")
config.define("jax_log_compiles", False, "Logs a warning each time jit traces and compiles a "
              "function for a new signature (to find what makes a program recompile).")
log_compiles = State("jax_log_compiles")
"""``jax_log_compiles`` for a block: ``with jax.log_compiles(): ...``."""
_log = logging.getLogger(__name__)
config.define("jax_default_backend", "cpu", "The backend jit uses when none is given.")
PLATFORMS.update(cuda=cuda_unavailable_reason, gpu=cuda_unavailable_reason)


def _follow_platforms(platforms: str | None) -> None:
    """``jax_platforms`` (or ``jax_platform_name``) names the default backend first."""
    if platforms:
        first = platforms.split(",")[0]
        config.update("jax_default_backend", "cuda" if first in GPU_PLATFORM_NAMES else "cpu")


for _name in ("jax_platforms", "jax_platform_name"):
    config.on_update(_name, _follow_platforms)
    _follow_platforms(getattr(config, _name))  # (an environment variable may have set it)


# ------------------------------------------------------------------------------------------
# jit_p: a primitive whose parameter is a program
# ------------------------------------------------------------------------------------------

jit_p = Primitive("jit", multiple_results=True)


# --8<-- [start:jit_impl]
def jit_impl(*args: np.ndarray, jaxpr: ClosedJaxpr, name: str, backend: str) -> list[Array]:
    return compile_jaxpr(jaxpr, backend)(*args)


impl_rules[jit_p] = jit_impl
# --8<-- [end:jit_impl]


def jit_abstract_eval(*avals: ShapedArray, jaxpr: ClosedJaxpr, name: str,
                      backend: str) -> list[ShapedArray]:
    expected = jaxpr.in_avals
    if [(a.shape, a.dtype) for a in avals] != [(a.shape, a.dtype) for a in expected]:
        raise TypeError(f"jit[{name}] was given arguments of types "
                        f"{[a.str_short() for a in avals]}, but its program takes "
                        f"{[a.str_short() for a in expected]}.")
    return list(jaxpr.out_avals)


abstract_eval_rules[jit_p] = jit_abstract_eval


def _has_tangents(aval: ShapedArray) -> bool:
    """Whether values of ``aval`` have tangents: floats and complex numbers."""
    return dtypes.is_inexact(aval.dtype)


# --8<-- [start:jit_jvp]
def jit_jvp(primals, tangents, *, jaxpr: ClosedJaxpr, name: str, backend: str):
    """The JVP of a jitted call is another jitted call: of the traced JVP of its program."""
    float_in = [_has_tangents(a) for a in jaxpr.in_avals]
    program, consts = jvp_program(jaxpr, float_in)
    float_tangents = [t for t, is_float in zip(tangents, float_in) if is_float]
    outs = jit_p.bind(*consts, *primals, *float_tangents, jaxpr=program,
                      name=f"jvp({name})", backend=backend)
    return split_tangents(list(outs), jaxpr.out_avals)


jvp_rules[jit_p] = jit_jvp
# --8<-- [end:jit_jvp]


# --8<-- [start:jit_vjp]
def jit_vjp(cts, *primals, out, needs, jaxpr: ClosedJaxpr, name: str, backend: str):
    """The VJP of a jitted call is a jitted backward program. It computes the cotangents of
    the floating-point inputs being differentiated (``needs``) only: the others are constants
    to it. NB: it recomputes the forward pass inside; JAX saves residuals instead (partial
    evaluation, jax/_src/interpreters/partial_eval.py)."""
    wanted = [need and _has_tangents(a) for need, a in zip(needs, jaxpr.in_avals)]
    if not any(wanted):
        return [None] * len(wanted)
    # (None: an output no cotangent reaches, which the backward program takes no input for)
    float_cts = [ct for ct, a in zip(cts, jaxpr.out_avals) if _has_tangents(a)]
    program, consts = vjp_program(jaxpr, wanted, float_cts)
    results = iter(jit_p.bind(*consts, *primals, *[ct for ct in float_cts if ct is not None],
                              jaxpr=program, name=f"vjp({name})", backend=backend))
    return [next(results) if w else None for w in wanted]


vjp_rules[jit_p] = jit_vjp
vjp_rules_take_needs.add(jit_p)
vjp_rules_take_none.add(jit_p)
# --8<-- [end:jit_vjp]




# ------------------------------------------------------------------------------------------
# jit
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CacheEntry:
    program: ClosedJaxpr  # constants already turned into leading arguments
    consts: list[Any]
    out_tree: Any
    jaxpr: Jaxpr  # as traced, constants as constvars: for printing
    float0_outputs: dict[int, tuple[int, ...]]  # position -> shape of each float0 result

    def results(self, outs: list[Any]) -> Any:
        """The pytree of results, with the float0 leaves the program does not compute."""
        if not self.float0_outputs:
            return tree_unflatten(self.out_tree, outs)
        return tree_unflatten(self.out_tree, dtypes.with_float0(outs, self.float0_outputs))


def _not_lent(outs: list[Any], args: Any) -> list[Any]:
    """The results, none sharing memory with a NumPy argument. A call reads NumPy arguments
    in place, without a copy (JAX's CPU client does too); a result that is such an argument,
    or a view of one (the interpreter's reshape), is copied, so that it stays as computed
    when the caller writes into its array."""
    lent = [leaf for leaf in tree_leaves(args) if isinstance(leaf, np.ndarray)]
    if not lent:
        return outs
    return [Array(out._value.copy(), out.weak_type) if type(out) is Array and any(
        np.may_share_memory(out._value, a) for a in lent) else out for out in outs]


class Jitted:
    """A function compiled on first use for each new signature of its arguments."""

    def __init__(self, fun: Callable, static_argnums: int | Sequence[int] | None,
                 static_argnames: str | Sequence[str] | None,
                 donate_argnums: int | Sequence[int] | None, backend: str | None,
                 donate_argnames: str | Sequence[str] | None = None) -> None:
        check_callable(fun)
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = _as_nums(static_argnums, "static_argnums")
        self.static_argnames = _as_names(static_argnames)
        self.donate_argnums = _as_nums(donate_argnums, "donate_argnums")
        self.donate_argnames = _as_names(donate_argnames)
        backend = BACKEND_ALIASES.get(backend, backend)
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"Unknown backend {backend!r} for jit. Available backends: "
                             f"{', '.join(BACKENDS)}.")
        self.backend = backend
        self._cache: dict[Any, _CacheEntry] = {}
        self._arg_trees: dict[int, Any] = {}  # number of arguments -> their treedef
        self._trees: dict[Any, Any] = {}  # one object per treedef: keys then compare by `is`
        self._lock = threading.RLock()
        self._signature = _signature_or_none(fun)
        self._name = getattr(fun, "__name__", "fun")
        # A static argument is static however it is passed: by position or by name.
        names = _positional_names(self._signature)
        self._static_nums, self._static_names = _both_ways(
            self.static_argnums, self.static_argnames, names)
        self._check_argument_options(names)
        # A donated argument is donated however it is passed, too.
        self._donate_nums, self._donate_names = _both_ways(
            self.donate_argnums, self.donate_argnames, names)

    def _check_argument_options(self, names: list[str]) -> None:
        """JAX's checks, made at ``jit()``: each static or donated argument number and name
        is an argument of the function, and no argument is both static and donated."""
        fun, signature = self.fun, self._signature
        check_static_argnums(fun, signature, self.static_argnums, "static_argnums")
        check_static_argnums(fun, signature, self.donate_argnums, "donate_argnums")
        check_static_argnames(fun, signature, self.static_argnames, "static_argnames")
        check_static_argnames(fun, signature, self.donate_argnames, "donate_argnames")
        if signature is None:
            return
        donated = set(self.donate_argnames) | {
            names[i] for i in self.donate_argnums if -len(names) <= i < len(names)}
        static = set(self.static_argnames) | {
            names[i] for i in self.static_argnums if -len(names) <= i < len(names)}
        check_no_intersection(static, donated, "static_argnums/static_argnames and "
                              "donate_argnums/donate_argnames")

    # --8<-- [start:jit_call]
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        if CHECKS.any and _at_top_level():  # jax_debug_nans / jax_debug_infs
            return _checked_call(self, args, kwargs)
        return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if (self._donate_nums or self._donate_names) and _at_top_level():
            return self._donating_call(args, kwargs)
        fast = self._fast_call(args, kwargs)
        if fast is not None:
            return fast[0]
        entry, leaves = self._lookup(args, kwargs)
        backend = backend_for(self.backend, leaves)
        outs = jit_p.bind(*entry.consts, *leaves, jaxpr=entry.program, name=self._name,
                          backend=backend)
        return entry.results(_not_lent(outs, (args, kwargs)))
    # --8<-- [end:jit_call]

    def _donating_call(self, args, kwargs) -> Any:
        """A call that donates arguments, outside any transformation (inside one, donation
        means nothing): the runtime may write results into their buffers."""
        entry, leaves = self._lookup(args, kwargs)
        nums = {n % len(args) for n in self._donate_nums if -len(args) <= n < len(args)}
        donated = [a for i, a in enumerate(args) if i in nums]
        donated += [v for k, v in kwargs.items() if k in self._donate_names]
        ids = {id(leaf) for leaf in tree_leaves(donated) if type(leaf) is Array}
        positions = [len(entry.consts) + k for k, leaf in enumerate(leaves) if id(leaf) in ids]
        backend = backend_for(self.backend, leaves)
        outs = call_donating(entry.program, backend, [*entry.consts, *leaves], positions)
        return entry.results(_not_lent(outs, (args, kwargs)))

    # --8<-- [start:fast_call]
    def _fast_call(self, args, kwargs) -> tuple[Any] | None:
        """The common case, found without flattening: concrete arrays as the only arguments,
        no transformation running, a signature seen before. Runs the executable directly
        (what binding jit_p would do, minus the dispatch). None when it does not apply."""
        if kwargs or self._static_nums or not _at_top_level():
            return None
        for a in args:  # (a loop: a generator here cost a tenth of a small call)
            if type(a) is not Array and type(a) is not GpuArray:
                return None
        in_tree = self._arg_trees.get(len(args))
        if in_tree is None:
            in_tree = self._arg_trees[len(args)] = self._interned(tree_structure((args, {})))
        key = _cache_key(in_tree, args, ())
        entry = self._cache.get(key)
        if entry is None or entry.consts:
            return None
        backend = backend_for(self.backend, args)
        executable = compile_jaxpr(entry.program, backend)
        return (entry.results(executable(*values_for(backend, args))),)
    # --8<-- [end:fast_call]

    # --8<-- [start:jit_lookup]
    def _lookup(self, args, kwargs) -> tuple[_CacheEntry, list[Any]]:
        static, dynamic, in_tree, leaves = self._flatten_args(args, kwargs)
        in_tree = self._interned(in_tree)
        # --8<-- [start:task2_3]
        key = _cache_key(in_tree, leaves, static)
        entry = self._cache.get(key)
        if entry is not None:
            return entry, leaves
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                entry = self._trace(static, dynamic, in_tree, leaves)
                if config.jax_log_compiles:
                    _log.warning("Compiling %s for arguments %s (a new signature; "
                                 "jax_log_compiles is on)", self._name,
                                 [leaf.aval.str_short() for leaf in leaves])
                if not any(isinstance(c, Tracer) for c in entry.consts):
                    self._cache[key] = entry  # closures over tracers are not reusable
        return entry, leaves
        # --8<-- [end:task2_3]

    def _interned(self, tree: Any) -> Any:
        return self._trees.setdefault(tree, tree)

    def _flatten_args(self, args, kwargs) -> tuple[tuple, tuple, Any, list[Any]]:
        """The static arguments (hashable), the dynamic ones, their tree structure and their
        leaves as arrays or tracers: what a trace, and a cache key, are made of."""
        static, dynamic = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        leaves = [leaf if isinstance(leaf, (Array, Tracer)) or dtypes.is_float0(leaf)
                  else self._check_leaf(dynamic, i, leaf) for i, leaf in enumerate(leaves)]
        # float0 leaves (gradients of integers) carry no values: as with a static argument,
        # only their shapes enter the trace and the cache key, under the key None.
        leaves, zeros = dtypes.split_float0(leaves)
        if zeros:
            static += ((None, tuple(zeros.items())),)
        return static, dynamic, in_tree, leaves
    # --8<-- [end:jit_lookup]

    def _split(self, args, kwargs) -> tuple[tuple, tuple]:
        """The static arguments (hashable: part of the cache key) and the dynamic ones."""
        nums = {n % len(args) for n in self._static_nums if -len(args) <= n < len(args)}
        static = tuple((i, _hashable(args[i], i)) for i in sorted(nums))
        static += tuple((k, _hashable(v, k)) for k, v in sorted(kwargs.items())
                        if k in self._static_names)
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        return static, (dyn_args, dyn_kwargs)

    def _check_leaf(self, dynamic, i: int, leaf) -> Any:
        if isinstance(leaf, (bool, int, float, np.ndarray, np.generic)):
            return asarray(leaf, copy=False)  # only read by the call (see _not_lent)
        name = self._describe(tree_flatten_with_path(dynamic)[0][i][0])
        raise TypeError(
            f"Error interpreting argument to {self.__name__} as an abstract array. The "
            f"problematic value is of type {type(leaf)} and was passed to the function at "
            f"path {name}. This typically means that a jit-wrapped function was called with "
            f"a non-array argument, and this argument was not marked as static using the "
            f"static_argnums or static_argnames parameters of jit.")

    def _describe(self, path) -> str:
        """``x`` or ``params['w']``: the argument a leaf came from, for error messages."""
        if path[0].idx == 1:  # a keyword argument
            return f"{path[1].key}{keystr(path[2:])}"
        statics = {n for n in self._static_nums if n >= 0}
        positions = [i for i in range(len(statics) + path[1].idx + 1) if i not in statics]
        position = positions[path[1].idx]
        names = list(self._signature.parameters) if self._signature else []
        name = names[position] if position < len(names) else f"args[{position}]"
        return f"{name}{keystr(path[2:])}"

    def _trace(self, static, dynamic, in_tree, leaves) -> _CacheEntry:
        out_tree_box: list[Any] = []

        float0_box: list[dict[int, tuple[int, ...]]] = []

        zeros = dict(next((v for k, v in static if k is None), ()))

        def flat_fun(*tracers):
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, dtypes.with_float0(tracers, zeros))
            args = _merge_static(dyn_args, static)
            kwargs = dict(dyn_kwargs, **{k: v for k, v in static if isinstance(k, str)})
            out_flat, out_tree = tree_flatten(self.fun(*args, **kwargs))
            out_tree_box.append(out_tree)
            # float0 results (gradients of integers) carry no values: they stay out of the
            # program and are put back into the result, as JAX does.
            out_flat, zeros_out = dtypes.split_float0(out_flat)
            float0_box.append(zeros_out)
            return out_flat

        names = [self._describe(path) for i, (path, _) in
                 enumerate(tree_flatten_with_path(dynamic)[0]) if i not in zeros]
        jaxpr, consts = trace_to_jaxpr(flat_fun, [leaf.aval for leaf in leaves], names)
        program, consts = closed_with_consts_as_args(jaxpr, consts)
        return _CacheEntry(program, consts, out_tree_box[0], jaxpr, float0_box[0])

    def _cache_size(self) -> int:
        """How many signatures have been traced and kept (JAX has the same private helper)."""
        return len(self._cache)

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        """Traces for these arguments, JAX's first ahead-of-time stage: the jaxpr and the
        results' types, and ``.lower()`` for the next stage. ShapeDtypeStructs may stand for
        arrays."""
        entry, _ = self._lookup(*stand_ins((args, kwargs)))
        return Traced(self, entry, args, kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Traces for these arguments without running: JAX's ahead-of-time first step.
        ShapeDtypeStructs may stand for arrays: only their types are used."""
        args, kwargs = stand_ins((args, kwargs))
        entry, leaves = self._lookup(args, kwargs)
        return Lowered(entry, backend_for(self.backend, leaves))


# --8<-- [start:cache_key]
def _cache_key(in_tree: Any, leaves: Sequence[Any], static: tuple) -> tuple:
    """What a traced program depends on: the arguments' structure and types (weak types
    included), the static arguments, and the configuration that changes tracing."""
    # --8<-- [start:task2_3]
    return in_tree, tuple(leaf.aval for leaf in leaves), static, config.trace_context
    # --8<-- [end:task2_3]
# --8<-- [end:cache_key]


def _merge_static(dyn_args: tuple, static: tuple) -> list[Any]:
    args = list(dyn_args)
    for i, value in static:
        if isinstance(i, int):
            args.insert(i, value)
    return args


def _hashable(value: Any, where: int | str) -> Any:
    try:
        hash(value)
    except TypeError as e:
        raise ValueError(
            f"Non-hashable static arguments are not supported. An error occurred while trying "
            f"to hash an object of type {type(value)}, {value!r}, passed as static argument "
            f"{where!r}. The error was: TypeError: {e}. Pass a tuple instead of a list, or "
            f"make the argument dynamic.") from None
    return value


def _as_nums(nums: int | Sequence[int] | None, option: str) -> tuple[int, ...]:
    return () if nums is None else ensure_index_tuple(nums, option)


def _as_names(names: str | Sequence[str] | None) -> tuple[str, ...]:
    if names is None:
        return ()
    return (names,) if isinstance(names, str) else tuple(names)


def _positional_names(signature: inspect.Signature | None) -> list[str]:
    if signature is None:
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [name for name, p in signature.parameters.items() if p.kind in kinds]


def _both_ways(nums: Sequence[int], given: Sequence[str],
               names: list[str]) -> tuple[set[int], set[str]]:
    """The argument numbers and names meant by ``nums`` and ``given``, each way of passing an
    argument: by position or by name."""
    return (set(nums) | {names.index(n) for n in given if n in names},
            set(given) | {names[i] for i in nums if 0 <= i < len(names)})


# --8<-- [start:checked_call]
def _checked_call(jitted: Jitted, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A call while ``jax_debug_nans`` or ``jax_debug_infs`` is on. A fused kernel has no
    step in between to check, so its outputs are checked; when one holds a nan, the function
    runs again without ``jit``, where the operation that makes it raises with a traceback to
    the user's line, as JAX's does."""
    try:
        out = jitted._call(args, kwargs)
        kind = special_value_in(tree_leaves(out))
        if kind is None:
            return out
        error = special_value_error(
            kind, f"jit({jitted._name})", f"Run again without jit, the function made none: the "
            f"compiled program computes differently, or a {kind} is a constant output.")
    except FloatingPointError as found_in_program:
        error = found_in_program
    with disable_jit():
        jitted.fun(*args, **kwargs)  # raises FloatingPointError at the user's line
    raise error
# --8<-- [end:checked_call]


def _jit_one_op_at_a_time(operands: list[Any], params: dict[str, Any]) -> list[Any]:
    program = params["jaxpr"]
    return eval_jaxpr(program.jaxpr, program.consts, operands)


rerun_rules[jit_p] = _jit_one_op_at_a_time  # jax_debug_nans: find the operation
inline_rules[jit_p] = _jit_one_op_at_a_time  # linear_transpose: check each operation


def _at_top_level() -> bool:
    """Whether no transformation is running: arguments are concrete arrays."""
    return not trace_state.dynamic_trace.level and len(trace_state.trace_stack) == 1


def _signature_or_none(fun: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


# --8<-- [start:jit]
_DECORATOR = object()  # jit called without a function: @jit(static_argnums=...)


def jit(fun: Callable = _DECORATOR, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        backend: str | None = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None) -> Any:
    """Compiles ``fun``: traced to a jaxpr on first call for each new signature (pytree
    structure, shapes, dtypes, weak types and static arguments), then run from the cache.

    Static and donated arguments are checked against ``fun``'s signature at once, as JAX
    does: a number or name that is no argument of ``fun`` raises ``ValueError``. NB: donated
    buffers are not reused.

    ``backend`` is ``"cpu"`` (one fused Numba kernel per program, the default) or
    ``"interpreter"`` (the optimized jaxpr run one NumPy call per equation: the reference);
    the default comes from ``config.jax_default_backend`` (environment variable
    ``JAX_DEFAULT_BACKEND``). ``keep_unused``, ``inline`` and ``compiler_options`` are
    accepted, as JAX's, and change nothing (there is no XLA to tell).

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> @jax.jit
        ... def f(x):
        ...     return x * 2.0 + 1.0
        >>> f(jnp.arange(3.0))
        Array([1., 3., 5.], dtype=float32)
    """
    del keep_unused, inline, compiler_options
    if fun is _DECORATOR:  # used as @jit(static_argnums=...); jit(None) is an error, as in JAX
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, backend=backend)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, backend,
                  donate_argnames)
# --8<-- [end:jit]


# --8<-- [start:stages]
class Traced:
    """A traced program for one signature: ``.jaxpr``, ``.out_info`` (the results'
    ShapeDtypeStructs) and ``.lower()``."""

    def __init__(self, jitted: Jitted, entry: _CacheEntry, args: tuple, kwargs: dict) -> None:
        self._jitted, self._args, self._kwargs = jitted, args, kwargs
        self.jaxpr = ClosedJaxpr(entry.jaxpr, entry.consts)
        self.out_info = entry.results([struct_of(v.aval) for v in entry.jaxpr.outvars])
        self.fun_name = jitted._name

    def lower(self) -> Any:
        return self._jitted.lower(*self._args, **self._kwargs)


class Lowered:
    """A traced program, not yet compiled: ``.as_text()`` and ``.compile()``."""

    def __init__(self, entry: _CacheEntry, backend: str) -> None:
        self._entry = entry
        self.backend = backend

    def as_text(self) -> str:
        """The traced jaxpr, the optimized one, the kernel plan fusion makes of it, and the
        source the backend generates."""
        executable = compile_jaxpr(self._entry.program, self.backend)
        source = getattr(executable, "source", None)
        text = f"# jaxpr\n{self._entry.jaxpr}\n"
        if hasattr(executable, "optimized"):
            text += f"\n# optimized jaxpr\n{executable.optimized}\n"
        if hasattr(executable, "plan"):
            text += f"\n# kernel plan (fusion.py: step, how, stored = ...)\n{executable.plan}\n"
        return text + (f"\n# generated source ({self.backend})\n{source}" if source else "")

    def compile(self) -> Compiled:
        return Compiled(self._entry, self.backend)


class Compiled:
    """An executable for one signature: callable, with ``.as_text()`` and
    ``.cost_analysis()``."""

    def __init__(self, entry: _CacheEntry, backend: str) -> None:
        self._entry = entry
        self.backend = backend
        self._executable = compile_jaxpr(entry.program, backend)
        if isinstance(self._executable, Tiered):  # ahead of time means now, not in a thread
            self._executable = self._executable.compile_now()

    def __call__(self, *args: Any) -> Any:
        leaves = [asarray(x) for x in tree_flatten(args)[0]]  # canonical dtypes, as jit
        expected = self._entry.program.in_avals[len(self._entry.consts):]
        found = [x.aval for x in leaves]
        if [(a.shape, a.dtype) for a in found] != [(a.shape, a.dtype) for a in expected]:
            raise TypeError(f"This compiled function takes arguments of types "
                            f"{[a.str_short() for a in expected]}, but was called with "
                            f"{[a.str_short() for a in found]}. Call jit(f) to compile "
                            f"for other types.")
        values = values_for(self.backend, [asarray(c) for c in self._entry.consts] + leaves)
        return self._entry.results(self._executable(*values))

    def as_text(self) -> str:
        source = getattr(self._executable, "source", None)
        interpreted = f"# backend: {self.backend} (interprets the jaxpr)\n{self._entry.program}\n"
        return source or interpreted

    def cost_analysis(self) -> dict[str, float]:
        return cost_analysis(self._entry.program.jaxpr)
# --8<-- [end:stages]


# --8<-- [start:cost_analysis]
def cost_analysis(jaxpr: Jaxpr) -> dict[str, float]:
    """Flops and bytes moved, counted per equation: an elementwise op or reduction is one
    flop per element, a contraction two per multiply-add, a shape op (reshape, transpose,
    slice...) none, as in XLA's cost analysis; bytes are every operand read and
    every result written once (an upper bound: fusion in the compiled code moves less)."""
    flops = 0.0
    bytes_accessed = 0.0
    for eqn in jaxpr.eqns:
        held = _held_cost(eqn)
        if held is not None:
            flops += held["flops"]
            bytes_accessed += held["bytes accessed"]
            continue
        out_sizes = [np.prod(v.aval.shape) for v in eqn.outvars]
        in_sizes = [np.prod(a.aval.shape) for a in eqn.invars if not isinstance(a, Literal)]
        if eqn.primitive.name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            contracted = np.prod([eqn.invars[0].aval.shape[d] for d in lc])
            flops += 2 * float(sum(out_sizes)) * float(contracted)
        elif eqn.primitive.kind is not PrimitiveKind.SHAPE:  # moving elements is no flop
            # one flop per element of the larger side (a reduction reads more than it writes)
            flops += float(max(max(in_sizes, default=0), sum(out_sizes)))
        itemsizes = [v.aval.dtype.itemsize for v in eqn.outvars]
        bytes_accessed += sum(float(n) * s for n, s in zip(out_sizes, itemsizes))
        bytes_accessed += sum(float(np.prod(a.aval.shape)) * a.aval.dtype.itemsize
                              for a in eqn.invars if not isinstance(a, Literal))
    return {"flops": flops, "bytes accessed": bytes_accessed}


def _held_cost(eqn: JaxprEqn) -> dict[str, float] | None:
    """The cost of an equation that runs programs it holds, from those programs: a scan's
    body times its length, a while's predicate and body once (its trip count is known only
    when it runs; XLA's cost analysis counts a While's body once too), a cond's costliest
    branch, a nested jit's program. None for any other equation."""
    name, params = eqn.primitive.name, eqn.params
    if name == "scan":
        body = cost_analysis(params["jaxpr"].jaxpr)
        return {k: v * params["length"] for k, v in body.items()}
    if name == "while":
        parts = [cost_analysis(params[k].jaxpr) for k in ("cond_jaxpr", "body_jaxpr")]
        return {k: sum(part[k] for part in parts) for k in parts[0]}
    if name == "cond":
        return max((cost_analysis(b.jaxpr) for b in params["branches"]),
                   key=lambda cost: cost["flops"])
    if isinstance(params.get("jaxpr"), ClosedJaxpr):
        return cost_analysis(params["jaxpr"].jaxpr)
    return None
# --8<-- [end:cost_analysis]


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable:
    """Returns a function that traces ``fun`` on its arguments and returns the jaxpr (and,
    with ``return_shape``, the pytree of its results' ShapeDtypeStructs).

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> print(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
        { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    check_callable(fun)
    static_nums = _as_nums(static_argnums, "static_argnums")

    def make_jaxpr_f(*args: Any, **kwargs: Any) -> ClosedJaxpr:
        # A new Jitted per call, so no cache to look in: trace directly.
        jitted = Jitted(fun, static_nums, (), (), None)
        entry = jitted._trace(*jitted._flatten_args(args, kwargs))
        closed = ClosedJaxpr(entry.jaxpr, entry.consts)
        if not return_shape:
            return closed
        return closed, entry.results([struct_of(v.aval) for v in entry.jaxpr.outvars])

    return make_jaxpr_f


@contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Runs jitted functions eagerly inside the block (to debug them with print or pdb)."""
    previous = config.jax_disable_jit
    config.update("jax_disable_jit", disable)
    try:
        yield
    finally:
        config.update("jax_disable_jit", previous)


# ------------------------------------------------------------------------------------------
# Eager primitives on GPU arrays
# ------------------------------------------------------------------------------------------


# --8<-- [start:on_gpu]
@functools.cache
def _on_gpu(prim: Primitive, params: tuple) -> Any:
    """``prim`` with these parameters as a jitted function on the ``cuda`` backend: one per
    (primitive, parameters); ``jit`` then keeps one program per argument types."""
    kwargs = {k: _thawed(v) for k, v in params}

    def apply(*args):
        out = prim.bind(*args, **kwargs)
        return list(out) if prim.multiple_results else [out]

    jitted = jit(apply, backend="cuda")
    jitted.__name__ = prim.name
    return jitted


def run_eagerly_on_gpu(prim: Primitive, arrays: list[Array],
                       params: dict[str, Any]) -> list[Array]:
    """How an eager primitive runs on GPU arrays (``GpuArray.executor``): a jitted program on
    the backend it names (``cuda`` unless the caller asked for another); any other primitive
    as a one-equation program on the GPU, as JAX's ``apply_primitive`` compiles one with XLA."""
    if prim is jit_p:
        backend = params["backend"]
        return compile_jaxpr(params["jaxpr"], backend)(*values_for(backend, arrays))
    try:
        key = _frozen(params)
        hash(key)
    except TypeError:  # a parameter that cannot key a cache: run on the host, then put back
        host = [Array(a._value, a.weak_type) for a in arrays]
        outs = prim.bind(*host, **params)
        return device_put(list(outs) if prim.multiple_results else [outs], gpu_device())
    return _on_gpu(prim, key)(*arrays)
GpuArray.executor = run_eagerly_on_gpu
# --8<-- [end:on_gpu]


def _frozen(params: dict[str, Any]) -> tuple:
    """The parameters as a hashable key: lists become tagged tuples."""
    def freeze(value: Any) -> Any:
        if isinstance(value, list):
            return ("__list__", tuple(freeze(v) for v in value))
        if isinstance(value, tuple):
            return tuple(freeze(v) for v in value)
        return value
    return tuple(sorted((k, freeze(v)) for k, v in params.items()))


def _thawed(value: Any) -> Any:
    if isinstance(value, tuple) and value[:1] == ("__list__",):
        return [_thawed(v) for v in value[1]]
    if isinstance(value, tuple):
        return tuple(_thawed(v) for v in value)
    return value
