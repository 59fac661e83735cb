"""``jit`` for sharded programs: the same as stage 2's, plus ahead-of-time stages that show
the partitioned program and what its collectives cost.

``jit(f).lower(*args)`` traces; for sharded arguments ``.as_text()`` shows the global jaxpr
(types with their shardings), the per-device program the partitioner made, and its
collectives. ``.compile().cost_analysis()`` adds communication to stage 2's counts of flops
and bytes (all per device), and ``.communication_report()`` prints the collectives as a
table.

NB: JAX's are ``jax.stages.Lowered`` and ``Compiled`` (jax/_src/stages.py); its
``cost_analysis`` comes from XLA's HloCostAnalysis, per device too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from stage1_autodiff.core import asarray
from stage1_autodiff.tree_util import tree_flatten
from stage2_jit.jit import Jitted, Lowered, cost_analysis

from .arrays import run_program
from .cost_model import CollectiveCost, report, totals
from .partitioner import Partitioned, is_sharded, partition
from .runtime import static_costs
from .sharded_types import mesh_of


class ShardedJitted(Jitted):
    """A jitted function whose ``lower`` knows about sharded programs."""

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        lowered = super().lower(*args, **kwargs)
        program = lowered._entry.program
        if not is_sharded(program):
            return lowered
        mesh = mesh_of([*program.in_avals, *program.out_avals], "a program")
        return ShardedLowered(lowered, partition(program, mesh))


class ShardedLowered:
    """A traced sharded program and its per-device program."""

    def __init__(self, lowered: Lowered, partitioned: Partitioned) -> None:
        self._lowered = lowered
        self.partitioned = partitioned

    def as_text(self) -> str:
        p = self.partitioned
        return (f"# jaxpr (global types, with their shardings)\n{self._lowered._entry.jaxpr}\n"
                f"\n# per-device program on {p.mesh}\n{p.local}\n"
                f"\n# collectives per call\n{report(static_costs(p.local, p.mesh))}\n")

    def compile(self) -> ShardedCompiled:
        return ShardedCompiled(self._lowered, self.partitioned)


class ShardedCompiled:
    """The executable of a sharded program: callable, with its costs."""

    def __init__(self, lowered: Lowered, partitioned: Partitioned) -> None:
        self._entry = lowered._entry
        self.backend = lowered.backend
        self.partitioned = partitioned

    def __call__(self, *args: Any) -> Any:
        leaves = [asarray(x) for x in tree_flatten(args)[0]]
        consts = [asarray(c) for c in self._entry.consts]
        outs = run_program(self._entry.program, [*consts, *leaves], self.backend)
        return self._entry.results(outs)

    def as_text(self) -> str:
        return str(self.partitioned.local)

    def collectives(self) -> list[CollectiveCost]:
        """The collectives one call runs, each with its bytes per device and time."""
        return static_costs(self.partitioned.local, self.partitioned.mesh)

    def communication_report(self) -> str:
        return report(self.collectives())

    def cost_analysis(self) -> dict[str, float]:
        """Per device: flops and bytes accessed of the local program (stage 2's count), and
        the collectives' count, bytes sent and received and estimated seconds (a loop's
        collectives times its trip count; those of a while_loop apart, per iteration)."""
        result = cost_analysis(self.partitioned.local.jaxpr)
        result.update(totals(self.collectives()))
        return result


_DECORATOR = object()  # jit called without a function: @jit(static_argnums=...)


def jit(fun: Callable = _DECORATOR, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None,
        backend: str | None = None) -> Any:
    """Stage 2's ``jit``; over sharded arrays the program is partitioned and runs on every
    device of the mesh (see ``partitioner.py`` and ``runtime.py``)."""
    if fun is _DECORATOR:  # jit(None) is an error, as in JAX
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, backend=backend)
    return ShardedJitted(fun, static_argnums, static_argnames, donate_argnums, backend,
                         donate_argnames)
