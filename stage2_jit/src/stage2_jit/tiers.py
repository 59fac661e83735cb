"""Tiered execution: a new program's first calls run on the interpreter while its kernel
compiles in the background, and the calls after that run the kernel, with the same bits.

A cold first call costs about 0.4 s on the machine this was written on: Numba's one-time
set-up in a process (its typing and lowering registries, which import SciPy's BLAS) about
0.25 s, then the kernel's compilation. The interpreter (``passes.optimize``'s program, one
NumPy call per equation) answers at once. So ``compile_cpu`` wraps an executable in a
:class:`Tiered` one when the interpreter computes exactly what the kernel does: its first call
runs on the interpreter and then starts a thread that compiles the kernel for the arguments'
types, and until that thread is done every call runs on the interpreter. LLVM compiles
without holding Python's lock for much of the time, so the later calls overlap with it even
on one core; the first call has the machine to itself (the tour's sharded step's first call
took 0.20 to 0.25 s with the thread started before it, 0.13 s after).

*Exactly* is the condition, since a result must not depend on how fast a compiler was.
:func:`reproducible` admits a program only when every equation's interpreter result equals the
kernel's bit for bit, as ``tests/stage2/test_tiers.py`` checks for each primitive admitted:

- moving elements (``SHAPE`` primitives), and reductions of integers and booleans;
- the elementwise primitives the kernel spells with correctly rounded IEEE operations, or with
  ``kernel_math`` intrinsics written to give NumPy's results (integer division, shifts,
  conversions);
- ``iota`` (the kernel converts its loop index; floats are exact up to 2**24);
- float ``max`` and ``min``, whose eager impls put +0 above -0 as the kernel does (stage 1's
  ``signed_zeros``, for JAX's results);
- float32 ``exp``, ``log``, ``tanh`` and ``logistic``, whose kernels use ``kernel_math``'s
  polynomials: the interpreter runs the same polynomials on whole arrays (:func:`twin`),
  with :func:`exact_fma` for the kernel's fused multiply-adds;
- float reductions the kernel does in order (``codegen_cpu.reduces_in_order``: over leading
  axes, of at most 16 elements per result, or full reductions of at most 4096 elements),
  which the interpreter folds in the same order (:func:`_fold`), rather than with NumPy's
  pairwise sum;
- matrix products the kernel hands BLAS: the interpreter makes the same BLAS call
  (:func:`blas_twin`).

Not admitted, so compiled before their first call as before: longer float reductions (the
kernel reassociates them so that they vectorise), other transcendental functions (the C
library's and NumPy's differ in the last bit), and everything else. A sharded program's
segments are admitted by the same rule, so the tour's data-parallel training step (matrix
products, short rows of logits, column sums of gradients) starts on the interpreter too.

A call that donates arguments waits for the kernel (or compiles it), since only the kernel
writes its outputs into donated buffers; the interpreter's results go into memory from the
runtime's pool, as the kernel's do, so that donating them later reuses their buffers. An
elementwise program is interpreted a block of elements at a time
(:func:`interpret_into_pool`), so that its first call makes no large temporaries.

``jax_from_numpy_tiered`` (environment variable ``JAX_FROM_NUMPY_TIERED``) turns this off;
:func:`wait` waits for the compilations in flight (benchmarks call it before timing kernels).

NB: JAX has no tiers; the JVM's and V8's JITs are the classic ones (an interpreter, then
compiled code once a function proves hot).
"""

from __future__ import annotations

import math
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg import blas  # the kernels' BLAS: imported here, not in a first call (80 ms)
from stage1_autodiff.config import config
from stage1_autodiff.core import Array, PrimitiveKind, impl_rules, numpy_warnings_off

from stage1_autodiff import prims as p

from . import kernel_math
from .buffers import POOL
from .codegen_cpu import FLOAT_COMBINES, reduces_in_order
from .fusion import is_blas_dot
from .jaxpr import Jaxpr, Literal, Var

config.define("jax_from_numpy_tiered", True,
              "Run a new jitted function's first calls on the interpreter while its kernel "
              "compiles in the background, when the two give identical results.")

