"""Stage 3's arguments and errors, asked of JAX 0.10.2: ``vmap`` and the Jacobians reject
what JAX rejects with the same class, and a batched tracer converted to a Python value
raises JAX's class (tests/stage2/test_arguments_and_errors.py does the same for stage 2)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import stage3_vmap as ours

real = pytest.importorskip("jax")

LIBRARIES = {"jax": SimpleNamespace(jax=real, jnp=real.numpy),
             "ours": SimpleNamespace(jax=ours, jnp=ours.numpy)}


def kind(cls: type) -> tuple[str, ...]:
    """An exception class as an ``except`` clause sees it: its name and its bases'."""
    return tuple(c.__name__ for c in cls.__mro__ if not c.__name__.startswith("_"))


def outcome(case: Callable, library: str) -> tuple[str, Any]:
    lib = LIBRARIES[library]
    try:
        value = case(lib.jax, lib.jnp)
    except Exception as error:  # noqa: BLE001 -- the class is what is compared
        return "raises", kind(type(error))
    return "returns", None if callable(value) else np.asarray(value)


def generator(x):
    yield x


CASES = {
    "vmap of a non-callable": lambda jax, jnp: jax.vmap(3),
    "jacfwd of a non-callable": lambda jax, jnp: jax.jacfwd(3),
    "jacrev of a non-callable": lambda jax, jnp: jax.jacrev(3),
    "hessian of a non-callable": lambda jax, jnp: jax.hessian(3),
    "vmap of a generator function": lambda jax, jnp: jax.vmap(generator),
    "jacfwd argnums past the arguments": lambda jax, jnp: jax.jacfwd(
        lambda x: x, argnums=2)(1.0),
    "jacrev argnums past the arguments": lambda jax, jnp: jax.jacrev(
        lambda x: x, argnums=2)(1.0),
    "hessian argnums past the arguments": lambda jax, jnp: jax.hessian(
        lambda x: x, argnums=2)(1.0),
    "jacfwd negative argnums past the start": lambda jax, jnp: jax.jacfwd(
        lambda x: x, argnums=-2)(1.0),
    "jacfwd argnums of a float": lambda jax, jnp: jax.jacfwd(lambda x: x, argnums=1.0),
    "jacrev argnums of a string, not called": lambda jax, jnp: jax.jacrev(
        lambda x: x, argnums="x"),
    "jacrev argnums of a string": lambda jax, jnp: jax.jacrev(lambda x: x, argnums="x")(1.0),
    "jacfwd argnums=()": lambda jax, jnp: jax.jacfwd(lambda x: x, argnums=())(1.0),
    "jacfwd called with no argument": lambda jax, jnp: jax.jacfwd(lambda: 1.0)(),
    "jacrev argnums as a NumPy integer": lambda jax, jnp: jax.jacrev(
        lambda x, y: x * y, argnums=np.int64(1))(3.0, 4.0),
    "bool under vmap": lambda jax, jnp: jax.vmap(lambda x: x if x > 0 else -x)(
        jnp.arange(3.0)),
    "int under vmap": lambda jax, jnp: jax.vmap(lambda x: int(x))(jnp.arange(3)),
    "float under vmap": lambda jax, jnp: jax.vmap(lambda x: float(x))(jnp.arange(3.0)),
    "operator.index under vmap": lambda jax, jnp: jax.vmap(
        lambda i: [1.0, 2.0, 3.0][operator.index(i)])(jnp.arange(3)),
    "np.asarray under vmap": lambda jax, jnp: jax.vmap(lambda x: np.asarray(x))(
        jnp.arange(3.0)),
    "a boolean index under vmap": lambda jax, jnp: jax.vmap(lambda x: x[x > 0])(
        jnp.ones((2, 3))),
    "float under jacfwd": lambda jax, jnp: jax.jacfwd(lambda x: x * float(x))(2.0),
    "bool under jacrev": lambda jax, jnp: jax.jacrev(lambda x: x * 2.0 if x > 0 else x)(2.0),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_arguments_and_conversions_as_jax(case):
    (theirs, expected), (mine, got) = outcome(case, "jax"), outcome(case, "ours")
    assert (mine, got if mine == "raises" else None) == (
        theirs, expected if theirs == "raises" else None)
    if theirs == "returns" and expected is not None:
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_jacobian_argnums_errors_name_the_number_and_the_call():
    with pytest.raises(ValueError, match=r"jacrev: argnums contains 2.*1 positional argument"):
        ours.jacrev(lambda x: x, argnums=2)(1.0)
