"""JAX's everyday top-level names that tracing makes possible: ``linearize`` (partial
evaluation of a JVP), ``eval_shape`` and ``ShapeDtypeStruct`` (tracing for types alone),
``ensure_compile_time_eval``, ``named_scope``, ``clear_caches``, and the one-process answers
of ``process_index`` and friends.

NB: in JAX these live in jax/_src/api.py (``linearize``, ``eval_shape``, ``clear_caches``,
``local_devices``...), jax/_src/core.py (``ShapeDtypeStruct``'s aval, ``ensure_compile_time_eval``)
and jax/_src/source_info_util.py (``named_scope``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from stage1_autodiff.autodiff import jvp
from stage1_autodiff.core import Tracer, get_aval, trace_state
from stage1_autodiff.numpy.promotion import as_value
from stage1_autodiff.tree_util import tree_flatten, tree_unflatten

from stage1_autodiff import dtypes

from .jaxpr import Jaxpr, Literal, Var
from .passes import dce
from .shape_dtype_struct import ShapeDtypeStruct, struct_of
from .tracing import _dynamic, eval_jaxpr, trace_to_jaxpr


# --8<-- [start:eval_shape]
def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The types of ``fun``'s results, as ShapeDtypeStructs, found by tracing: nothing is
    computed. Arguments may be arrays, scalars or ShapeDtypeStructs.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> jax.eval_shape(jnp.dot, jax.ShapeDtypeStruct((2, 3), jnp.float32), jnp.ones(3))
        ShapeDtypeStruct(shape=(2,), dtype=float32)
    """
    jaxpr, _, _, out_tree = trace_pytree(fun, args, kwargs)
    return tree_unflatten(out_tree, [struct_of(v.aval) for v in jaxpr.outvars])


def trace_pytree(fun: Callable, args: tuple, kwargs: dict) -> tuple[Jaxpr, list, Any, Any]:
    """``fun`` traced on pytrees of arrays, scalars or ShapeDtypeStructs: its jaxpr (flat
    arguments in, flat results out), the constants, and the arguments' and results' trees."""
    leaves, in_tree = tree_flatten((args, kwargs))
    avals = [x.aval if isinstance(x, (ShapeDtypeStruct, Tracer)) else as_value(x).aval
             for x in leaves]
    out_tree_box: list[Any] = []

    def flat_fun(*xs):
        f_args, f_kwargs = tree_unflatten(in_tree, xs)
        outs, out_tree = tree_flatten(fun(*f_args, **f_kwargs))
        out_tree_box.append(out_tree)
        return outs

    jaxpr, consts = trace_to_jaxpr(flat_fun, avals)
    return jaxpr, consts, in_tree, out_tree_box[0]
# --8<-- [end:eval_shape]


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
    """``fun`` with the traced floats it closes over made explicit: returns
    ``(converted, consts)``, where ``converted(*args, *consts)`` is ``fun(*args)``. Traced on
    ``example_args``; a ``custom_vjp`` takes ``consts`` as arguments, so it can give them
    cotangents (it refuses to differentiate what its function closes over). Concrete values
    and traced integers stay closed over, as in JAX.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> def f(x, y):
        ...     converted, consts = jax.closure_convert(lambda z: z * y, x)
        ...     return converted(x, *consts), len(consts)
        >>> f(2.0, 3.0)[1], jax.grad(lambda y: f(2.0, y)[0])(3.0)
        (0, Array(2., dtype=float32, weak_type=True))
    """
    jaxpr, consts, in_tree, out_tree = trace_pytree(fun, example_args, {})
    hoisted = [isinstance(c, Tracer) and dtypes.is_inexact(get_aval(c).dtype) for c in consts]
    count = sum(hoisted)

    def converted(*args_and_consts: Any) -> Any:
        args, explicit = args_and_consts[:len(args_and_consts) - count], \
            iter(args_and_consts[len(args_and_consts) - count:])
        xs, tree = tree_flatten((args, {}))
        if tree != in_tree:
            raise TypeError(f"closure_convert's function takes arguments shaped as {in_tree} "
                            f"and then its {count} constants, got {tree}.")
        values = [next(explicit) if h else c for c, h in zip(consts, hoisted)]
        return tree_unflatten(out_tree, eval_jaxpr(jaxpr, values, xs))

    converted.__name__ = getattr(fun, "__name__", "converted")
    return converted, [c for c, h in zip(consts, hoisted) if h]


