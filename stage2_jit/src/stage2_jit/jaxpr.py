"""The IR: a jaxpr is a typed, first-order program of primitive applications.

``Var`` and ``Literal`` are its values, ``JaxprEqn`` one primitive application, ``Jaxpr`` the
program (constants, inputs, equations, outputs) and ``ClosedJaxpr`` a jaxpr with the values
of its constants. Printing follows JAX's text format, so ``make_jaxpr`` output can be read
beside JAX's; ``typecheck_jaxpr`` checks every equation against the abstract-eval rules.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from stage1_autodiff.core import Primitive, ShapedArray

# ------------------------------------------------------------------------------------------
# The data structures
# ------------------------------------------------------------------------------------------


# --8<-- [start:ir]
class Var:
    """A value computed by the program; compared by identity. Its name is given when printed."""

    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval
        self.count = next(Var._counter)  # a stable order for printing and hashing

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal(NamedTuple):
    """A scalar constant written into the program text, like ``2.0:f32[]``."""

    val: Any
    aval: ShapedArray


Atom = Var | Literal


class JaxprEqn(NamedTuple):
    """``outvars = primitive[params] invars``."""

    primitive: Primitive
    invars: list[Atom]
    params: dict[str, Any]
    outvars: list[Var]


@dataclass(frozen=True, eq=False)
class Jaxpr:
    """``{ lambda constvars ; invars. let eqns in (outvars) }``."""

    constvars: list[Var]
    invars: list[Var]
    outvars: list[Atom]
    eqns: list[JaxprEqn]

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pp_jaxpr(self)


@dataclass(frozen=True, eq=False)
class ClosedJaxpr:
    """A jaxpr together with the values of its constants. ``claimed``: staged as the primal
    computation of a ``grad`` above, which differentiates the ``custom_vjp`` calls in it by
    their ``bwd``; running it computes them by their ``fwd`` (``tracing.claim_programs``)."""

    jaxpr: Jaxpr
    consts: list[Any]
    claimed: bool = False

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__
# --8<-- [end:ir]


def map_programs(f: Callable[[ClosedJaxpr], Any], value: Any) -> Any:
    """A param with ``f`` applied to the programs it is or holds: a ``ClosedJaxpr`` (a
    ``jit``'s, a loop's body), or a tuple of them (a ``cond``'s branches); any other value as
    it is. The passes and the claims of ``grad`` rewrite the programs ops hold with it."""
    if isinstance(value, ClosedJaxpr):
        return f(value)
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return tuple(map(f, value))
    return value


# ------------------------------------------------------------------------------------------
# Printing in JAX's format
# ------------------------------------------------------------------------------------------

_WIDTH = 80  # like JAX, a jaxpr (or a param list) that fits on one line is printed on one


# --8<-- [start:names]
def _name(n: int) -> str:
    """a, b, ..., z, ba, bb, ...: base 26 with letters, as JAX names variables."""
    letters = []
    while True:
        n, digit = divmod(n, 26)
        letters.append(chr(ord("a") + digit))
        if n == 0:
            break
    return "".join(reversed(letters))


class _Names:
    """The name of each value, given at first sight. A jaxpr inside an equation's params
    shares its outer jaxpr's names and goes on counting; a ``jit``'s program calls its
    inputs and outputs by the names of the equation's operands and results, as JAX prints it."""

    def __init__(self) -> None:
        self.names: dict[Var, str] = {}
        self.count = 0

    def __getitem__(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = _name(self.count)
            self.count += 1
        return self.names[var]

    def alias(self, var: Var, name: str) -> None:
        self.names.setdefault(var, name)
# --8<-- [end:names]


def names_in_order(jaxpr: Jaxpr) -> _Names:
    """Names for every value of ``jaxpr``, given in program order (inputs, then each
    equation's results), as the comments of the generated source and the kernel plan show
    them."""
    names = _Names()
    for var in [*jaxpr.invars, *(v for eqn in jaxpr.eqns for v in eqn.outvars)]:
        names[var]
    return names


def _pp_atom(atom: Atom, names: _Names) -> str:
    if isinstance(atom, Literal):
        return f"{_pp_literal_value(atom.val)}:{atom.aval.str_short()}"
    return names[atom]


def _pp_literal_value(val: Any) -> str:
    value = np.asarray(val).item()
    return repr(value) if not isinstance(value, float) else str(value)


def _pp_binder(var: Var, names: _Names, used: set[Var]) -> str:
    name = names[var] if var in used else "_"
    return f"{name}:{var.aval.str_short()}"


def _pp_param(value: Any, indent: int, names: _Names, start: int = 0) -> str:
    """A param's text; ``start`` is the column where it begins (after ``key=``)."""
    if isinstance(value, tuple) and value and all(
            isinstance(v, (ClosedJaxpr, Jaxpr)) for v in value):  # a cond's branches
        pad = " " * (indent + 2)
        items = [_pp_param(v, indent + 2, names) for v in value]
        return "(\n" + "".join(f"{pad}{item}\n" for item in items) + " " * indent + ")"
    if isinstance(value, ClosedJaxpr):
        return pp_jaxpr(value.jaxpr, indent, names, start)
    if isinstance(value, Jaxpr):
        return pp_jaxpr(value, indent, names, start)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value):  # a Python function (custom_vjp's fwd and bwd): its name, not its id
        return getattr(value, "__name__", type(value).__name__)
    return str(value)


def _pp_params(eqn: JaxprEqn, indent: int, names: _Names, rest: int) -> str:
    """The params in brackets: on the equation's line if the whole equation (``rest`` more
    columns) fits in the width, else one a line."""
    params = {k: v for k, v in eqn.params.items() if not k.startswith("_")}
    params = _display_params(eqn, params)
    if not params:
        return ""
    if eqn.primitive.name == "jit":  # the program's values by the equation's names
        inner = params["jaxpr"].jaxpr
        for var, atom in [*zip(inner.invars, eqn.invars), *zip(inner.outvars, eqn.outvars)]:
            if isinstance(atom, Var) and isinstance(var, Var) and atom in names.names:
                names.alias(var, names.names[atom])
    items = [f"{k}={_pp_param(params[k], indent + 2, names, indent + 3 + len(k))}"
             for k in _param_order(eqn, params)]
    one_line = f"[{' '.join(items)}]"
    if len(one_line) + indent + rest <= _WIDTH and "\n" not in one_line:
        return one_line
    pad = " " * (indent + 2)
    return "[\n" + "".join(f"{pad}{item}\n" for item in items) + " " * indent + "]"


def _display_params(eqn: JaxprEqn, params: dict[str, Any]) -> dict[str, Any]:
    """Params as JAX 0.10 shows them where ours correspond: dimension numbers as lists; a
    default it shows (``reduce_sum``'s ``out_sharding=None``), none that it hides (a shape the
    result's type states, a sharding of ``None``, a scan's ``linear`` flags when all are
    off, a jit's default backend); nothing that says nothing to a reader (custom_vjp_call's
    ``out_trees``, a thunk)."""
    prim = eqn.primitive
    if prim.name == "dot_general":
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        shown = f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))"
        params = dict(params, dimension_numbers=shown)  # already formatted
        if params.get("preferred_element_type") is None:  # the result's dtype, as JAX says
            params["preferred_element_type"] = eqn.outvars[0].aval.dtype
    if prim.name == "pure_callback":
        params = dict(params, callback=_without_address(repr(params["callback"])),
                      result_avals=_avals_text(params["result_avals"]))
    params = {**_SHOWN_DEFAULTS.get(prim.name, {}), **params}
    if prim.name in ("reshape", "iota", "broadcast_in_dim") and "out_sharding" in params:
        params["sharding"] = params.pop("out_sharding")  # JAX's name for it there
    shown = _SHOWN_DEFAULTS.get(prim.name, {})
    return {k: v for k, v in params.items()
            if k in shown or not _HIDDEN.get(k, lambda name, v: False)(prim.name, v)}


