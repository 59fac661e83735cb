"""Seeded random programs, written once as Python source over a ``jnp``/``lax`` namespace.

A program is text: a ``def program(x0, x1, ...)`` whose body is one assignment per line
(``v3 = jnp.tanh(v1) * v2``) and whose names ``jnp`` and ``lax`` are not imported but looked
up in the globals it is executed with. Executed with ``stage4_sharding.numpy`` it is our
program; with ``jax.numpy`` it is JAX's. Because it is text, a mismatch prints as a script a
reader can paste, and shrinking it is deleting lines.

The generator tracks each value's shape and kind (``f`` float32 array, ``i`` int32 array, ``b``
bool array, ``c`` complex64 array, ``p`` a Python float argument) so every line it writes is
valid in JAX. It draws from ``numpy.random.Generator`` only, so a seed names a program
exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The kinds of line a program may hold. Reads and updates out of bounds, and complex values,
# are apart: the suite runs each in tests of its own (``out_of_bounds``, ``COMPLEX``).
FEATURES = ("elementwise", "broadcasting", "reductions", "shapes", "indexing", "updates",
            "matmul", "integers", "control")
COMPLEX = "complex"


@dataclass(frozen=True)
class Value:
    """A value of the program: its name, shape and kind (``f``, ``i``, ``b``, ``c`` or ``p``)."""

    name: str
    shape: tuple[int, ...]
    kind: str


@dataclass(frozen=True)
class Line:
    """``target = expr``; ``uses`` are the names ``expr`` reads."""

    target: Value
    expr: str
    uses: tuple[str, ...]
    feature: str = ""  # the kind of line (FEATURES), for the tests of coverage


@dataclass
class Program:
    """A random program, its inputs, and what the transformations need beside them."""

    inputs: list[Value]
    args: list[Any]                      # NumPy float32 arrays, or Python floats for ``p``
    lines: list[Line] = field(default_factory=list)
    outputs: tuple[str, ...] = ()
    seed: int = 0

    def source(self) -> str:
        """The program as a Python function definition."""
        params = ", ".join(v.name for v in self.inputs)
        body = [f"    {line.target.name} = {line.expr}" for line in self.lines]
        outs = ", ".join(self.outputs)
        result = outs if len(self.outputs) == 1 else f"({outs},)"
        return "\n".join([f"def program({params}):", *body, f"    return {result}"]) + "\n"

    def function(self, namespace: dict[str, Any]) -> Callable:
        """The program, executed with ``namespace`` as its globals (``jnp``, ``lax``)."""
        scope = dict(namespace)
        exec(compile(self.source(), f"<program {self.seed}>", "exec"), scope)
        return scope["program"]

    def value(self, name: str) -> Value:
        for v in self.inputs + [line.target for line in self.lines]:
            if v.name == name:
                return v
        raise KeyError(name)

    def float_outputs(self) -> tuple[int, ...]:
        """The positions of the outputs that are float arrays (what gradients flow into)."""
        return tuple(k for k, name in enumerate(self.outputs) if self.value(name).kind == "f")

    def returning(self, outputs: Sequence[str]) -> Program:
        """This program with other outputs, and only the lines they need."""
        needed, kept = set(outputs), []
        for line in reversed(self.lines):
            if line.target.name in needed:
                kept.append(line)
                needed.update(line.uses)
        kept.reverse()
        return Program(self.inputs, self.args, kept, tuple(outputs), self.seed)


def written(args: dict[str, Any], *lines: str) -> Program:
    """A program written out rather than drawn: ``args`` by name (NumPy arrays, or Python
    floats), then ``"name = expr"`` lines; the last line's name is the output."""
    inputs = [Value(name, np.shape(x), "p" if isinstance(x, float) else "f")
              for name, x in args.items()]
    body = []
    for text in lines:
        name, expr = (part.strip() for part in text.split("=", 1))
        body.append(Line(Value(name, (), "f"), expr, ()))
    return Program(inputs, list(args.values()), body, (body[-1].target.name,))


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------