def effects_barrier() -> None:
    """Waits until the side effects of the programs called so far have happened: JAX runs
    programs asynchronously, so a callback's effect may still be to come. Here a program's
    callbacks run during its call, so when the call has returned there is nothing to wait
    for."""


# --8<-- [start:linearize]
def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``fun``'s output at ``primals`` and its linear approximation there: a function of
    tangents that computes only the linear part, the primal work done once, now.

    How: trace the JVP with the primals known and the tangents unknown, then *partially
    evaluate*: each equation whose inputs are all known runs now; the others, which depend on
    the tangents, form the linear program, and the known values they read are its residuals.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> y, f_jvp = jax.linearize(jnp.sin, 0.0)
        >>> print(y, f_jvp(2.0))
        0.0 2.0
    """
    primals_flat, in_tree = tree_flatten(primals)
    primals_flat = [as_value(p) for p in primals_flat]
    is_float = [dtypes.is_inexact(get_aval(p).dtype) for p in primals_flat]
    trees: list[Any] = []

    def tangent_fun(*float_tangents):
        ts = iter(float_tangents)
        tangents = [next(ts) if f else np.zeros(get_aval(p).shape, dtypes.float0)
                    for p, f in zip(primals_flat, is_float)]
        out = jvp(lambda *xs: fun(*tree_unflatten(in_tree, xs)), primals_flat, tangents,
                  has_aux=has_aux)
        known, known_tree = tree_flatten((out[0], out[2] if has_aux else None))
        tangents_out, tangent_tree = tree_flatten(out[1])
        tangents_out, zeros = dtypes.split_float0(tangents_out)  # (of integer results)
        trees[:] = [known_tree, tangent_tree, zeros]
        return [*known, *tangents_out]

    jaxpr, consts = trace_to_jaxpr(tangent_fun, [get_aval(p) for p, f in
                                                 zip(primals_flat, is_float) if f])
    (known_tree, tangent_tree, zeros), n_known = trees, trees[0].num_leaves
    values, linear, residuals = partial_eval(jaxpr, consts, n_known)
    if values is None:  # a primal output came out of a call that also computes tangents
        values = tree_flatten(_with_aux(fun(*primals), has_aux))[0]
    out, aux = tree_unflatten(known_tree, values)

    def f_jvp(*tangents: Any) -> Any:
        flat, tree = tree_flatten(tangents)
        if tree != in_tree:
            raise TypeError(f"linearized function called on tangents of structure {tree}, "
                            f"but the primals have structure {in_tree}.")
        floats = [as_value(t) for t, f in zip(flat, is_float) if f]
        return tree_unflatten(tangent_tree, dtypes.with_float0(
            eval_jaxpr(linear, residuals, floats), zeros))

    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _with_aux(out: Any, has_aux: bool) -> tuple[Any, Any]:
    return (out[0], out[1]) if has_aux else (out, None)


def partial_eval(jaxpr: Jaxpr, consts: list[Any],
                 n_known: int) -> tuple[list[Any] | None, Jaxpr, list[Any]]:
    """Splits a program whose constants are known and whose inputs are not: runs now every
    equation whose inputs are all known, and returns the values of the first ``n_known``
    outputs (None if one of them is not known), the program of the other outputs (its
    constants: the known values it reads, the *residuals*) and the residuals."""
    known: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    staged = []
    for eqn in jaxpr.eqns:
        if all(isinstance(a, Literal) or a in known for a in eqn.invars):
            ins = [a.val if isinstance(a, Literal) else known[a] for a in eqn.invars]
            outs = eqn.primitive.bind(*ins, **eqn.params)
            known.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
        else:
            staged.append(eqn)
    first = jaxpr.outvars[:n_known]
    values = None
    if all(isinstance(a, Literal) or a in known for a in first):
        values = [a.val if isinstance(a, Literal) else known[a] for a in first]
    program = dce(Jaxpr([], jaxpr.invars, jaxpr.outvars[n_known:], staged))
    read = {a for e in program.eqns for a in e.invars if isinstance(a, Var)}
    read |= {a for a in program.outvars if isinstance(a, Var)}
    residual_vars = [v for v in known if v in read]
    linear = Jaxpr(residual_vars, program.invars, program.outvars, program.eqns)
    return values, linear, [known[v] for v in residual_vars]
# --8<-- [end:linearize]


# --8<-- [start:compile_time_eval]
@contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Inside the block, operations on concrete values run now, even while ``jit`` traces:
    their results are concrete arrays usable in Python control flow. Operations on traced
    values are still staged.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> @jax.jit
        ... def f(x):
        ...     with jax.ensure_compile_time_eval():
        ...         n = int(jnp.sum(jnp.arange(4)))  # concrete: 6
        ...     return x * n
        >>> print(f(1.0))
        6.0
    """
    with _dynamic(trace_state.trace_stack[0]):  # the eval interpreter is the default again
        yield
