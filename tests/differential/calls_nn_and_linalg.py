"""More of ``jax.nn``'s functions: rows of the differential table (``test_differential_numpy.py``
merges them), each an expression and the kinds of its inputs."""

from __future__ import annotations

from table import Call, call  # noqa: F401

CALLS: dict[str, list[Call]] = {
}

NN_CALLS: dict[str, list[Call]] = {
}

# Calls JAX refuses: ours must raise too, an error of the same broad class.
ERROR_CALLS: list[Call] = [
]