def draw_shape(rng: np.random.Generator, sides: Sequence[int], max_dims: int = 3
               ) -> tuple[int, ...]:
    return tuple(int(rng.choice(sides)) for _ in range(rng.integers(0, max_dims + 1)))


def broadcastable_to(rng: np.random.Generator, base: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``base``: some leading dims dropped, some dims set to 1."""
    shape = base[rng.integers(0, len(base) + 1):] if base and rng.random() < 0.3 else base
    return tuple(1 if rng.random() < 0.2 else d for d in shape)


def draw_array(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values in [-2, 2] with a few exact small integers and repeats, where ties live."""
    x = rng.uniform(-2.0, 2.0, size=shape).astype(np.float32)
    if x.size > 1 and rng.random() < 0.3:
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size)] = flat[rng.integers(0, flat.size)]
    return x


def draw_inputs(rng: np.random.Generator, sides: Sequence[int]) -> tuple[list[Value], list]:
    base = draw_shape(rng, sides)
    inputs, args = [], []
    for k in range(rng.integers(1, 4)):
        if k > 0 and rng.random() < 0.15:
            inputs.append(Value(f"x{k}", (), "p"))
            args.append(float(np.float32(rng.uniform(-2.0, 2.0))))
            continue
        shape = broadcastable_to(rng, base) if k > 0 else base
        inputs.append(Value(f"x{k}", shape, "f"))
        args.append(draw_array(rng, shape))
    return inputs, args


# ------------------------------------------------------------------------------------------
# Lines, one drawer per feature. A drawer returns (expr, shape, kind, uses) or None when the
# values so far do not fit it.
# ------------------------------------------------------------------------------------------

Drawn = tuple[str, tuple[int, ...], str, tuple[Value, ...]] | None

UNARY = ["jnp.tanh({a})", "jnp.sin({a})", "jnp.cos({a})", "{a} * 0.5 + 1.0",
         "jnp.exp(jnp.tanh({a}))", "jnp.log1p({a} * {a})", "jnp.sqrt({a} * {a} + 1.0)",
         "jnp.abs({a})", "jnp.maximum({a}, 0.0)", "-{a}", "{a} ** 2", "jnp.square({a})",
         "lax.logistic({a})", "jnp.floor({a} + 0.25)", "jnp.ceil({a} - 0.25)", "jnp.sign({a})",
         "jnp.clip({a}, -0.5, 0.5)", "{a} / (1.0 + {a} * {a})",
         "jnp.where({a} > 0, {a}, 0.1 * {a})", "jnp.expm1(jnp.tanh({a}))",
         "jnp.reciprocal(1.0 + {a} * {a})", "2 * {a} - 1", "lax.stop_gradient({a}) * {a}",
         "jnp.arctan2({a}, 1.5)", "jnp.power(jnp.abs({a}) + 1.0, 1.5)"]
BINARY = ["{a} + {b}", "{a} * {b}", "{a} - {b}", "jnp.maximum({a}, {b})",
          "jnp.minimum({a}, {b})", "jnp.where({a} > {b}, {a}, {b})", "{a} / (1.0 + {b} * {b})",
          "jnp.arctan2({a}, {b} + 3.0)", "jnp.add({a}, {b})", "jnp.multiply({b}, {a})"]
PYTHON_FLOAT = ["{a} * {p}", "{a} + {p}", "jnp.sin({p}) * {a}", "jnp.maximum({a}, {p})",
                "jnp.asarray({p}) * 2.0", "jnp.tanh({p})"]


def _floats(vals: list[Value], min_dims: int = 0) -> list[Value]:
    return [v for v in vals if v.kind == "f" and len(v.shape) >= min_dims]


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[rng.integers(0, len(options))]


def _recent(rng: np.random.Generator, candidates: Sequence[Value]) -> Value:
    """A value, most often the newest: programs become chains rather than many dead ends."""
    return candidates[-1] if rng.random() < 0.5 else _pick(rng, candidates)


