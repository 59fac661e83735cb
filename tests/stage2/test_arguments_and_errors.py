"""Arguments and errors as JAX has them, asked of JAX 0.10.2 itself: each case runs the same
code on JAX and on stage 2, and both must return (the same values) or raise the same class,
with the same bases, so that an ``except`` clause written for JAX works here.

Then generated source: a param the user chose (a name, a format string) is written into
kernels' comments with ``repr``, so no text can end a comment line and become code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from backend_under_test import BACKEND, generated_executable_type
from stage2_jit.jaxpr import ClosedJaxpr, Jaxpr
from stage2_jit.runtime import compile_jaxpr
from stage2_jit.tracing import typecheck_jaxpr

import stage2_jit as ours
from stage1_autodiff import core as stage1_core

real = pytest.importorskip("jax")

LIBRARIES = {"jax": SimpleNamespace(jax=real, jnp=real.numpy),
             "ours": SimpleNamespace(jax=ours, jnp=ours.numpy)}

# The names of jax.errors that stage 2 does not provide, each because nothing here raises it.
NOT_RAISED = {
    "InconclusiveDimensionOperation",  # no shape polymorphism (jax.export's symbolic dims)
    "JaxRuntimeError",  # no XLA runtime: a failing kernel raises Numba's or NumPy's error
    "KeyReuseError",  # no key-reuse checker (jax_debug_key_reuse)
}

# A string with everything that could end a line of source or a string literal in it.
HOSTILE = 'odd\n"""\nraise SystemExit(3)  # \'\r\\'


def kind(cls: type) -> tuple[str, ...]:
    """An exception class as an ``except`` clause sees it: its name and its bases' (JAX's
    private mixin left out)."""
    return tuple(c.__name__ for c in cls.__mro__ if not c.__name__.startswith("_"))


def outcome(case: Callable, library: str) -> tuple[str, Any]:
    """``("returns", value)`` or ``("raises", kind of the error)``."""
    lib = LIBRARIES[library]
    try:
        value = case(lib.jax, lib.jnp)
    except Exception as error:  # noqa: BLE001 -- the class is what is compared
        return "raises", kind(type(error))
    return "returns", value


def assert_same_outcome(case: Callable) -> None:
    (theirs, expected), (mine, got) = outcome(case, "jax"), outcome(case, "ours")
    assert (mine, got if mine == "raises" else None) == (
        theirs, expected if theirs == "raises" else None)
    if theirs == "returns" and not callable(expected):
        leaves = real.tree_util.tree_leaves(expected), ours.tree_util.tree_leaves(got)
        for e, g in zip(*leaves, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)


def x_(x, *rest):
    return x


def positional_only(x, /, y):
    return x + y


def keyword_only(x, *, k):
    return x * k


def star(x, *args, k=1, **kwargs):
    return x


def generator(x):
    yield x


# ------------------------------------------------------------------------------------------
# jit's arguments: checked at jit(), as JAX does
# ------------------------------------------------------------------------------------------

