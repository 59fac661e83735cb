"""The IR: a jaxpr is a typed, first-order program of primitive applications.

``Var`` and ``Literal`` are its values, ``JaxprEqn`` one primitive application, ``Jaxpr`` the
program (constants, inputs, equations, outputs) and ``ClosedJaxpr`` a jaxpr with the values
of its constants. Printing follows JAX's text format, so ``make_jaxpr`` output can be read
beside JAX's; ``typecheck_jaxpr`` checks every equation against the abstract-eval rules.
"""

from __future__ import annotations

import itertools
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
    """A jaxpr together with the values of its constants."""

    jaxpr: Jaxpr
    consts: list[Any]

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__
# --8<-- [end:ir]


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
    def __init__(self) -> None:
        self.names: dict[Var, str] = {}

    def __getitem__(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = _name(len(self.names))
        return self.names[var]
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


def _pp_param(value: Any, indent: int) -> str:
    if isinstance(value, tuple) and value and all(
            isinstance(v, (ClosedJaxpr, Jaxpr)) for v in value):  # a cond's branches
        pad = " " * (indent + 2)
        items = [_pp_param(v, indent + 2) for v in value]
        return "(\n" + "".join(f"{pad}{item}\n" for item in items) + " " * indent + ")"
    if isinstance(value, ClosedJaxpr):
        return pp_jaxpr(value.jaxpr, indent)
    if isinstance(value, Jaxpr):
        return pp_jaxpr(value, indent)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value):  # a Python function (custom_vjp's fwd and bwd): its name, not its id
        return getattr(value, "__name__", type(value).__name__)
    return str(value)


def _pp_params(eqn: JaxprEqn, indent: int) -> str:
    params = {k: v for k, v in eqn.params.items() if not k.startswith("_")}
    params = _display_params(eqn.primitive, params)
    if not params:
        return ""
    items = [f"{k}={_pp_param(v, indent + 2)}" for k, v in sorted(params.items())]
    one_line = f"[{' '.join(items)}]"
    if len(one_line) + indent <= _WIDTH and "\n" not in one_line:
        return one_line
    pad = " " * (indent + 2)
    return "[\n" + "".join(f"{pad}{item}\n" for item in items) + " " * indent + "]"


def _display_params(prim: Primitive, params: dict[str, Any]) -> dict[str, Any]:
    """Params as JAX shows them where ours correspond (dimension numbers as lists), without
    those that say nothing to a reader (custom_vjp_call's ``out_trees``, a thunk)."""
    if prim.name == "dot_general":
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        shown = f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))"
        params = dict(params, dimension_numbers=shown)  # already formatted
    if prim.name == "custom_vjp_call":
        params = {k: v for k, v in params.items() if k != "out_trees"}
    return params


def _pp_eqn(eqn: JaxprEqn, names: _Names, used: set[Var], indent: int) -> str:
    lhs = " ".join(_pp_binder(v, names, used) for v in eqn.outvars)
    rhs = " ".join(_pp_atom(a, names) for a in eqn.invars)
    params = _pp_params(eqn, indent)
    call = f"{eqn.primitive.name}{params} {rhs}".rstrip()
    return f"{lhs} = {call}" if eqn.outvars else call  # an effect with no results


def _used_vars(jaxpr: Jaxpr) -> set[Var]:
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if isinstance(v, Var))
    return used | set(jaxpr.invars) | set(jaxpr.constvars)


# --8<-- [start:pp_jaxpr]
def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0) -> str:
    """The jaxpr in JAX's text format: on one line if it fits, else one equation a line."""
    names, used = _Names(), _used_vars(jaxpr)
    consts = " ".join(_pp_binder(v, names, used) for v in jaxpr.constvars)
    invars = " ".join(_pp_binder(v, names, used) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {invars}. let"
    eqns = [_pp_eqn(e, names, used, indent + 4) for e in jaxpr.eqns]
    outs = ", ".join(_pp_atom(a, names) for a in jaxpr.outvars)
    tail = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
    one_line = f"{head} {'; '.join(eqns)} {tail}"
    if len(one_line) + indent <= _WIDTH and "\n" not in one_line:
        return one_line
    pad = " " * indent
    body = "".join(f"{pad}    {line}\n" for line in eqns)
    return f"{head}\n{body}{pad}  {tail}"
# --8<-- [end:pp_jaxpr]
