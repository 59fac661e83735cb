"""The extension point: every seam through which a later stage plugs into stage 1.

Stage 1 runs primitives eagerly with NumPy and differentiates them. Stage 2 adds programs and
arrays on a GPU, stage 3 batching, stage 4 arrays split over devices. Stage 1 knows none of
them; they reach in only through the seams listed here, each a name a reader can search for.

1. **Where an eager primitive runs.** ``EvalTrace`` runs NumPy on plain ``Array``s. An operand
   of another array class that defines ``apply_primitive(prim, arrays, params)`` (stage 2's
   ``GpuArray``, stage 4's sharded arrays), or a requested result layout that does (a
   primitive's ``out_sharding``, stage 4's ``NamedSharding``), is handed the primitive instead
   (``executor_for``). JAX's counterpart is ``jax/_src/dispatch.py:apply_primitive``.
2. **A layout in the type.** ``core.ShapedArray.sharding`` is ``None`` in stages 1 to 3;
   stage 4 fills it in, and stage 1's rules that make arrays of a given type (``full_like``,
   ``with_sharding_of``) pass it on.
3. **How a program runs** (``run_program``). A ``custom_vjp`` function that a jaxpr holds is a
   program, which stage 1 cannot run; stage 2 registers how (``set_program_runner``), how an
   op's programs are marked as the primal computation of a ``grad`` (``set_program_claimer``:
   see ``autodiff.primal_below``), and the
   loop that traces (``set_while_loop``), which ``while_loop_eager_or_traced`` hands a loop to
   under ``jit`` and ``vmap`` (the rejection samplers of ``jax.random``, the minimizers of
   ``jax.scipy.optimize``).
4. **Device memory** (``track_device_memory``, ``track_pool_memory``): stage 2's buffer pool
   counts what it lends and keeps, stage 4's arrays the blocks they own on each device, and
   ``Device.memory_stats`` reports the counts.
5. **Options**: ``config.define`` declares a stage's own option beside the code reading it.
6. **Where a new array is placed** (``set_placement``): the ``device=`` and ``out_sharding=``
   of ``jnp.zeros``, ``jnp.asarray`` and the other functions that make arrays. Stage 1 knows
   one device, the host; stage 2 adds the GPU, stage 4 shardings.

Primitives, their rules (``impl_rules``, ``jvp_rules``, ``vjp_rules`` and the later stages'
tables) and their kinds are the other way in: a table per transformation, keyed by primitive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


# --8<-- [start:executor_for]
def executor_for(arrays: list[Any], params: dict[str, Any]) -> Callable | None:
    """Who runs a primitive on ``arrays`` eagerly, other than NumPy: the ``apply_primitive``
    of the first operand whose class has one, else that of the requested ``out_sharding``;
    None for plain arrays (``EvalTrace`` runs NumPy)."""
    for x in arrays:
        run = getattr(type(x), "apply_primitive", None)
        if run is not None:
            return run
    return getattr(params.get("out_sharding"), "apply_primitive", None)
# --8<-- [end:executor_for]


_program_runner: list[Callable[[Any], Callable[..., list[Any]]]] = []


def set_program_runner(runner: Callable[[Any], Callable[..., list[Any]]]) -> None:
    """Registers how a program (stage 2's ``ClosedJaxpr``) becomes the function it computes."""
    _program_runner[:] = [runner]


def run_program(program: Any) -> Callable[..., list[Any]]:
    """The function a program computes, by the registered runner."""
    if not _program_runner:
        raise TypeError("A program (a jaxpr) needs stage 2 to run: import stage2_jit.")
    return _program_runner[0](program)


_program_claimer: list[Callable[[dict[str, Any]], dict[str, Any]]] = []


def set_program_claimer(claim: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Registers how the programs among an op's params are marked as the primal computation
    of a ``grad`` above (stage 2's ``tracing.claim_programs``)."""
    _program_claimer[:] = [claim]


def claim_programs(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with its programs marked so, by the registered claimer (stage 1 has no
    programs: as they are)."""
    return _program_claimer[0](params) if _program_claimer else params


_while_loop: list[Callable[..., Any]] = []


def set_while_loop(loop: Callable[..., Any]) -> None:
    """Registers ``lax.while_loop`` (stage 2's), a loop whose condition may be traced."""
    _while_loop[:] = [loop]


def traced_while_loop() -> Callable[..., Any] | None:
    """The registered ``lax.while_loop``, or None before stage 2 is imported."""
    return _while_loop[0] if _while_loop else None


def while_loop_eager_or_traced(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
                               init_val: Any, *, name: str = "This loop") -> Any:
    """``lax.while_loop``'s meaning for stage 1's own loops: ``val = init_val; while
    cond_fun(val): val = body_fun(val)``.

    Stage 1 has no loop that can be traced, so the loop runs eagerly, reading each step's
    condition (under ``grad`` too, where the condition's value is known). While a program is
    being traced (``jit``, ``make_jaxpr``), or when the condition is traced (``vmap``), the
    loop is handed to the ``lax.while_loop`` that stage 2 registers (``set_while_loop``),
    from the carry it has reached: under ``jit`` it is one loop of the program, even where
    its first conditions are known, as JAX stages every loop. Without stage 2 a traced
    condition is an error naming ``name``. As in JAX's ``while_loop``, a condition that is
    not a boolean scalar is a ``TypeError``.

    Example:
        >>> while_loop_eager_or_traced(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2),
        ...                            (0, 1))
        (3, 8)
    """
    from .core import trace_state
    from .errors import ConcretizationTypeError
    loop = traced_while_loop()
    if loop is not None and trace_state.dynamic_trace.level:
        return loop(cond_fun, body_fun, init_val)
    val = init_val
    while True:
        keep_going = cond_fun(val)
        shape, dtype = getattr(keep_going, "shape", ()), getattr(keep_going, "dtype", "bool")
        if tuple(shape) != () or str(dtype) != "bool":
            dims = ",".join(map(str, shape))
            raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                            f"[ShapedArray({dtype}[{dims}])].")
        try:
            keep_going = bool(keep_going)
        except ConcretizationTypeError as error:
            if loop is None:
                raise NotImplementedError(
                    f"{name} under a transformation (jit, vmap) needs a loop that can be "
                    f"traced, which stage 2 adds: import stage2_jit (or a later stage), or "
                    f"call it outside the transformation.") from error
            return loop(cond_fun, body_fun, val)
        if not keep_going:
            return val
        val = body_fun(val)


_device_memory: dict[Any, dict[str, int]] = {}  # device -> counters, named as JAX names them


def _counters(device: Any) -> dict[str, int]:
    return _device_memory.setdefault(device, dict.fromkeys(
        ["num_allocs", "bytes_in_use", "peak_bytes_in_use", "largest_alloc_size", "pool_bytes",
         "peak_pool_bytes"], 0))


def track_device_memory(device: Any, nbytes: int) -> None:
    """Counts a buffer of ``nbytes`` allocated on ``device`` (negative: freed)."""
    counts = _counters(device)
    counts["bytes_in_use"] += nbytes
    counts["peak_bytes_in_use"] = max(counts["peak_bytes_in_use"], counts["bytes_in_use"])
    if nbytes > 0:
        counts["num_allocs"] += 1
        counts["largest_alloc_size"] = max(counts["largest_alloc_size"], nbytes)


def track_pool_memory(device: Any, nbytes: int) -> None:
    """Counts ``nbytes`` more (negative: fewer) held by ``device``'s memory pool, in use or
    kept for reuse."""
    counts = _counters(device)
    counts["pool_bytes"] += nbytes
    counts["peak_pool_bytes"] = max(counts["peak_pool_bytes"], counts["pool_bytes"])


def set_memory_limit(device: Any, nbytes: int) -> None:
    """Says how many bytes ``device`` holds (``bytes_limit``; by default the host's memory)."""
    _counters(device)["bytes_limit"] = nbytes


def device_memory(device: Any) -> dict[str, int]:
    """The counters of ``device``: JAX's ``memory_stats`` keys that apply here."""
    return dict(_counters(device))


_placement: list[Callable[[Any, Any, Any], Any]] = []


def set_placement(place: Callable[[Any, Any, Any], Any]) -> None:
    """Registers how an array is put on a device or laid out: ``place(x, device,
    out_sharding)``, at most one of the two given; neither: on ``jax.default_device``'s
    device (a later stage's rule replaces an earlier one's)."""
    _placement[:] = [place]


def place(x: Any, device: Any, out_sharding: Any) -> Any:
    """``x`` on ``device`` or laid out as ``out_sharding``, by the registered rule. Without
    one (stage 1 alone) the host is the only device, and there is no mesh."""
    if _placement:
        return _placement[0](x, device, out_sharding)
    from .core import CPU_DEVICE, SingleDeviceSharding
    if out_sharding is None and device in (None, CPU_DEVICE, SingleDeviceSharding(CPU_DEVICE)):
        return x
    what = (f"out_sharding={out_sharding!r} lays an array out over a mesh of devices"
            if out_sharding is not None else f"device={device!r} is not a device of stage 1")
    raise ValueError(f"{what}: stage 1 has one device, the host CPU "
                     f"(stage 2 adds the GPU, stage 4 meshes and shardings).")