JIT_CASES = {
    "jit of a non-callable": lambda jax, jnp: jax.jit(3),
    "jit of None": lambda jax, jnp: jax.jit(None),
    "jit of a generator function": lambda jax, jnp: jax.jit(generator),
    "static_argnums past the positional arguments": lambda jax, jnp: jax.jit(
        lambda x: x, static_argnums=2),
    "negative static_argnums past the start": lambda jax, jnp: jax.jit(
        lambda x, y: x, static_argnums=-3),
    "one good, one bad static_argnums": lambda jax, jnp: jax.jit(
        lambda x, y: x, static_argnums=(0, 2)),
    "static_argnums naming a keyword-only argument": lambda jax, jnp: jax.jit(
        keyword_only, static_argnums=1),
    "static_argnums of a function with *args": lambda jax, jnp: jax.jit(
        star, static_argnums=5)(1.0),
    "static_argnums of a functools.partial": lambda jax, jnp: jax.jit(
        __import__("functools").partial(lambda a, b: a * b, 2.0), static_argnums=1),
    "static_argnums of a builtin": lambda jax, jnp: jax.jit(max, static_argnums=5),
    "static_argnums=None": lambda jax, jnp: jax.jit(lambda x: x * 2, static_argnums=None)(1.0),
    "static_argnums of a float": lambda jax, jnp: jax.jit(lambda x: x, static_argnums=1.0),
    "static_argnums of a string": lambda jax, jnp: jax.jit(lambda x: x, static_argnums="x"),
    "static_argnums passed by keyword": lambda jax, jnp: jax.jit(
        lambda x, n: x * n, static_argnums=1)(1.0, n=3),
    "static_argnames not in the signature": lambda jax, jnp: jax.jit(
        lambda x: x, static_argnames="z"),
    "static_argnames, one good, one bad": lambda jax, jnp: jax.jit(
        lambda x: x, static_argnames=["x", "z"]),
    "static_argnames of a positional-only argument": lambda jax, jnp: jax.jit(
        positional_only, static_argnames="x"),
    "static_argnames naming *args": lambda jax, jnp: jax.jit(star, static_argnames="args"),
    "static_argnames of a function with **kwargs": lambda jax, jnp: jax.jit(
        star, static_argnames="z")(1.0),
    "static_argnames of a keyword-only argument": lambda jax, jnp: jax.jit(
        keyword_only, static_argnames="k")(1.0, k=2),
    "donate_argnums past the positional arguments": lambda jax, jnp: jax.jit(
        lambda x: x, donate_argnums=2),
    "negative donate_argnums past the start": lambda jax, jnp: jax.jit(
        lambda x, y: x, donate_argnums=-5),
    "donate_argnames not in the signature": lambda jax, jnp: jax.jit(
        lambda x: x, donate_argnames="z"),
    "an argument both static and donated by number": lambda jax, jnp: jax.jit(
        lambda x, y: x, static_argnums=1, donate_argnums=1),
    "an argument both static and donated by name": lambda jax, jnp: jax.jit(
        lambda x, y: x, static_argnames="x", donate_argnames="x"),
    "static by number, donated by name": lambda jax, jnp: jax.jit(
        lambda x, y: x, static_argnums=0, donate_argnames="x"),
    "static and donated of a builtin": lambda jax, jnp: jax.jit(
        max, static_argnums=0, donate_argnums=0),
    "decorator form with a bad static_argnums": lambda jax, jnp: jax.jit(
        static_argnums=3)(lambda x: x),
    "a good donation runs": lambda jax, jnp: jax.jit(
        lambda x, y: x + y, donate_argnums=0, donate_argnames="y")(jnp.ones(2), y=jnp.ones(2)),
    "make_jaxpr of a non-callable": lambda jax, jnp: jax.make_jaxpr(3),
}


@pytest.mark.parametrize("case", JIT_CASES.values(), ids=JIT_CASES.keys())
def test_jit_arguments_as_jax(case):
    assert_same_outcome(case)


def test_jit_argument_errors_name_the_option_and_the_arguments():
    with pytest.raises(ValueError, match=r"static_argnums=\(2,\).*1 positional argument.*x"):
        ours.jit(lambda x: x, static_argnums=2)
    with pytest.raises(ValueError, match=r"static_argnames.*\['z'\].*does not take"):
        ours.jit(lambda x: x, static_argnames=("x", "z"))
    with pytest.raises(ValueError, match=r"\['y'\].*both static and donated"):
        ours.jit(lambda x, y: x, static_argnums=1, donate_argnames="y")
    with pytest.raises(TypeError, match=r"^Expected a callable value, got 3$"):
        ours.jit(3)


# ------------------------------------------------------------------------------------------
# grad's argnums, and the function each transformation is given
# ------------------------------------------------------------------------------------------