def _without_address(text: str) -> str:
    """A repr with its memory addresses masked, as JAX masks them (``<function f at
    0xXXXXXXXXXXXX>``): the text is then the same on every run."""
    return re.sub(r"0x[0-9a-fA-F]+", "0xXXXXXXXXXXXX", text)


def _avals_text(avals: tuple[ShapedArray, ...]) -> str:
    """A tuple of types in JAX's ``ShapedArray(float32[2,3])`` form."""
    items = [f"ShapedArray({a.dtype.name}[{','.join(map(str, a.shape))}])" for a in avals]
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


# Params JAX 0.10 prints though ours leave them out at their default (shown even where the
# table below would hide them).
_SHOWN_DEFAULTS = {"reduce_sum": {"out_sharding": None}, "reshape": {"sharding": None},
                   "custom_vjp_call": {"symbolic_zeros": False},
                   "pure_callback": {"sharding": None},
                   "iota": {"sharding": None},
                   "conv_general_dilated": {"out_sharding": None},
                   "gather": {"indices_are_sorted": False, "unique_indices": False}}
# When JAX 0.10 does not print a param: given the primitive's name and the param's value.
_HIDDEN: dict[str, Callable[[str, Any], bool]] = {
    "shape": lambda name, v: name == "broadcast_in_dim",  # the result's type states it
    "broadcast_dimensions": lambda name, v: name == "broadcast_in_dim" and v == (),
    "out_trees": lambda name, v: name == "custom_vjp_call",  # a thunk
    "num_consts": lambda name, v: name in ("custom_jvp_call", "custom_vjp_call") and not v,
    "out_sharding": lambda name, v: v is None,
    "sharding": lambda name, v: v is None,
    "linear": lambda name, v: not any(v),  # a scan's flags, all off
    "backend": lambda name, v: v == _default_backend(),
}


