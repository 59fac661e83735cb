"""The differential table's vocabulary: a call is an expression over inputs ``a``, ``b``,
``c`` and the kind of each (see ``test_differential_numpy.py``). The table is split over
``test_differential_numpy.py`` and the ``calls_*.py`` files beside it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Call:
    """One way to call a function: an expression and the kinds of its inputs."""

    expr: str
    kinds: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return f"{self.expr} with " + ", ".join(f"{n}: {k}" for n, k in self.kinds)


def call(expr: str, **kinds: str) -> Call:
    return Call(expr, tuple(kinds.items()))


def unary(name: str, *kinds: str) -> list[Call]:
    return [call(f"jnp.{name}(a)", a=k) for k in kinds]


def binary(name: str, *pairs: str) -> list[Call]:
    return [call(f"jnp.{name}(a, b)", a=p.split()[0], b=p.split()[1]) for p in pairs]


ARITHMETIC = ("f f", "f i", "i i", "i pyi", "f pyf", "pyf i", "i pyf", "b i", "f@ f@3,1")
COMPARISON = ("f f", "i i", "f pyf", "i pyi", "b b", "pyf pyi")
BITWISE = ("i i", "b b", "i pyi")
DIVISION = ("f fnz", "i inz", "f pyf", "inz pyi", "pyf inz")


def reduction(name: str, kind: str = "f", extra: str = "") -> list[Call]:
    return [call(f"jnp.{name}(a{extra})", a=kind),
            call(f"jnp.{name}(a, axis=1{extra})", a=f"{kind}@3,4,2"),
            call(f"jnp.{name}(a, axis=-1, keepdims=True{extra})", a=f"{kind}@2,3"),
            call(f"jnp.{name}(a, axis=(0, 2){extra})", a=f"{kind}@2,3,4")]


def arg_reduction(name: str) -> list[Call]:
    return [call(f"jnp.{name}(a)", a="f"), call(f"jnp.{name}(a, axis=1)", a="f@3,4,2"),
            call(f"jnp.{name}(a, axis=-1, keepdims=True)", a="i@2,5")]