# --8<-- [start:reproducible]
# Elementwise primitives whose NumPy implementation gives the kernel's bits for every dtype.
EXACT = {p.neg_p, p.add_p, p.sub_p, p.mul_p, p.div_p, p.rem_p, p.eq_p, p.ne_p, p.lt_p,
         p.le_p, p.gt_p, p.ge_p, p.and_p, p.or_p, p.xor_p, p.not_p, p.select_n_p,
         p.convert_element_type_p, p.stop_gradient_p, p.copy_p, p.name_p, p.abs_p, p.floor_p,
         p.ceil_p, p.sqrt_p, p.shift_left_p, p.shift_right_logical_p, p.shift_right_arithmetic_p,
         p.bitcast_convert_type_p}


def reproducible(jaxpr: Jaxpr) -> bool:
    """Whether the interpreter, with the :func:`twin` functions, gives the kernel's bits for
    every equation of ``jaxpr``."""
    return all(_reproducible(eqn) for eqn in jaxpr.eqns)


def _reproducible(eqn: Any) -> bool:
    kind, dtype = eqn.primitive.kind, eqn.outvars[0].aval.dtype
    if kind is PrimitiveKind.SHAPE:
        return True
    if kind is PrimitiveKind.REDUCTION:  # a float one only if the kernel adds in order
        return dtype.kind in "biu" or twin(eqn) is not None
    if eqn.primitive is p.integer_pow_p:  # the kernel multiplies, NumPy calls pow
        return dtype.kind in "iu" or eqn.params["y"] in (0, 1)
    if eqn.primitive in (p.max_p, p.min_p):  # eager's zeros are the kernel's (signed_zeros)
        return True
    if eqn.primitive is p.iota_p:  # exact while the dtype holds every count
        count = eqn.params["shape"][eqn.params["dimension"]]
        return dtype.kind in "biu" or (dtype.itemsize >= 4 and count <= 2 ** 24)
    return eqn.primitive in EXACT or twin(eqn) is not None
# --8<-- [end:reproducible]


def _numpy_twin(function: Any, names: dict[str, Any]) -> Callable[..., np.ndarray]:
    """``function``'s Python source run on whole arrays: the kernel_math intrinsics it calls
    replaced by the NumPy functions with the same results."""
    return types.FunctionType(function.py_func.__code__, {**vars(kernel_math), **names})


# --8<-- [start:exact_fma]
_LOW_BITS, _TIE = 0x1FFFFFFF, 0x10000000  # the 29 float64 bits float32 drops; a halfway point
_EXPONENT = 0x7FF0000000000000  # a float64's exponent bits
_FLOAT32_TINY = np.float64(2.0 ** -126).view(np.int64)  # float32's smallest normal number


def exact_fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """``a * b + c`` of float32 values rounded once to float32, as ``kernel_math.fma`` gives
    it, with NumPy, which has no fused multiply-add. In float64 the product is exact (24 + 24
    bits) and the sum is rounded once; rounding that to float32 rounds a second time, which
    gives the wrong float32 only when the float64 sum landed exactly halfway between two
    float32 numbers (or where float32's precision shrinks, below 2**-126). Those rare
    elements are rounded again from the exact sum (:func:`_rounded_to_odd`). Which NaN comes
    out of NaN operands is the instruction's choice; ``exp_f32`` gives back its own."""
    product = np.multiply(a, b, dtype=np.float64)
    total = np.asarray(product + c)
    bits = total.view(np.int64)
    suspect = ((bits & _LOW_BITS) == _TIE) | ((bits & _EXPONENT) < _FLOAT32_TINY)
    if suspect.any():
        product, addend, total = np.broadcast_arrays(product, np.asarray(c, np.float64), total)
        total = total.copy()  # (broadcast views are read-only)
        total[suspect] = _rounded_to_odd(product[suspect], addend[suspect], total[suspect])
    return total.astype(np.float32)


