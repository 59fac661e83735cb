"""JAX as the oracle: one program run by both libraries through one transformation, and the
results compared leaf by leaf (structure, dtype, weak type, shape, values, sharding), or the
errors compared by their broad class.

A transformation is a line of code (``jax.jit(jax.grad(loss_of(program), ARGNUMS))(*args)``),
evaluated once with our modules bound to ``jax``/``jnp``/``lax`` and once with JAX's. The same
line goes into the reproducer a mismatch prints, so what the suite ran is what a reader reruns.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from random_programs import Program

STAGES = {1: "stage1_autodiff", 2: "stage2_jit", 3: "stage3_vmap", 4: "stage4_sharding"}

DEVICES = 8
# 8 CPU devices, for stage 4's meshes; LLVM's lowest optimization level, since the oracle
# compiles hundreds of small programs that each run once: they compile in half the time and
# compute the same values (XLA's own passes, fusion included, still run).
XLA_FLAGS = (f"--xla_force_host_platform_device_count={DEVICES}",
             "--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")


def prepare_jax() -> bool:
    """Starts JAX's CPU backend with ``XLA_FLAGS``: XLA reads them when the backend starts,
    at the first array JAX makes (not at ``import jax``), so this starts it at once, and then
    puts the environment back as it was, so that processes started later (a benchmark, a
    test's subprocess) get their own settings. False when JAX is not installed."""
    if importlib.util.find_spec("jax") is None:
        return False
    before = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = " ".join([before or "", *XLA_FLAGS]).strip()
    try:
        import jax
        jax.config.update("jax_num_cpu_devices", DEVICES)
        jax.devices()
    finally:
        if before is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = before
    return True


@dataclass(frozen=True)
class Library:
    """The modules a program sees as ``jax``, ``jnp`` and ``lax``."""

    name: str
    jax: ModuleType
    jnp: ModuleType
    lax: ModuleType

    def namespace(self) -> dict[str, Any]:
        return {"jax": self.jax, "jnp": self.jnp, "lax": self.lax, "np": np}

    @property
    def is_jax(self) -> bool:
        return self.name == "jax"


def ours(stage: int = 4) -> Library:
    package = STAGES[stage]
    return Library(package, importlib.import_module(package),
                   importlib.import_module(f"{package}.numpy"),
                   importlib.import_module(f"{package}.lax"))


def real_jax() -> Library:
    import jax
    return Library("jax", jax, importlib.import_module("jax.numpy"),
                   importlib.import_module("jax.lax"))


# ------------------------------------------------------------------------------------------
# Transformations: each a line of code over the names below, and the first stage offering it
# ------------------------------------------------------------------------------------------

# The helpers a transformation's line may call, each with the helpers it calls itself.
HELPERS = {
    "floats_of": ((), '''
def floats_of(f):
    """f with only its float outputs, as a tuple: what gradients flow into."""
    def floats(*xs):
        outs = f(*xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return tuple(outs[k] for k in FLOAT_OUTPUTS)
    return floats
'''),
    "loss_of": (("floats_of",), '''
def loss_of(f):
    """A scalar of f's float outputs, nonlinear so that second derivatives are not zero."""
    def loss(*xs):
        return sum(jnp.sum(jnp.sin(out)) for out in floats_of(f)(*xs))
    return loss
'''),
    "grad_norm_of": (("loss_of",), '''
def grad_norm_of(f):
    def grad_norm(*xs):
        return sum(jnp.sum(g * g) for g in jax.grad(loss_of(f), ARGNUMS)(*xs))
    return grad_norm
'''),
    "cotangent": ((), '''
def cotangent(out):
    shape = np.shape(out)
    return np.cos(np.arange(np.prod(shape)) * 0.7 + 0.3).reshape(shape).astype(np.float32)
'''),
    "split_batch": ((), '''
def split_batch(args, mesh_axes):
    """The arguments stacked into a batch of 8 examples, its dim split over the first of
    ``mesh_axes`` that no argument's own split uses, as a data-parallel batch is."""
    arrays = [jnp.asarray(a) for a in args]
    specs = [tuple(getattr(jax.typeof(a).sharding, "spec", ())) for a in arrays]
    used = {name for spec in specs for entry in spec
            for name in (entry if isinstance(entry, tuple) else (entry,))}
    free = next((name for name in mesh_axes if name not in used), None)
    return [jax.sharding.reshard(jnp.stack([a, a * 0.5 + 0.25] * 4),
                                 jax.sharding.PartitionSpec(free, *spec))
            for a, spec in zip(arrays, specs)]
'''),
    "pulled_back": (("floats_of", "cotangent"), '''
def pulled_back(f, *xs):
    out, pullback = jax.vjp(floats_of(f), *xs)
    return out, pullback(tuple(cotangent(o) for o in out))
'''),
}


def helpers_source(code: str) -> str:
    """The source of the helpers ``code`` calls, callees first."""
    wanted: list[str] = []

    def need(name: str) -> None:
        for callee in HELPERS[name][0]:
            need(callee)
        if name not in wanted:
            wanted.append(name)

    for name in HELPERS:
        if f"{name}(" in code:
            need(name)
    return "\n".join(HELPERS[name][1] for name in wanted)



@dataclass(frozen=True)
class Transform:
    name: str
    code: str
    stage: int  # the first stage that offers it

    @property
    def batched(self) -> bool:
        return "vmap" in self.code


TRANSFORMS = [
    Transform("eager", "program(*args)", 1),
    Transform("grad", "jax.grad(loss_of(program), ARGNUMS)(*args)", 1),
    Transform("jvp", "jax.jvp(program, tuple(args), tuple(tangents))", 1),
    Transform("vjp", "pulled_back(program, *args)", 1),
    Transform("grad_of_grad", "jax.grad(grad_norm_of(program), ARGNUMS)(*args)", 1),
    Transform("jvp_of_grad",  # forward over reverse, as hessian-vector products are made
              "jax.jvp(jax.grad(loss_of(program), ARGNUMS), tuple(args), tuple(tangents))", 1),
    Transform("jit", "jax.jit(program)(*args)", 2),
    Transform("jit_of_grad", "jax.jit(jax.grad(loss_of(program), ARGNUMS))(*args)", 2),
    Transform("grad_of_jit", "jax.grad(loss_of(jax.jit(program)), ARGNUMS)(*args)", 2),
    Transform("linearize", "jax.linearize(program, *args)[1](*tangents)", 2),
    Transform("grad_of_checkpoint", "jax.grad(jax.checkpoint(loss_of(program)), ARGNUMS)(*args)",
              2),
    Transform("vmap", "jax.vmap(program, IN_AXES)(*batch)", 3),
    Transform("vmap_of_grad", "jax.vmap(jax.grad(loss_of(program), ARGNUMS), IN_AXES)(*batch)",
              3),
    Transform("jit_of_vmap", "jax.jit(jax.vmap(program, IN_AXES))(*batch)", 3),
    Transform("vmap_of_jit", "jax.vmap(jax.jit(program), IN_AXES)(*batch)", 3),
    Transform("grad_of_vmap", "jax.grad(loss_of(jax.vmap(program, IN_AXES)), ARGNUMS)(*batch)",
              3),
    Transform("vmap_of_jvp",
              "jax.vmap(lambda *b: jax.jvp(program, b, tuple(tangents)), IN_AXES)(*batch)", 3),
    Transform("jacfwd", "jax.jacfwd(floats_of(program), ARGNUMS)(*args)", 3),
    Transform("jacrev", "jax.jacrev(floats_of(program), ARGNUMS)(*args)", 3),
]
BY_NAME = {t.name: t for t in TRANSFORMS}
DIFFERENTIATES = {"grad", "jvp", "vjp", "grad_of_grad", "jvp_of_grad", "jit_of_grad",
                  "grad_of_jit", "grad_of_checkpoint",
                  "vmap_of_grad", "grad_of_vmap", "vmap_of_jvp", "linearize", "jacfwd",
                  "jacrev"}

BATCH = 3


@dataclass
class Inputs:
    """What a transformation is called with, besides the program: NumPy arrays or floats."""

    args: list[Any]
    tangents: list[Any]
    batch: list[Any]
    in_axes: tuple[int | None, ...]


def inputs_for(program: Program) -> Inputs:
    """Tangents and a batch for ``program``'s arguments, drawn from its seed."""
    rng = np.random.default_rng(program.seed + 7919)
    tangents, batch, axes = [], [], []
    for value, arg in zip(program.inputs, program.args):
        if value.kind == "p":
            tangents.append(float(np.float32(rng.uniform(-1, 1))))
            batch.append(arg)
            axes.append(None)
            continue
        tangents.append(rng.uniform(-1, 1, size=value.shape).astype(np.float32))
        axis = [0, 0, 1, -1, None][rng.integers(0, 5)]
        axis = None if axis is not None and len(value.shape) < abs(axis) - (axis < 0) else axis
        axes.append(axis)
        stacked = [rng.uniform(-2, 2, size=value.shape).astype(np.float32) for _ in range(BATCH)]
        batch.append(arg if axis is None else np.stack(stacked, axis=axis))
    if all(a is None for a in axes):
        axes[0] = 0
        batch[0] = np.stack([program.args[0]] * BATCH)
    return Inputs(list(program.args), tangents, batch, tuple(axes))


# ------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """A run's result, or the exception it raised, and the user warnings it gave."""

    value: Any = None
    error: Exception | None = None
    warned: tuple[str, ...] = ()  # the classes of its UserWarnings, sorted, once each

    def __str__(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {str(self.error)[:300]}"
        return repr(self.value)


def _as_library_array(lib: Library, x: Any) -> Any:
    return lib.jnp.asarray(x) if isinstance(x, np.ndarray) else x


def scope_for(lib: Library, program: Program, code: str) -> dict[str, Any]:
    """The globals a transformation's line runs in: the library, the program, the helpers."""
    scope = lib.namespace()
    scope["FLOAT_OUTPUTS"] = program.float_outputs()
    scope["ARGNUMS"] = tuple(range(len(program.inputs)))
    exec(compile(helpers_source(code), "<helpers>", "exec"), scope)
    scope["program"] = program.function(scope)
    return scope


def jax_side(code: str) -> str:
    """JAX's side of a line, under one ``jax.jit``: JAX's eager mode runs each primitive as a
    jitted program of its own, so this gives the same types and values, with one XLA compile
    in place of one per primitive (what makes the suite fast enough for CI)."""
    return f"jax.jit(lambda args, tangents, batch: {code})(args, tangents, batch)"


def run(lib: Library, program: Program, transform: Transform, inputs: Inputs) -> Outcome:
    """``transform`` of ``program`` with ``lib``, on ``inputs`` made the library's arrays."""
    try:
        scope = scope_for(lib, program, transform.code)
        scope["IN_AXES"] = inputs.in_axes
        scope["args"] = [_as_library_array(lib, x) for x in inputs.args]
        scope["tangents"] = [_as_library_array(lib, x) for x in inputs.tangents]
        scope["batch"] = [_as_library_array(lib, x) for x in inputs.batch]
        code = jax_side(transform.code) if lib.is_jax else transform.code
        return evaluate(code, scope, f"<{transform.name}>")
    except Exception as error:  # noqa: BLE001 -- an error is a result to compare
        return Outcome(error=error)


def evaluate(code: str, scope: dict[str, Any], name: str = "<code>") -> Outcome:
    """``code``'s value in ``scope``, or its error; with the user warnings it gave (JAX's
    warn of a float64 that x64 turns into float32, say, and ours must too)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            value = eval(compile(code, name, "eval"), scope)
            scope["jax"].block_until_ready(value)  # JAX's errors can come when it runs
            outcome = Outcome(value=value)
        except Exception as error:  # noqa: BLE001 -- an error is a result to compare
            outcome = Outcome(error=error)
    outcome.warned = tuple(sorted({w.category.__name__ for w in caught
                                   if issubclass(w.category, UserWarning)}))
    return outcome


# ------------------------------------------------------------------------------------------
# Comparing
# ------------------------------------------------------------------------------------------

# An error is compared by which of these it is an instance of: ours must be one of the same
# (NumPy's AxisError, which JAX raises for a bad axis, is both a ValueError and an IndexError).
# An error that is none of them (JAX's own ShardingTypeError, say) only asks that ours raises.
BROAD_ERRORS = (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError,
                NotImplementedError)


def broad_classes(error: Exception) -> tuple[type, ...]:
    return tuple(cls for cls in BROAD_ERRORS if isinstance(error, cls)) or (Exception,)


@dataclass(frozen=True)
class Tolerance:
    """How close float32 values must be: ``atol`` is scaled by the largest finite value JAX
    gives (at least 1), so a large result is compared relatively throughout."""

    rtol: float = 1e-4
    atol: float = 1e-5


def is_float0(dtype: Any) -> bool:
    return getattr(np.dtype(dtype), "names", None) == ("float0",) or str(dtype) == "float0"


def dtype_name(x: Any) -> str:
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return type(x).__name__
    return "float0" if is_float0(dtype) else str(np.dtype(dtype))


def spec_of(x: Any) -> tuple:
    """An array's partition spec as a tuple without trailing Nones (``()``: replicated)."""
    sharding = getattr(x, "sharding", None)
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return ()
    entries = [e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in tuple(spec)]
    entries = [None if e == () else e for e in entries]
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


def leaves_of(tree: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) pairs of tuples, lists and dicts; the path names the container types."""
    if isinstance(tree, tuple | list):
        kind = type(tree).__name__
        return [(f"{path}<{kind}>", len(tree))] + [
            pair for k, item in enumerate(tree) for pair in leaves_of(item, f"{path}[{k}]")]
    if isinstance(tree, dict):
        return [(f"{path}<dict>", sorted(tree))] + [
            pair for key in sorted(tree) for pair in leaves_of(tree[key], f"{path}[{key!r}]")]
    return [(path or "result", tree)]


def compare_leaf(path: str, got: Any, want: Any, tol: Tolerance, shardings: bool,
                 exact: Any = None) -> list[str]:
    if path.endswith(">"):  # a container: its length, or its keys
        return [] if got == want else [f"{path}: {got} vs JAX's {want}"]
    problems = []
    if isinstance(want, int | float | bool) or isinstance(got, int | float | bool):
        if type(got) is not type(want):
            return [f"{path}: {type(got).__name__} vs JAX's {type(want).__name__}"]
    if dtype_name(got) != dtype_name(want):
        problems.append(f"{path}: dtype {dtype_name(got)} vs JAX's {dtype_name(want)}")
    if getattr(got, "weak_type", False) != getattr(want, "weak_type", False):
        problems.append(f"{path}: weak_type {getattr(got, 'weak_type', False)} vs JAX's "
                        f"{getattr(want, 'weak_type', False)}")
    if np.shape(got) != np.shape(want):
        return problems + [f"{path}: shape {np.shape(got)} vs JAX's {np.shape(want)}"]
    if shardings and spec_of(got) != spec_of(want):
        problems.append(f"{path}: sharding P{spec_of(got)} vs JAX's P{spec_of(want)}")
    if not is_float0(getattr(want, "dtype", np.float32)):
        problems += compare_values(path, np.asarray(got), np.asarray(want), tol,
                                   None if exact is None else np.asarray(exact))
    return problems


def compare_values(path: str, got: np.ndarray, want: np.ndarray, tol: Tolerance,
                   exact: np.ndarray | None = None) -> list[str]:
    """Float values agree when they are close, or (given ``exact``, JAX's float64 answer)
    when ours is at most twice as far from the exact answer as JAX's float32 one: where a
    program loses precision (a second derivative through a near-cancellation, say), the two
    roundings may differ by more than any fixed tolerance, and neither is the wrong value."""
    if want.dtype.kind not in "fc" or got.dtype.kind not in "fc":
        if np.array_equal(got, want):
            return []
        return [f"{path}: values differ at {int(np.sum(got != want))} of {want.size}"]
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    close = np.isclose(got, want, rtol=tol.rtol, atol=tol.atol * scale, equal_nan=True)
    if exact is not None and exact.shape == want.shape:
        exact = exact.astype(np.float64)
        close |= np.abs(got - exact) <= 2 * np.abs(want.astype(np.float64) - exact)
    if close.all():
        return []
    worst = np.unravel_index(np.argmax(np.where(close, 0, np.abs(got - want))), want.shape)
    return [f"{path}: values differ at {int((~close).sum())} of {want.size} (worst at "
            f"{tuple(int(k) for k in worst)}: {got[worst]!r} vs JAX's {want[worst]!r})"]


def documented(got: Outcome, want: Outcome) -> str | None:
    """The entry of the course's "Differences from JAX" pages (course/differences/) that
    explains this difference, if one does (a random program can meet these; each is asserted
    in test_documented_differences)."""
    # JAX stops at the multiplying scatter; ours goes on (and may stop at a later error,
    # a while_loop's under grad, say, which JAX would have met next)
    if isinstance(want.error, NotImplementedError) and "scatter_mul gradients" in str(
            want.error):
        return "`.at[].mul` is differentiated without `unique_indices`"
    # reverse mode through a while_loop, which JAX refuses too unless every tangent of the
    # carry is a symbolic zero (then it differentiates nothing): the case here
    if ("Reverse-mode differentiation does not work for lax.while_loop" in str(got.error)
            and want.error is None):
        return "A value without a derivative is still traced"
    # JAX refuses to broadcast a split update into an unsplit part of its target; ours
    # reshards it (a type error in JAX's message: a split input type, an unsplit request)
    found = re.search(r"Incompatible types for broadcasting: input type=(\S+) and requested "
                      r"type=(\S+)", str(want.error)) if want.error else None
    if found and got.error is None and "@" in found[1] and "@" not in found[2]:
        return "An update split unlike its target is resharded"
    if (want.error is not None and got.error is None
            and "could not be resolved unambiguously" in str(want.error)):
        return "A scatter JAX finds ambiguous takes its operand's layout"
    return None


def compare(got: Outcome, want: Outcome, tol: Tolerance = Tolerance(),
            shardings: bool = False, exact: Outcome | None = None) -> list[str]:
    """What differs between our outcome and JAX's: empty when they agree (or differ only as
    ``documented``). ``exact``, JAX's outcome in float64, judges float values that are not
    close (``compare_values``)."""
    if documented(got, want):
        return []
    if bool(got.warned) != bool(want.warned):
        return [f"ours warned {list(got.warned)}, JAX's {list(want.warned)}"]
    if want.error is not None or got.error is not None:
        if want.error is None:
            return [f"ours {got}, JAX's did not raise"]
        if got.error is None:
            return [f"JAX's {want}, ours did not raise"]
        expected = broad_classes(want.error)
        if shardings and type(got.error).__name__ == "ShardingTypeError":
            return []  # JAX's sharding errors come as several classes, none of them ours
        if not isinstance(got.error, expected):
            names = " or ".join(cls.__name__ for cls in expected)
            return [f"ours raised {type(got.error).__name__}, JAX's raised "
                    f"{type(want.error).__name__} (a {names})"]
        return []
    got_leaves, want_leaves = leaves_of(got.value), leaves_of(want.value)
    if [p for p, _ in got_leaves] != [p for p, _ in want_leaves]:
        return [f"structure {[p for p, _ in got_leaves]} vs JAX's {[p for p, _ in want_leaves]}"]
    exact_leaves = dict(leaves_of(exact.value)) if exact and exact.error is None else {}
    return [problem for (path, g), (_, w) in zip(got_leaves, want_leaves)
            for problem in compare_leaf(path, g, w, tol, shardings, exact_leaves.get(path))]


# ------------------------------------------------------------------------------------------
# Mismatches and their reproducers
# ------------------------------------------------------------------------------------------


@dataclass
class Mismatch:
    """A program, a transformation, and how our result differs from JAX's."""

    program: Program
    transform: Transform
    inputs: Inputs
    problems: list[str]
    ours: Outcome
    theirs: Outcome
    setup: str = ""  # lines that place the arguments (stage 4)
    stage: int = 4

    def reproducer(self) -> str:
        """A script that runs the case with JAX and with ours, and what each gave."""
        lines = ["import numpy as np",
                 "import jax, jax.numpy as jnp; from jax import lax",
                 f"# ours: import {STAGES[self.stage]} as jax, "
                 f"{STAGES[self.stage]}.numpy as jnp; from {STAGES[self.stage]} import lax",
                 ]
        helpers = helpers_source(self.transform.code)
        constants = {"FLOAT_OUTPUTS": self.program.float_outputs(),
                     "ARGNUMS": tuple(range(len(self.program.inputs))),
                     "IN_AXES": self.inputs.in_axes}
        lines += [f"{name} = {value}" for name, value in constants.items()
                  if name in self.transform.code + helpers]
        if helpers:
            lines.append(helpers.rstrip("\n"))
        lines += ["", self.program.source().rstrip("\n")]
        for name in ("args", "tangents", "batch"):
            if name in self.transform.code:
                values = getattr(self.inputs, name)
                lines.append(f"{name} = [{', '.join(literal(v) for v in values)}]")
        lines += [self.setup.rstrip("\n")] if self.setup else []
        lines += [f"print({self.transform.code})", "",
                  *(f"# {p}" for p in self.problems),
                  f"# ours:  {str(self.ours)[:1500]}".replace("\n", "\n#        "),
                  f"# JAX's: {str(self.theirs)[:1500]}".replace("\n", "\n#        ")]
        return "\n".join(lines)


def literal(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"np.array({x.tolist()!r}, np.float32)"
    return repr(x)


_JAX_OUTCOMES: dict[tuple[str, str, str], Outcome] = {}


def jax_outcome(program: Program, transform: Transform, inputs: Inputs) -> Outcome:
    """JAX's outcome, computed once per program and transformation: the stages' tests ask for
    the same ones."""
    key = (program.source(), repr(program.args), transform.name)
    if key not in _JAX_OUTCOMES:
        _JAX_OUTCOMES[key] = run(real_jax(), program, transform, inputs)
    return _JAX_OUTCOMES[key]


def exact_outcome(program: Program, transform: Transform, inputs: Inputs) -> Outcome:
    """JAX's outcome with x64 on and the float inputs in float64: the exact answer, as far
    as float32 results can tell."""
    import jax

    def wide(values: list[Any]) -> list[Any]:
        return [v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                else v for v in values]
    with jax.enable_x64(True):
        return run(real_jax(), program, transform,
                   Inputs(wide(inputs.args), wide(inputs.tangents), wide(inputs.batch),
                          inputs.in_axes))


def check(program: Program, transform: Transform, stage: int = 4,
          tol: Tolerance = Tolerance()) -> Mismatch | None:
    """Runs ``transform`` of ``program`` with stage ``stage`` and with JAX; the mismatch, if
    any."""
    inputs = inputs_for(program)
    got = run(ours(stage), program, transform, inputs)
    want = jax_outcome(program, transform, inputs)
    problems = compare(got, want, tol)
    if any("values differ" in problem for problem in problems):
        problems = compare(got, want, tol, exact=exact_outcome(program, transform, inputs))
    if not problems:
        return None
    return Mismatch(program, transform, inputs, problems, got, want, stage=stage)


def shrink(mismatch: Mismatch, tol: Tolerance = Tolerance()) -> Mismatch:
    """The smallest program the mismatch is still seen in: the first value that differs,
    with only the lines it needs. Each candidate is one of the program's values as its only
    output, in program order."""
    program = mismatch.program
    for line in program.lines:
        candidate = program.returning((line.target.name,))
        if line.target.kind != "f" and mismatch.transform.name in DIFFERENTIATES:
            continue
        found = check(candidate, mismatch.transform, mismatch.stage, tol)
        if found is not None:
            return found
    return mismatch


def assert_leaves_as_jax(got: Any, expected: Any, rtol: float = 1e-6) -> None:
    """Two results, leaf by leaf: the same dtypes, and values within ``rtol``."""
    import jax
    got, expected = jax.tree.leaves(got), jax.tree.leaves(expected)
    assert [np.asarray(g).dtype for g in got] == [np.asarray(e).dtype for e in expected]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol)


def assert_call_as_jax(cases: Callable[[Any], dict], name: str, how: str, rtol: float = 1e-6,
                       atol: float = 0.0, weak_types: bool = True) -> None:
    """``cases(library)[name]`` is ``(function, *arguments)`` written with that library: run
    it eagerly or under ``jit`` (``how``) with stage 4 and with JAX, and compare the results
    leaf by leaf: dtypes, weak types (unless ``weak_types`` is False), shapes and values."""
    import jax

    import stage4_sharding

    def run(library):
        fun, *args = cases(library)[name]
        out = (library.jit(fun) if how == "jit" else fun)(*args)
        return [(str(np.asarray(leaf).dtype), weak_types and getattr(leaf, "weak_type", False),
                 np.asarray(leaf)) for leaf in jax.tree.leaves(out)]

    got, expected = run(stage4_sharding), run(jax)
    assert [(d, w, v.shape) for d, w, v in got] == [(d, w, v.shape) for d, w, v in expected]
    for (*_, g), (*_, e) in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def assert_raises_as_jax(cases: Callable[[Any], dict], name: str) -> None:
    """``cases(library)[name]`` is ``(error class, call)`` written with that library: the call
    raises that class with JAX and with stage 4."""
    import jax
    import pytest

    import stage4_sharding
    for library in (jax, stage4_sharding):
        error, call = cases(library)[name]
        with pytest.raises(error):
            call()