# --8<-- [end:compile_time_eval]


@contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Names the operations of the block for profilers and HLO. NB: accepted and checked,
    but our jaxprs carry no name stack, so it changes nothing here."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope name argument must be a string, got {name!r}.")
    yield


def clear_caches() -> None:
    """Forgets every traced and compiled program: each jitted function's cache and the
    programs derived from jaxprs (kernels on disk stay, keyed by their source)."""
    from .jit import Jitted
    for obj in gc.get_objects():
        if isinstance(obj, Jitted):
            obj._cache.clear()


def process_index(backend: str | None = None) -> int:
    """This process's index: 0, as there is one process (for every backend)."""
    del backend
    return 0


def process_count(backend: str | None = None) -> int:
    """How many processes run the program: 1 (for every backend)."""
    del backend
    return 1


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of the processes that run the program: ``[0]`` (for every backend)."""
    return list(range(process_count(backend)))


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[Any]:
    """The devices this process drives: all of them, as there is one process."""
    from .devices import devices
    return devices(backend)


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def print_environment_info(return_string: bool = False) -> str | None:
    """Prints what a bug report needs: this library's version and those it runs on, the
    devices, the process count, the platform, and the environment variables that configure
    it (JAX prints jax's and jaxlib's versions, and the ``JAX_`` and ``XLA_`` variables).

    Example:
        >>> import stage2_jit as jax
        >>> print(jax.print_environment_info(return_string=True).splitlines()[0])
        stage2_jit: 0.1.0
    """
    from .devices import devices
    return environment_info("stage2_jit", devices(), process_count(), return_string)


def environment_info(library: str, device_list: list[Any], processes: int,
                     return_string: bool) -> str | None:
    """``print_environment_info`` for ``library``, whose devices are ``device_list``."""
    import os
    import platform
    import sys
    from importlib.metadata import version
    names = [library, "numba", "numpy", "scipy"]
    width = max(map(len, names)) + 2
    lines = [f"{name + ':':{width}}{version(name)}" for name in names]
    lines += [f"{'python:':{width}}{sys.version}",
              f"device info: {device_list[0].platform}-{len(device_list)}, "
              f"{len(device_list) // processes} local devices",
              f"process_count: {processes}", f"platform: {platform.uname()}"]
    lines += [f"{key}={value}" for key, value in sorted(os.environ.items())
              if key.startswith(("JAX_", "XLA_", "NUMBA_", "OMP_", "OPENBLAS_"))]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None