def _default_backend() -> str:
    from .devices import default_backend  # devices imports this module
    return default_backend()


def _param_order(eqn: JaxprEqn, params: dict[str, Any]) -> list[str]:
    """Sorted by name, as JAX prints params; a call's ``name`` first, a jit's program last."""
    order = sorted(params, key=lambda k: (k != "name", k))  # a call's name first
    if eqn.primitive.name == "jit":
        order = [k for k in order if k != "jaxpr"] + ["jaxpr"]
    return order


def _pp_eqn(eqn: JaxprEqn, names: _Names, used: set[Var], indent: int) -> str:
    lhs = " ".join(_pp_binder(v, names, used) for v in eqn.outvars)
    rhs = " ".join(_pp_atom(a, names) for a in eqn.invars)
    rest = len(lhs) + 3 + len(eqn.primitive.name) + len(rhs) + 1
    params = _pp_params(eqn, indent, names, rest)
    call = f"{eqn.primitive.name}{params} {rhs}".rstrip()
    return f"{lhs} = {call}" if eqn.outvars else call  # an effect with no results


def _used_vars(jaxpr: Jaxpr) -> set[Var]:
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if isinstance(v, Var))
    return used | set(jaxpr.invars) | set(jaxpr.constvars)


# --8<-- [start:pp_jaxpr]
def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, names: _Names | None = None,
             start: int | None = None) -> str:
    """The jaxpr in JAX's text format: on one line if it fits, else one equation a line.
    ``names`` are the outer jaxpr's, and ``start`` the column it begins at, when this one is
    an equation's param."""
    names, used = names or _Names(), _used_vars(jaxpr)
    consts = " ".join(_pp_binder(v, names, used) for v in jaxpr.constvars)
    invars = " ".join(_pp_binder(v, names, used) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {invars}. let"
    eqns = [_pp_eqn(e, names, used, indent + 4) for e in jaxpr.eqns]
    outs = ", ".join(_pp_atom(a, names) for a in jaxpr.outvars)
    tail = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
    one_line = f"{head} {'; '.join(eqns)} {tail}"
    if len(one_line) + (indent if start is None else start) <= _WIDTH and "\n" not in one_line:
        return one_line
    pad = " " * indent
    body = "".join(f"{pad}    {line}\n" for line in eqns)
    return f"{head}\n{body}{pad}  {tail}"
# --8<-- [end:pp_jaxpr]