GRAD_CASES = {
    "grad of a non-callable": lambda jax, jnp: jax.grad(3),
    "value_and_grad of a non-callable": lambda jax, jnp: jax.value_and_grad(3),
    "vjp of a non-callable": lambda jax, jnp: jax.vjp(3, 1.0),
    "jvp of a non-callable": lambda jax, jnp: jax.jvp(3, (1.0,), (1.0,)),
    "grad of a generator function": lambda jax, jnp: jax.grad(generator),
    "argnums past the arguments, not called": lambda jax, jnp: jax.grad(
        lambda x: x, argnums=2) and None,
    "argnums past the arguments": lambda jax, jnp: jax.grad(lambda x: x, argnums=2)(1.0),
    "value_and_grad argnums past the arguments": lambda jax, jnp: jax.value_and_grad(
        lambda x: x, argnums=2)(1.0),
    "negative argnums past the start": lambda jax, jnp: jax.grad(
        lambda x: x, argnums=-2)(1.0),
    "argnums with one past the end": lambda jax, jnp: jax.grad(
        lambda x, y: x * y, argnums=(0, 2))(1.0, 2.0),
    "argnums past the end and past the start": lambda jax, jnp: jax.grad(
        lambda x, y: x * y, argnums=(2, -5))(1.0, 2.0),
    "argnums past the start only": lambda jax, jnp: jax.grad(
        lambda x, y: x * y, argnums=(0, -5))(1.0, 2.0),
    "argnums of an argument passed by keyword": lambda jax, jnp: jax.grad(
        lambda x, y: x * y, argnums=1)(1.0, y=2.0),
    "argnums=()": lambda jax, jnp: jax.grad(lambda x: x, argnums=())(1.0),
    "argnums of a float": lambda jax, jnp: jax.grad(lambda x: x, argnums=1.0),
    "argnums of a string": lambda jax, jnp: jax.grad(lambda x: x, argnums="x"),
    "argnums with a string in it": lambda jax, jnp: jax.grad(lambda x: x, argnums=(0, "x")),
    "argnums as a list": lambda jax, jnp: jax.grad(lambda x: x * x, argnums=[0])(3.0),
    "argnums as a NumPy integer": lambda jax, jnp: jax.grad(
        lambda x, y: x * y, argnums=np.int64(1))(3.0, 4.0),
    "negative argnums in range": lambda jax, jnp: jax.grad(
        lambda x, y: x * y, argnums=-1)(3.0, 4.0),
    "a function called with no argument": lambda jax, jnp: jax.grad(lambda: 1.0)(),
}


@pytest.mark.parametrize("case", GRAD_CASES.values(), ids=GRAD_CASES.keys())
def test_grad_arguments_as_jax(case):
    assert_same_outcome(case)


# ------------------------------------------------------------------------------------------
# Tracers converted to Python values: JAX's error classes
# ------------------------------------------------------------------------------------------


def escape(jax, transform):
    kept = []

    def leak(x):
        kept.append(x)
        return x * 1.0

    transform(leak)(1.0)
    return kept[0] + 1.0