def draw_elementwise(rng, vals) -> Drawn:
    pythons = [v for v in vals if v.kind == "p"]
    a = _recent(rng, _floats(vals))
    if pythons and rng.random() < 0.3:
        p = _pick(rng, pythons)
        template = _pick(rng, PYTHON_FLOAT)
        shape = () if "{a}" not in template else a.shape
        uses = (p,) if "{a}" not in template else (a, p)
        return template.format(a=a.name, p=p.name), shape, "f", uses
    return _pick(rng, UNARY).format(a=a.name), a.shape, "f", (a,)


def broadcast_shapes(s: tuple[int, ...], t: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(s, t))
    except ValueError:
        return None


def draw_broadcasting(rng, vals) -> Drawn:
    a = _recent(rng, _floats(vals))
    partners = [v for v in _floats(vals) if broadcast_shapes(a.shape, v.shape) is not None]
    b = _pick(rng, partners)
    shape = broadcast_shapes(a.shape, b.shape)
    if math.prod(shape) > 256:
        return None
    return _pick(rng, BINARY).format(a=a.name, b=b.name), shape, "f", (a, b)


REDUCTIONS = ["jnp.sum", "jnp.max", "jnp.min", "jnp.mean", "jnp.prod", "jnp.var", "jnp.amax"]


def draw_reductions(rng, vals) -> Drawn:
    candidates = _floats(vals, min_dims=1)
    if not candidates:
        return None
    a = _recent(rng, candidates)
    axis = int(rng.integers(-len(a.shape), len(a.shape)))
    keep = bool(rng.random() < 0.3)
    kept = tuple(1 if k == axis % len(a.shape) else d for k, d in enumerate(a.shape))
    shape = kept if keep else tuple(d for k, d in enumerate(a.shape) if k != axis % len(a.shape))
    choice = rng.integers(0, 5)
    if choice == 0:
        return f"jnp.sum({a.name})", (), "f", (a,)
    if choice == 1:
        name = _pick(rng, ["jnp.argmax", "jnp.argmin"])
        return f"{name}({a.name}, axis={axis})", _drop(a.shape, axis), "i", (a,)
    if choice == 2:
        name = _pick(rng, ["all", "any"])
        return f"jnp.{name}({a.name} > 0, axis={axis})", _drop(a.shape, axis), "b", (a,)
    fn = _pick(rng, REDUCTIONS)
    return f"{fn}({a.name}, axis={axis}, keepdims={keep})", shape, "f", (a,)


