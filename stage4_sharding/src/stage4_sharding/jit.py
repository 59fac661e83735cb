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
from stage1_autodiff.tree_util import tree_flatten, tree_map, tree_structure
from stage2_jit.jit import Jitted, Lowered, cost_analysis

from .arrays import ShardedArray, device_put, run_program
from .cost_model import CollectiveCost, report, totals
from .named_sharding import NamedSharding, P, as_sharding
from .partitioner import Partitioned, is_sharded, partition
from .reshard import lay_out
from .runtime import static_costs
from .sharded_types import mesh_of


class ShardedJitted(Jitted):
    """A jitted function whose ``lower`` knows about sharded programs."""

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        lowered = super().lower(*args, **kwargs)
        program = lowered._entry.program
        if not is_sharded(program):
            return lowered
        mesh = mesh_of([*program.in_avals, *program.out_avals], "a program", any_types=True)
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
_UNSPECIFIED = object()  # in_shardings or out_shardings not given


class ShardingsJitted(ShardedJitted):
    """A jitted function with ``in_shardings`` (its positional arguments are placed so,
    before the call) and ``out_shardings`` (its results are resharded so, in the program),
    as JAX's ``jit`` takes them: each a sharding, or a pytree prefix of the arguments tuple
    (of the results) with ``None`` where the layout is left as it comes."""

    def __init__(self, fun: Callable, in_shardings: Any, out_shardings: Any,
                 *args: Any) -> None:
        if out_shardings is not _UNSPECIFIED:
            fun = _constrained(fun, out_shardings)
        super().__init__(fun, *args)
        self.in_shardings = in_shardings

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return super().__call__(*self._placed(args, kwargs), **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return super().lower(*self._placed(args, kwargs), **kwargs)

    def _placed(self, args: tuple, kwargs: dict) -> tuple:
        """The positional arguments laid out by ``in_shardings`` (static ones excepted)."""
        if self.in_shardings is _UNSPECIFIED:
            return args
        if kwargs:
            raise ValueError("jit does not support keyword arguments when in_shardings is "
                             "specified: pass them by position.")
        static = {n % len(args) for n in self._static_nums if -len(args) <= n < len(args)}
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        placed = iter(_laid_out(dynamic, self.in_shardings, "in_shardings",
                                "positional arguments tuple (static ones excepted)", _place))
        return tuple(a if i in static else next(placed) for i, a in enumerate(args))


def _constrained(fun: Callable, out_shardings: Any) -> Callable:
    @functools.wraps(fun)
    def constrained(*args: Any, **kwargs: Any) -> Any:
        return _laid_out(fun(*args, **kwargs), out_shardings, "out_shardings",
                         "function's output", _lay_out)
    return constrained


def _lay_out(x: Any, sharding: Any) -> Any:
    """A result laid out by its ``out_shardings`` entry, which its type keeps as given."""
    return lay_out(x, as_sharding(sharding, "jit"))


def _place(x: Any, sharding: Any) -> Any:
    """An argument placed by its ``in_shardings`` entry. A sharded array laid out otherwise
    is an error, as in JAX (it would be moved without a word)."""
    sharding = as_sharding(sharding, "jit")
    if isinstance(x, ShardedArray) and x.sharding != sharding:
        raise ValueError(f"Sharding passed to jit does not match the sharding on the respective "
                         f"arg. Got jit sharding: {sharding},\narg sharding: {x.sharding}. "
                         f"Move the argument first (jax.device_put(x, sharding)).")
    return device_put(x, sharding)


def _laid_out(tree: Any, prefix: Any, what: str, of: str, place: Callable) -> Any:
    """Each leaf of ``tree`` placed by its sharding in ``prefix`` (one sharding for all, or a
    pytree prefix of ``tree``; ``None`` leaves a leaf as it is)."""
    def is_leaf(x: Any) -> bool:
        return x is None or isinstance(x, (NamedSharding, P))
    treedef = tree_structure(prefix, is_leaf=is_leaf)
    try:
        subtrees = treedef.flatten_up_to(tree)
    except (ValueError, TypeError) as err:
        raise ValueError(f"jit {what} specification must be a tree prefix of the {of}: got "
                         f"{prefix!r} for {tree_structure(tree)}. {err}") from None
    shardings = tree_flatten(prefix, is_leaf=is_leaf)[0]
    return treedef.unflatten([sub if s is None else tree_map(lambda x, s=s: place(x, s), sub)
                              for s, sub in zip(shardings, subtrees)])


def jit(fun: Callable = _DECORATOR, *, in_shardings: Any = _UNSPECIFIED,
        out_shardings: Any = _UNSPECIFIED,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None,
        keep_unused: bool = False, device: Any = None, backend: str | None = None,
        inline: bool = False, compiler_options: dict[str, Any] | None = None) -> Any:
    """Stage 2's ``jit``; over sharded arrays the program is partitioned and runs on every
    device of the mesh (see ``partitioner.py`` and ``runtime.py``). ``in_shardings`` places
    the positional arguments, ``out_shardings`` lays out the results (see
    :class:`ShardingsJitted`). ``keep_unused``, ``inline`` and ``compiler_options`` are
    accepted and change nothing here (no XLA to tell)."""
    del keep_unused, inline, compiler_options
    if device is not None:
        raise NotImplementedError("jit(device=...) is deprecated in JAX and not supported "
                                  "here: place the arguments with jax.device_put instead.")
    if fun is _DECORATOR:  # jit(None) is an error, as in JAX
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, backend=backend)
    options = (static_argnums, static_argnames, donate_argnums, backend, donate_argnames)
    if in_shardings is _UNSPECIFIED and out_shardings is _UNSPECIFIED:
        return ShardedJitted(fun, *options)
    return ShardingsJitted(fun, in_shardings, out_shardings, *options)