CONVERSION_CASES = {
    "bool under jit": lambda jax, jnp: jax.jit(lambda x: bool(x))(1.0),
    "if under jit": lambda jax, jnp: jax.jit(lambda x: x * 2 if x > 0 else x)(1.0),
    "not under jit": lambda jax, jnp: jax.jit(lambda x: not x)(1.0),
    "bool of a vector under jit": lambda jax, jnp: jax.jit(lambda x: bool(x))(jnp.ones(3)),
    "bool of an empty array under jit": lambda jax, jnp: jax.jit(lambda x: bool(x))(
        jnp.ones(0)),
    "bool of a vector": lambda jax, jnp: bool(jnp.ones(3)),
    "int under jit": lambda jax, jnp: jax.jit(lambda x: int(x))(1.0),
    "float under jit": lambda jax, jnp: jax.jit(lambda x: float(x))(1.0),
    "complex under jit": lambda jax, jnp: jax.jit(lambda x: complex(x))(1.0),
    "operator.index under jit": lambda jax, jnp: jax.jit(lambda i: operator.index(i))(1),
    "range under jit": lambda jax, jnp: jax.jit(lambda n: range(n))(3),
    "a list indexed under jit": lambda jax, jnp: jax.jit(lambda i: [1.0, 2.0][i])(1),
    "hex under jit": lambda jax, jnp: jax.jit(lambda i: hex(i))(1),
    "operator.index of a float under jit": lambda jax, jnp: jax.jit(
        lambda x: operator.index(x))(1.0),
    "operator.index of an int vector under jit": lambda jax, jnp: jax.jit(
        lambda i: operator.index(i))(jnp.arange(2)),
    "operator.index of a float": lambda jax, jnp: operator.index(jnp.float32(1)),
    "np.asarray under jit": lambda jax, jnp: jax.jit(lambda x: np.asarray(x))(1.0),
    "a NumPy function under jit": lambda jax, jnp: jax.jit(lambda x: np.sin(x))(1.0),
    "item under jit": lambda jax, jnp: jax.jit(lambda x: x.item())(1.0),
    "tolist under jit": lambda jax, jnp: jax.jit(lambda x: x.tolist())(1.0),
    "tobytes under jit": lambda jax, jnp: jax.jit(lambda x: x.tobytes())(1.0),
    "arange of a traced bound": lambda jax, jnp: jax.jit(lambda n: jnp.arange(n))(3),
    "zeros of a traced shape": lambda jax, jnp: jax.jit(lambda n: jnp.zeros(n))(3),
    "hash under jit": lambda jax, jnp: jax.jit(lambda x: hash(x))(1.0),
    "bool under grad": lambda jax, jnp: jax.grad(lambda x: x * 2 if x > 0 else x)(1.0),
    "int under grad": lambda jax, jnp: jax.grad(lambda x: x * [1.0, 5.0][int(x)])(1.0),
    "item under grad": lambda jax, jnp: jax.grad(lambda x: x * x.item())(3.0),
    "float under grad": lambda jax, jnp: jax.grad(lambda x: x * float(x))(3.0),
    "tolist under grad": lambda jax, jnp: jax.grad(lambda x: x * x.tolist())(3.0),
    "tobytes under grad": lambda jax, jnp: jax.grad(lambda x: (x.tobytes(), x)[1])(3.0),
    "np.asarray under grad": lambda jax, jnp: jax.grad(lambda x: np.asarray(x).sum())(1.0),
    "float of a non-differentiated argument": lambda jax, jnp: jax.grad(
        lambda x, y: x * float(y))(2.0, 3.0),
    "float under jvp": lambda jax, jnp: jax.jvp(lambda x: x * float(x), (1.0,), (1.0,)),
    "int under jvp": lambda jax, jnp: jax.jvp(lambda x: x * int(x), (2.0,), (1.0,)),
    "bool under grad of jit": lambda jax, jnp: jax.grad(jax.jit(lambda x: bool(x) * x))(1.0),
    "float under jit of grad": lambda jax, jnp: jax.jit(jax.grad(lambda x: float(x) * x))(1.0),
    "a traced boolean index": lambda jax, jnp: jax.jit(lambda x: x[x > 1])(jnp.arange(3.0)),
    "a traced boolean index with an int": lambda jax, jnp: jax.jit(lambda x, m: x[m, 0])(
        jnp.ones((3, 2)), jnp.array([True, False, True])),
    "a traced boolean .at[] update": lambda jax, jnp: jax.jit(
        lambda x: x.at[x > 1].set(0.0))(jnp.arange(3.0)),
    "a NumPy boolean index under jit": lambda jax, jnp: jax.jit(
        lambda x: x[np.array([True, False, True])])(jnp.arange(3.0)),
    "a boolean index under grad": lambda jax, jnp: jax.grad(
        lambda x: (x[x > 0] ** 2).sum())(jnp.arange(-1.0, 3.0)),
    "an escaped jit tracer": lambda jax, jnp: escape(jax, jax.jit),
    "an escaped grad tracer": lambda jax, jnp: escape(jax, jax.grad),
}


@pytest.mark.parametrize("case", CONVERSION_CASES.values(), ids=CONVERSION_CASES.keys())
def test_conversion_errors_as_jax(case):
    assert_same_outcome(case)


def test_tobytes_gives_jaxs_bytes():
    for order in ("C", "F"):
        assert ours.numpy.arange(6).reshape(2, 3).tobytes(order) == \
            real.numpy.arange(6).reshape(2, 3).tobytes(order)


def test_conversion_errors_are_caught_by_the_clauses_written_for_jax():
    with pytest.raises(ours.errors.ConcretizationTypeError, match=r"argument x"):
        ours.jit(lambda x: 1 if x > 0 else 2)(1.0)  # a TracerBoolConversionError
    with pytest.raises(TypeError, match=r"operator\.index"):
        ours.jit(lambda n: list(range(n)))(3)  # a TracerIntegerConversionError
    with pytest.raises(IndexError, match=r"boolean indices must be concrete.*bool\[3\]"):
        ours.jit(lambda x: x[x > 0])(ours.numpy.ones(3))
    with pytest.raises(ours.errors.ConcretizationTypeError, match=r"differentiated"):
        ours.grad(lambda x: float(x))(1.0)