def _drop(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return tuple(d for k, d in enumerate(shape) if k != axis % len(shape))


def factorizations(size: int) -> list[tuple[int, ...]]:
    """Shapes of ``size`` elements with up to three dims."""
    found = [(size,)]
    for a in range(1, size + 1):
        if size % a == 0:
            found.append((a, size // a))
            found += [(a, b, size // (a * b)) for b in range(1, size // a + 1)
                      if (size // a) % b == 0]
    return found


def draw_shapes(rng, vals) -> Drawn:
    """Transpose, reshape, expand/squeeze, rev and strided slices, concatenate, stack,
    broadcast_to, tile, pad."""
    a = _recent(rng, _floats(vals))
    rank = len(a.shape)
    if rank == 0:
        return f"jnp.expand_dims({a.name}, 0)", (1,), "f", (a,)
    drawers = [_transpose_like, _reshape_like, _expand_or_squeeze, _reverse_or_slice,
               _join, _broadcast_or_tile, _pad]
    return _pick(rng, drawers)(rng, a, vals)


def _transpose_like(rng, a: Value, vals) -> Drawn:
    rank = len(a.shape)
    perm = tuple(int(k) for k in rng.permutation(rank))
    choice = rng.integers(0, 3)
    if choice == 0:
        return f"{a.name}.T", a.shape[::-1], "f", (a,)
    if choice == 1:
        shape = tuple(a.shape[k] for k in perm)
        return f"jnp.transpose({a.name}, {perm})", shape, "f", (a,)
    i, j = (int(k) for k in rng.integers(0, rank, size=2))
    shape = list(a.shape)
    if rng.random() < 0.5:
        shape[i], shape[j] = shape[j], shape[i]
        return f"jnp.swapaxes({a.name}, {i}, {j})", tuple(shape), "f", (a,)
    shape.insert(j, shape.pop(i))
    return f"jnp.moveaxis({a.name}, {i}, {j})", tuple(shape), "f", (a,)


def _reshape_like(rng, a: Value, vals) -> Drawn:
    size = math.prod(a.shape)
    if rng.random() < 0.3:
        return f"jnp.ravel({a.name})", (size,), "f", (a,)
    new = _pick(rng, factorizations(size))
    spelled = list(new)
    if rng.random() < 0.3:
        spelled[rng.integers(0, len(new))] = -1
    return f"{a.name}.reshape({tuple(spelled)})", new, "f", (a,)


def _expand_or_squeeze(rng, a: Value, vals) -> Drawn:
    ones = [k for k, d in enumerate(a.shape) if d == 1]
    if ones and rng.random() < 0.6:
        k = int(_pick(rng, ones))
        return f"jnp.squeeze({a.name}, axis={k})", _drop(a.shape, k), "f", (a,)
    k = int(rng.integers(-len(a.shape) - 1, len(a.shape) + 1))
    shape = list(a.shape)
    shape.insert(k % (len(a.shape) + 1), 1)
    if rng.random() < 0.3:
        return f"{a.name}[None]", (1, *a.shape), "f", (a,)
    return f"jnp.expand_dims({a.name}, {k})", tuple(shape), "f", (a,)


def _reverse_or_slice(rng, a: Value, vals) -> Drawn:
    rank = len(a.shape)
    k = int(rng.integers(0, rank))
    choice = rng.integers(0, 4)
    if choice == 0:
        return f"jnp.flip({a.name}, {k})", a.shape, "f", (a,)
    if choice == 1:
        return f"lax.rev({a.name}, ({k},))", a.shape, "f", (a,)
    start = int(rng.integers(0, a.shape[k]))
    step = int(_pick(rng, [1, 2, -1, -2]))
    stop = None if rng.random() < 0.5 else int(rng.integers(-a.shape[k], a.shape[k] + 2))
    picked = range(a.shape[k])[slice(start if step > 0 else None, stop, step)]
    if len(picked) == 0:
        return None
    index = ", ".join([":"] * k + [f"{start if step > 0 else ''}:{'' if stop is None else stop}"
                                   f":{step}"])
    shape = a.shape[:k] + (len(picked),) + a.shape[k + 1:]
    return f"{a.name}[{index}]", shape, "f", (a,)


def _join(rng, a: Value, vals) -> Drawn:
    k = int(rng.integers(0, len(a.shape)))
    alike = [v for v in _floats(vals) if len(v.shape) == len(a.shape)
             and all(d == e for j, (d, e) in enumerate(zip(v.shape, a.shape)) if j != k)]
    b = _pick(rng, alike)
    if rng.random() < 0.5:
        shape = a.shape[:k] + (a.shape[k] + b.shape[k],) + a.shape[k + 1:]
        return f"jnp.concatenate([{a.name}, {b.name}], axis={k})", shape, "f", (a, b)
    b = _pick(rng, [v for v in alike if v.shape == a.shape])
    shape = a.shape[:k] + (2,) + a.shape[k:]
    return f"jnp.stack([{a.name}, {b.name}], axis={k})", shape, "f", (a, b)


def _broadcast_or_tile(rng, a: Value, vals) -> Drawn:
    if rng.random() < 0.5:
        shape = (2,) + tuple(3 if d == 1 else d for d in a.shape)
        return f"jnp.broadcast_to({a.name}, {shape})", shape, "f", (a,)
    reps = tuple(int(rng.integers(1, 3)) for _ in a.shape)
    shape = tuple(d * r for d, r in zip(a.shape, reps))
    return f"jnp.tile({a.name}, {reps})", shape, "f", (a,)


def _pad(rng, a: Value, vals) -> Drawn:
    config = [tuple(int(n) for n in rng.integers(0, 2, size=3)) for _ in a.shape]
    shape = tuple(lo + hi + d + max(d - 1, 0) * inner
                  for d, (lo, hi, inner) in zip(a.shape, config))
    return f"lax.pad({a.name}, 0.0, {config})", shape, "f", (a,)


def draw_indexing(rng, vals, out_of_bounds: bool = False) -> Drawn:
    """Reads: a Python int, int arrays (negative too), a column, ``jnp.take``."""
    candidates = _floats(vals, min_dims=1)
    if not candidates:
        return None
    a = _recent(rng, candidates)
    n = a.shape[0]
    choice = rng.integers(0, 4)
    if choice == 0:
        i = _index(rng, n, out_of_bounds)
        return f"{a.name}[{i}]", a.shape[1:], "f", (a,)
    if choice == 1:
        picks = [_index(rng, n, out_of_bounds) for _ in range(rng.integers(1, 4))]
        return f"{a.name}[jnp.array({picks})]", (len(picks), *a.shape[1:]), "f", (a,)
    if choice == 2 and len(a.shape) >= 2:
        i = _index(rng, a.shape[1], out_of_bounds)
        return f"{a.name}[:, {i}]", a.shape[:1] + a.shape[2:], "f", (a,)
    k = int(rng.integers(0, len(a.shape)))
    picks = [_index(rng, a.shape[k], out_of_bounds) for _ in range(rng.integers(1, 4))]
    shape = a.shape[:k] + (len(picks),) + a.shape[k + 1:]
    return f"jnp.take({a.name}, jnp.array({picks}), axis={k})", shape, "f", (a,)


def _index(rng, n: int, out_of_bounds: bool) -> int:
    if out_of_bounds and rng.random() < 0.5:
        return int(_pick(rng, [n, n + 3, -n - 1, -n - 5]))
    return int(rng.integers(-n, n))


def draw_updates(rng, vals, out_of_bounds: bool = False) -> Drawn:
    """``x.at[i].set/add/mul/min/max(...)`` with a Python int, an int array, or a column."""
    candidates = _floats(vals, min_dims=1)
    if not candidates:
        return None
    a = _recent(rng, candidates)
    n = a.shape[0]
    method = _pick(rng, ["set", "add", "mul", "min", "max"])
    if rng.random() < 0.5:
        index = _index(rng, n, out_of_bounds)
        slot = a.shape[1:]
    else:
        count = int(rng.integers(1, min(n, 3) + 1))
        picks = [int(k) for k in rng.choice(np.arange(-n, 0), size=count, replace=False)]
        picks = [k + n * int(rng.integers(0, 2)) for k in picks]  # the same row, either sign
        if method != "set" and rng.random() < 0.3:
            picks.append(picks[0])  # repeated: add/mul/min/max combine, set would be a race
        if out_of_bounds:
            picks.append(_index(rng, n, True))
        index, slot = f"jnp.array({picks})", (len(picks), *a.shape[1:])
    fits = [v for v in _floats(vals) if broadcast_shapes(v.shape, slot) == slot]
    update = _pick(rng, fits).name if fits and rng.random() < 0.7 else "0.5"
    uses = (a,) + tuple(v for v in fits if v.name == update)
    return f"{a.name}.at[{index}].{method}({update})", a.shape, "f", uses


def draw_matmul(rng, vals) -> Drawn:
    """``@``, ``dot``, ``matmul``, ``einsum``, ``tensordot``, ``inner``, ``outer``, ``vdot``."""
    a = _pick(rng, _floats(vals, min_dims=1) or [None])
    if a is None:
        return None
    partners = [v for v in _floats(vals, min_dims=1)
                if v.shape[0 if len(v.shape) == 1 else -2] == a.shape[-1]]
    if partners and rng.random() < 0.8:
        b = _pick(rng, partners)
        out = _matmul_shape(a.shape, b.shape)
        if out is None or math.prod(out) > 256:
            return None
        op = _pick(rng, ["{a} @ {b}", "jnp.matmul({a}, {b})"]
                   + (["jnp.dot({a}, {b})"] if len(b.shape) <= 2 else []))
        return f"jnp.tanh({op.format(a=a.name, b=b.name)}) * 0.5", out, "f", (a, b)
    return _self_product(rng, a)


def _matmul_shape(s: tuple[int, ...], t: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return np.matmul(np.zeros(s), np.zeros(t)).shape
    except ValueError:
        return None


def _self_product(rng, a: Value) -> Drawn:
    rank, name = len(a.shape), a.name
    if rank == 1:
        choice = _pick(rng, [(f"jnp.vdot({name}, {name})", ()),
                             (f"jnp.inner({name}, {name})", ()),
                             (f"jnp.outer({name}, {name} * 0.5)", (a.shape[0],) * 2)])
        return choice[0], choice[1], "f", (a,)
    if rank == 2 and rng.random() < 0.5:
        n, m = a.shape
        return f"jnp.einsum('ij,kj->ik', {name}, {name}) * 0.5", (n, n), "f", (a,)
    if rank == 2 and rng.random() < 0.5:
        shape = (a.shape[0], a.shape[0])
        return f"jnp.tensordot({name}, {name}.T, axes=1) * 0.5", shape, "f", (a,)
    shape = a.shape[:-1] + (a.shape[-2],)
    return f"jnp.tanh({name} @ jnp.swapaxes({name}, -1, -2))", shape, "f", (a,)


# Steps (floor, casts) sit away from the values that saturating functions hit exactly
# (0, +-0.5, +-1: tanh and clip give them in one library and an ulp less in the other), so a
# last-bit difference cannot become a different integer. The casts include XLA's edge values:
# out of int32's range (saturating) and NaN (zero).
INT_FROM_FLOAT = ["jnp.floor({a} * 3.0 + 0.25).astype(jnp.int32)", "({a} > 0).astype(jnp.int32)",
                  "jnp.floor({a} * 2.0 + 0.5).astype(jnp.int32)",
                  "({a} * 3e9).astype(jnp.int32) // 1000000000",
                  "jnp.sqrt({a} - 0.25).astype(jnp.int32)"]
INT_OPS = ["{i} * 2 + 1", "{i} // 2", "{i} % 3", "jnp.maximum({i}, 0)", "-{i}", "jnp.abs({i})",
           "{i} ** 2", "jnp.bitwise_and({i}, 3)", "jnp.left_shift({i}, 1)", "jnp.sign({i})",
           "jnp.clip({i}, -1, 2)", "{i} - jnp.sum({i})",
           "{i} // ({i} - 1)", "{i} % jnp.abs({i})"]  # by zero where i is 1 or 0
# Integers enter float math clipped: a chain of integer steps can grow them without bound
# (wrapping, as XLA and NumPy both do), and sin of a huge float is noise in either library.
SMALL = "jnp.clip({i}, -8, 8)"
FLOAT_FROM_INT = [f"{{a}} * {SMALL}", "jnp.where({i} > 0, {a}, -{a})",
                  f"{SMALL}.astype(jnp.float32) * 0.5", f"{SMALL} * 0.5 + {{a}}",
                  f"{SMALL} / 2 + {{a}}", "jnp.where({b}, {a}, 1.0 - {a})", "{a} * {b}"]


def draw_integers(rng, vals) -> Drawn:
    """Casts to int32 and back, integer arithmetic, comparisons and bool masks."""
    ints = [v for v in vals if v.kind == "i"]
    bools = [v for v in vals if v.kind == "b"]
    a = _recent(rng, _floats(vals))
    choice = rng.integers(0, 4)
    if choice == 0 or not ints:
        if rng.random() < 0.3:
            return f"{a.name} > 0.25", a.shape, "b", (a,)
        return _pick(rng, INT_FROM_FLOAT).format(a=a.name), a.shape, "i", (a,)
    i = _pick(rng, ints)
    if choice == 1:
        return _pick(rng, INT_OPS).format(i=i.name), i.shape, "i", (i,)
    b = _pick(rng, bools) if bools else None
    partners = [v for v in _floats(vals) if broadcast_shapes(v.shape, i.shape) is not None
                and (b is None or broadcast_shapes(v.shape, b.shape) is not None)]
    a = _pick(rng, partners) if partners else None
    if a is None:
        return None
    templates = FLOAT_FROM_INT if b is not None else FLOAT_FROM_INT[:5]
    template = _pick(rng, templates)
    used = [v for v, key in ((a, "{a}"), (i, "{i}"), (b, "{b}")) if key in template]
    shape = ()
    for v in used:
        shape = broadcast_shapes(shape, v.shape)
    expr = template.format(a=a.name, i=i.name, b=b.name if b else "")
    return expr, shape, "f", tuple(used)


def draw_control(rng, vals) -> Drawn:
    """``cond``, ``switch``, ``fori_loop``, ``scan`` and ``while_loop``."""
    a = _recent(rng, _floats(vals))
    n = a.name
    options = [
        f"lax.cond(jnp.sum({n}) > 0, lambda t: jnp.sin(t), lambda t: t * 2.0, {n})",
        f"lax.cond(jnp.max({n}) > 1.0, lambda t, u: t * u, lambda t, u: t - u, {n}, 0.5)",
        f"lax.switch(jnp.argmax(jnp.ravel({n})) % 3, "
        f"[jnp.sin, jnp.cos, lambda t: t * 0.5], {n})",
        f"lax.fori_loop(0, 3, lambda i, c: c * 0.5 + jnp.sin(c), {n})",
        f"lax.fori_loop(1, 4, lambda i, c: c + i * 0.1 * jnp.cos(c), {n})",
        f"lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1]) * 1.5), "
        f"(0, {n}))[1]",
    ]
    if a.shape:
        row = f"jnp.zeros_like({n}[0])"
        options += [
            f"lax.scan(lambda c, x: (c * 0.5 + x, c * x), {row}, {n})[1]",
            f"lax.scan(lambda c, x: (jnp.tanh(c + x), c), {row}, {n}, reverse=True)[0]",
        ]
    expr = _pick(rng, options)
    shape = a.shape[1:] if "reverse=True)[0]" in expr else a.shape
    return expr, shape, "f", (a,)


# Complex values (kind ``c``, complex64): made from floats, computed with, and brought back
# to floats, as a program with phases, Fourier transforms or unitary matrices does. Gradients
# pass through them both holomorphically (products, exp, sin) and not (conj, abs, real).
# Offsets keep abs and angle away from 0 and from the negative real axis, where the two
# libraries may round to either side of a kink or a branch cut.
TO_COMPLEX = ["lax.complex({a}, jnp.cos({a}))", "{a} * (1.0 + 0.5j)", "jnp.exp(1j * {a})",
              "{a}.astype(jnp.complex64) - 0.5j"]
COMPLEX_OPS = ["{c} * {c}", "jnp.exp({c} * 0.5)", "jnp.sin({c})", "jnp.conj({c})",
               "{c} / (1.5 + {c} * jnp.conj({c}))", "jnp.tanh({c} * 0.5)",
               "jnp.log({c} * jnp.conj({c}) + 1.0)", "jnp.sqrt({c} * 0.5j + 3.0)",
               "{c} * 0.5 - 1j", "jnp.cos({c}) * {c}"]
COMPLEX_OPS_1D = ["jnp.cumsum({c}, axis=-1)", "jnp.fft.fft({c}, axis=-1)",
                  "jnp.fft.ifft({c} * {c}, axis=-1)", "jnp.flip({c}, axis=-1) * 1j"]
FROM_COMPLEX = ["jnp.real({c})", "jnp.imag({c})", "jnp.abs({c} + 2.5)",
                "jnp.angle({c} + 3.5)", "jnp.real({c} * jnp.conj({c}))",
                "jnp.real({c}) * jnp.imag({c})"]


def draw_complex(rng, vals) -> Drawn:
    """A complex value from a float, a complex op (elementwise, a cumulative sum, an FFT, a
    reduction, a product with a float or with a conjugate transpose), or a float from a
    complex value."""
    complexes = [v for v in vals if v.kind == "c"]
    if not complexes or rng.random() < 0.25:
        a = _recent(rng, _floats(vals))
        return _pick(rng, TO_COMPLEX).format(a=a.name), a.shape, "c", (a,)
    c = _recent(rng, complexes)
    choice = rng.integers(0, 6)
    if choice <= 1:
        return _pick(rng, FROM_COMPLEX).format(c=c.name), c.shape, "f", (c,)
    if choice == 2 and c.shape:
        if rng.random() < 0.5:
            return _pick(rng, COMPLEX_OPS_1D).format(c=c.name), c.shape, "c", (c,)
        axis = int(rng.integers(0, len(c.shape)))
        return f"jnp.sum({c.name}, axis={axis})", _drop(c.shape, axis), "c", (c,)
    if choice == 3:
        partners = [v for v in _floats(vals) if broadcast_shapes(v.shape, c.shape) is not None]
        if partners:
            a = _pick(rng, partners)
            op = _pick(rng, ["{c} * {a}", "{c} + {a}", "{a} - {c} * 0.5"])
            return (op.format(c=c.name, a=a.name), broadcast_shapes(c.shape, a.shape), "c",
                    (c, a))
    if choice == 4 and len(c.shape) >= 2:
        shape = c.shape[:-1] + (c.shape[-2],)
        return (f"{c.name} @ jnp.conj(jnp.swapaxes({c.name}, -1, -2)) * 0.5", shape, "c",
                (c,))
    return _pick(rng, COMPLEX_OPS).format(c=c.name), c.shape, "c", (c,)


DRAWERS: dict[str, Callable[..., Drawn]] = {
    "elementwise": draw_elementwise, "broadcasting": draw_broadcasting,
    "reductions": draw_reductions, "shapes": draw_shapes, "indexing": draw_indexing,
    "updates": draw_updates, "matmul": draw_matmul, "integers": draw_integers,
    "control": draw_control, "complex": draw_complex,
}


def draw_line(rng: np.random.Generator, vals: list[Value], features: Sequence[str],
              out_of_bounds: bool) -> tuple[str, Drawn]:
    feature = _pick(rng, list(features))
    if feature in ("indexing", "updates"):
        return feature, DRAWERS[feature](rng, vals, out_of_bounds=out_of_bounds)
    return feature, DRAWERS[feature](rng, vals)


# ------------------------------------------------------------------------------------------
# Programs
# ------------------------------------------------------------------------------------------

MAX_SIZE = 512  # elements in a value: keeps Jacobians and vmapped loops small


def draw_program(seed: int, features: Sequence[str] = FEATURES, sides: Sequence[int] = (1, 2,
                 3, 4), length: tuple[int, int] = (3, 12), out_of_bounds: bool = False
                 ) -> Program:
    """The program of ``seed``: float inputs whose shapes broadcast together, ``length``
    lines drawn from ``features``, and one to three outputs, the first a float array."""
    rng = np.random.default_rng(seed)
    inputs, args = draw_inputs(rng, sides)
    program = Program(inputs, args, seed=seed)
    vals = list(inputs)
    wanted = int(rng.integers(*length, endpoint=True))
    while len(program.lines) < wanted:
        feature, drawn = draw_line(rng, vals, features, out_of_bounds)
        if drawn is None or math.prod(drawn[1]) > MAX_SIZE:
            continue
        expr, shape, kind, uses = drawn
        target = Value(f"v{len(vals)}", tuple(int(d) for d in shape), kind)
        program.lines.append(Line(target, expr, tuple(v.name for v in uses), feature))
        vals.append(target)
    _end_on_a_float(program, vals)
    made = [line.target.name for line in program.lines[:-1]]
    extra = [str(name) for name in rng.choice(made, size=min(len(made),
             int(rng.integers(0, 3))), replace=False)] if made else []
    return program.returning((program.lines[-1].target.name, *extra))


def _end_on_a_float(program: Program, vals: list[Value]) -> None:
    last = program.lines[-1].target if program.lines else vals[0]
    if last.kind == "f" and program.lines:
        return
    expr = {"i": f"{last.name} * 0.5", "b": f"jnp.where({last.name}, 1.0, -1.0)",
            "c": f"jnp.abs({last.name} + 2.5)",
            "f": f"jnp.sin({last.name})", "p": f"jnp.sin({last.name})"}[last.kind]
    target = Value(f"v{len(vals)}", last.shape, "f")
    program.lines.append(Line(target, expr, (last.name,)))
    vals.append(target)