def _rounded_to_odd(product: np.ndarray, addend: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``product + addend`` (``total`` rounded to nearest) rounded to odd instead: an inexact
    sum moves to whichever float64 neighbour has an odd last bit, which is never halfway
    between two float32 numbers, so that rounding it to float32 is right (Boldo and
    Melquiond's argument: 53 >= 24 + 2 bits). TwoSum gives the rounding error exactly."""
    moved = total - product
    error = (product - (total - moved)) + (addend - moved)
    even = (total.view(np.int64) & 1) == 0
    odd = np.nextafter(total, np.where(error > 0, np.inf, -np.inf))
    return np.where((error != 0) & even & np.isfinite(error), odd, total)
# --8<-- [end:exact_fma]


def _float32_twins() -> dict[Any, Callable[..., np.ndarray]]:
    names = {"select": np.where, "maximum": np.maximum, "minimum": np.minimum,
             "fma": exact_fma,
             "float32_from_bits": lambda bits: np.asarray(bits, np.int32).view(np.float32),
             "bitcast": lambda x, dtype: np.asarray(x).view(dtype)}
    names["exp_f32"] = _numpy_twin(kernel_math.exp_f32, names)
    return {p.exp_p: names["exp_f32"], p.tanh_p: _numpy_twin(kernel_math.tanh_f32, names),
            p.logistic_p: _numpy_twin(kernel_math.logistic_f32, names),
            p.log_p: _numpy_twin(kernel_math.log_f32, names)}


# How the kernel computes these float32 primitives, on arrays.
FLOAT32_TWINS = _float32_twins()


# --8<-- [start:in_order_twin]
def _fold(prim: Any, x: np.ndarray, lead: int) -> np.ndarray:
    """``x`` reduced over its first ``lead`` axes as the kernel does when it reduces in order
    (``codegen_cpu.reduces_in_order``): ``((identity op x0) op x1) op ...``, in row-major
    order. NumPy's own ``sum`` adds pairwise, so sums and products are running ones
    (``accumulate``), a block of rows at a time; a maximum or minimum is the same in any
    order, so eager's reduction serves (which puts +0 above -0, as the kernel does)."""
    rest = x.shape[lead:]
    rows = x.reshape((math.prod(x.shape[:lead]), *rest))
    if prim in (p.reduce_max_p, p.reduce_min_p):  # eager's impl, signed zeros and all
        return impl_rules[prim](rows, axes=(0,))
    ufunc = np.add if prim is p.reduce_sum_p else np.multiply
    acc = np.full(rest, prim.identity(x.dtype), x.dtype)
    step = max(1, (1 << 20) // max(1, acc.size))
    for start in range(0, len(rows), step):
        acc = ufunc.accumulate(np.concatenate([acc[None], rows[start:start + step]]))[-1]
    return acc


def _in_order_reduction(eqn: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The kernel's in-order float reduction, on arrays: the reduced axes first, then folded;
    a full reduction folds its partial results (one per index of its first axis) again."""
    prim, dtype = eqn.primitive, eqn.outvars[0].aval.dtype
    if prim not in FLOAT_COMBINES or dtype not in (np.float32, np.float64):
        return None
    axes = tuple(eqn.params["axes"])
    if not reduces_in_order(eqn.invars[0].aval.shape, axes):
        return None

    def reduce(x: np.ndarray) -> np.ndarray:
        moved = np.moveaxis(x, axes, range(len(axes)))
        if len(axes) < x.ndim:
            return _fold(prim, moved, len(axes))
        partials = _fold(prim, np.moveaxis(moved, 0, -1), len(axes) - 1)
        return _fold(prim, partials, 1)
    return reduce
# --8<-- [end:in_order_twin]


# --8<-- [start:blas_twin]
def blas_twin(eqn: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """A matrix product the kernel hands BLAS (``codegen_cpu._emit_dot``), made by the same
    BLAS calls: the kernel's ``np.dot`` calls SciPy's BLAS (Numba links it), so the
    interpreter calls the same routines through ``scipy.linalg.blas``, on the same memory
    layouts. (NumPy's ``@`` uses NumPy's own OpenBLAS build, whose bits may differ.)"""
    if not is_blas_dot(eqn) or eqn.invars[1].aval.ndim != 2 or \
            eqn.outvars[0].aval.dtype not in (np.float32, np.float64):
        return None
    (lc, rc), _ = eqn.params["dimension_numbers"]
    out_shape = eqn.outvars[0].aval.shape

    def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x_transposed = x.ndim == 2 and lc == (0,)  # the kernel passes ``x.T``: F layout
        x = x.T if x_transposed else x.reshape((math.prod(x.shape[:-1]), x.shape[-1]))
        y_transposed = rc == (1,)
        y = y.T if y_transposed else y
        return _numba_dot(x, x_transposed, y, y_transposed).reshape(out_shape)
    return dot


def _numba_dot(x: np.ndarray, x_f: bool, y: np.ndarray, y_f: bool) -> np.ndarray:
    """``x @ y`` (matrices) by the BLAS call Numba's ``np.dot(x, y, out)`` makes for a C
    ``out``, with ``x`` and ``y`` in F layout where ``x_f``, ``y_f``, else C: ``gemm`` on
    the transposed problem (BLAS is column-major), ``gemv`` when a side is one row or column,
    ``dot`` when both are, zeros when a dimension is 0."""
    (m, k), n = x.shape, y.shape[1]
    if not (m and n and k):
        return np.zeros((m, n), x.dtype)
    x = np.asfortranarray(x) if x_f else np.ascontiguousarray(x)
    y = np.asfortranarray(y) if y_f else np.ascontiguousarray(y)
    kind = "s" if x.dtype == np.float32 else "d"
    if m == 1 and n == 1:
        return np.full((1, 1), getattr(blas, kind + "dot")(x.ravel("K"), y.ravel("K")), x.dtype)
    gemv = getattr(blas, kind + "gemv")
    if n == 1:  # the memory of x as a column-major matrix: x itself if F, else x.T
        return gemv(1.0, x if x_f else x.T, y.ravel("K"), trans=0 if x_f else 1)[:, None]
    if m == 1:
        return gemv(1.0, y if y_f else y.T, x.ravel("K"), trans=1 if y_f else 0)[None, :]
    # C = x @ y computed as C.T = y.T @ x.T, column-major
    product = getattr(blas, kind + "gemm")(1.0, y if y_f else y.T, x if x_f else x.T,
                                           trans_a=int(y_f), trans_b=int(x_f))
    return product.T
# --8<-- [end:blas_twin]


def twin(eqn: Any) -> Callable[..., np.ndarray] | None:
    """The function that gives the kernel's bits for ``eqn`` where NumPy's primitive does not
    (see ``codegen_cpu.ELEMENTWISE``), or None."""
    dtype = eqn.outvars[0].aval.dtype
    if eqn.primitive.kind is PrimitiveKind.REDUCTION:
        return _in_order_reduction(eqn)
    if eqn.primitive is p.dot_general_p:
        return blas_twin(eqn)
    return FLOAT32_TWINS.get(eqn.primitive) if dtype == np.float32 else None


def interpret(jaxpr: Jaxpr, consts: list[Any], args: list[Array]) -> list[Array]:
    """``jaxpr`` evaluated one equation at a time, as the interpreter backend does, but the
    primitives that have a :func:`twin` by it."""
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom: Any) -> Any:
        return atom.val if isinstance(atom, Literal) else env[atom]

    with numpy_warnings_off():
        for eqn in jaxpr.eqns:
            kernel_way = twin(eqn)
            if kernel_way is not None:
                aval = eqn.outvars[0].aval
                operands = [np.asarray(getattr(v, "_value", v), aval.dtype)
                            for v in map(read, eqn.invars)]
                outs = [Array(np.asarray(kernel_way(*operands), aval.dtype), aval.weak_type)]
            else:
                outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
                outs = outs if eqn.primitive.multiple_results else [outs]
            env.update(zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


# --8<-- [start:tiered]
_in_flight: set[threading.Thread] = set()


class Tiered:
    """A CPU executable whose first calls run on the interpreter while its kernel compiles.
    Everything else (``source``, ``plan``, ``kernel``...) is the compiled executable's."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled  # the CpuExecutable (its ``kernel`` is the Numba function)
        self.ready = False  # set by the compiling thread when it is done
        self.thread: threading.Thread | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __call__(self, *args: np.ndarray) -> list[Array]:
        return self.run_donating(list(args), {})

    def run_donating(self, args: list[np.ndarray], donated: dict[int, int]) -> list[Array]:
        if donated and not self.ready:  # only the kernel writes in place: wait for it
            if self.thread is None:
                self.compiled.compile_for(args)
                self.ready = True
            else:
                self.thread.join()
        if self.ready:
            return self.compiled.run_donating(args, donated)
        optimized, out_avals = self.compiled.optimized, self.compiled.out_avals
        outs = interpret_into_pool(optimized.jaxpr, optimized.consts, args, out_avals)
        results = [Array(o, aval.weak_type) for o, aval in zip(outs, out_avals)]
        if self.thread is None:  # after the first call, which so does not share the machine
            self.thread = threading.Thread(target=self._compile, args=(args,), daemon=True,
                                           name="jax_from_numpy kernel compile")
            _in_flight.add(self.thread)
            self.thread.start()
        return results

    def compile_now(self) -> Any:
        """Compiles the kernel in this thread, for arguments of the program's types, and
        returns its executable (``jit(f).lower(x).compile()``)."""
        self.compiled.compile_for([np.empty((1,) * len(a.shape), a.dtype)
                                 for a in self.compiled.in_avals])
        self.ready = True
        return self.compiled

    def _compile(self, args: list[np.ndarray]) -> None:
        try:
            self.compiled.compile_for(args)
        except Exception:  # noqa: BLE001 -- the next call compiles in the caller and raises
            pass
        finally:
            self.ready = True
            _in_flight.discard(threading.current_thread())
# --8<-- [end:tiered]


BLOCK = 1 << 16  # elements: a block's temporaries stay in the CPU's caches


# --8<-- [start:blockwise]
def interpret_into_pool(jaxpr: Jaxpr, consts: list[Any], args: list[np.ndarray],
                        out_avals: list[Any]) -> list[np.ndarray]:
    """:func:`interpret`'s results, in memory from the runtime's pool, as a kernel's are
    (donating them later reuses their buffers, whichever tier made them).

    A program of elementwise equations on arrays of one shape runs a block of ``BLOCK``
    elements at a time, straight into its results: NumPy's temporaries stay small, where
    whole-array ones would be fresh memory (for ``x * x + x * 2.0`` on 5000², three of
    100 MB, each page faulted in on its first touch)."""
    outs = [POOL.empty(aval.shape, aval.dtype) for aval in out_avals]
    invars = [*jaxpr.constvars, *jaxpr.invars]
    values = [np.asarray(getattr(x, "_value", x)) for x in [*consts, *args]]
    weak = [v.aval.weak_type for v in invars]
    size = _blockwise_size(jaxpr)
    pieces = [slice(at, at + BLOCK) for at in range(0, size, BLOCK)] if size > BLOCK else [None]
    for piece in pieces:
        arrays = [Array(_piece(x, piece), w) for x, w in zip(values, weak)]
        results = interpret(jaxpr, arrays[:len(consts)], arrays[len(consts):])
        for out, result in zip(outs, results):
            np.copyto(_piece(out, piece), getattr(result, "_value", result), casting="unsafe")
    return outs


def _piece(x: np.ndarray, piece: slice | None) -> np.ndarray:
    """``x`` itself, or the elements ``piece`` of its flattened view."""
    return x if piece is None else x.reshape(-1)[piece]


def _blockwise_size(jaxpr: Jaxpr) -> int:
    """The number of elements of a program of elementwise equations on arrays of one shape
    (which may run a block at a time), else 0."""
    atoms = [*jaxpr.constvars, *jaxpr.invars, *(v for e in jaxpr.eqns for v in e.outvars),
             *jaxpr.outvars]
    shapes = {v.aval.shape for v in atoms if isinstance(v, Var)}
    elementwise = all(e.primitive.kind is PrimitiveKind.ELEMENTWISE for e in jaxpr.eqns)
    return math.prod(shapes.pop()) if elementwise and len(shapes) == 1 else 0
# --8<-- [end:blockwise]


def wait() -> None:
    """Waits until every kernel compiling in the background is ready."""
    for thread in list(_in_flight):
        thread.join()