# ------------------------------------------------------------------------------------------
# jax.errors
# ------------------------------------------------------------------------------------------


def error_classes(module: Any) -> dict[str, type]:
    return {name: getattr(module, name) for name in dir(module)
            if isinstance(getattr(module, name), type)
            and issubclass(getattr(module, name), Exception)}


def test_errors_module_has_jax_classes_with_jax_bases():
    theirs, mine = error_classes(real.errors), error_classes(ours.errors)
    assert set(mine) == set(theirs) - NOT_RAISED
    assert {name: kind(cls) for name, cls in mine.items()} == {
        name: kind(theirs[name]) for name in mine}


def test_top_level_names_are_the_errors_module_classes():
    assert ours.ConcretizationTypeError is ours.errors.ConcretizationTypeError
    assert ours.TracerArrayConversionError is ours.errors.TracerArrayConversionError
    assert stage1_core.UnexpectedTracerError is ours.errors.UnexpectedTracerError


def test_a_malformed_jaxpr_raises_jaxpr_type_error():
    closed = ours.make_jaxpr(lambda x: ours.numpy.sin(x) * 2.0)(1.0)
    jaxpr = closed.jaxpr
    swapped = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns[::-1])
    with pytest.raises(ours.errors.JaxprTypeError, match=r"not defined before"):
        typecheck_jaxpr(swapped)
    assert kind(ours.errors.JaxprTypeError) == kind(real.errors.JaxprTypeError)


# ------------------------------------------------------------------------------------------
# Generated source: user text stays text
# ------------------------------------------------------------------------------------------


def assert_inert(source: str) -> None:
    """The source parses, and nothing of ``HOSTILE`` became code (its ``raise SystemExit``
    would be a Raise node)."""
    tree = ast.parse(source)
    assert not any(isinstance(node, ast.Raise) for node in ast.walk(tree)), source


def with_params(closed: ClosedJaxpr, primitive: str, **extra: Any) -> ClosedJaxpr:
    """``closed`` with ``extra`` added to the params of ``primitive``'s equations (an
    elementwise rule reads none of them, so the program computes the same)."""
    jaxpr = closed.jaxpr
    eqns = [eqn._replace(params={**eqn.params, **extra}) if eqn.primitive.name == primitive
            else eqn for eqn in jaxpr.eqns]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns), closed.consts)


@pytest.mark.parametrize("value", [HOSTILE, (HOSTILE, 1), b"\n", np.str_(HOSTILE)],
                         ids=["str", "tuple", "bytes", "numpy str"])
def test_a_string_param_cannot_end_a_comment_line(value):
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    closed = with_params(ours.make_jaxpr(lambda v: ours.numpy.sin(v) * 2.0 + 1.0)(x), "sin",
                         note=value)
    executable = compile_jaxpr(closed, BACKEND)
    assert type(executable) is generated_executable_type()
    assert "note=" in executable.source  # the param did reach the comments
    assert_inert(executable.source)
    (got,) = executable(x)
    np.testing.assert_allclose(np.asarray(got), np.sin(x) * 2.0 + 1.0, rtol=1e-6)


def test_a_function_with_an_odd_name_compiles_and_runs():
    def inner(x):
        return ours.numpy.sin(x) + 1.0

    inner.__name__ = inner.__qualname__ = HOSTILE
    outer = ours.jit(lambda x: ours.jit(inner)(x) * 3.0)
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(outer(x)), (np.sin(x) + 1.0) * 3.0, rtol=1e-6)
    assert_inert(outer.lower(x).compile().as_text())
    assert_inert(ours.jit(inner).lower(x).compile().as_text())


def test_a_hostile_debug_print_format_prints_as_jax(capsys):
    def show(debug, x):
        debug.print("x={x}" + HOSTILE, x=x)
        return x * 2.0

    x = np.arange(3.0, dtype=np.float32)
    real.block_until_ready(real.jit(lambda v: show(real.debug, v))(x))
    real.effects_barrier()
    expected = capsys.readouterr().out
    got = ours.jit(lambda v: show(ours.debug, v))(x)
    assert capsys.readouterr().out == expected
    np.testing.assert_allclose(np.asarray(got), x * 2.0)
