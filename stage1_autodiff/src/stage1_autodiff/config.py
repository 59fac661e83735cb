"""Global configuration: ``jax.config.update("jax_enable_x64", True)``.

Options are declared with :meth:`Config.define`, so later stages add their own
(``jax_num_cpu_devices`` in stage 4) next to the code that reads them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any


class Config:
    """A registry of named options, each with a default and a docstring.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.config.jax_enable_x64
        False
    """

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._docs: dict[str, str] = {}
        self._hooks: dict[str, list[Callable[[Any], None]]] = {}
        self._tracing: list[str] = []
        self.trace_context: tuple = ()  # the values of the options that change tracing

    def define(self, name: str, default: Any, doc: str,
               on_update: Callable[[Any], None] | None = None,
               changes_tracing: bool = False) -> None:
        """Declares option ``name``; an environment variable ``NAME`` overrides ``default``.
        ``on_update`` sees each new value first, and may refuse it by raising.
        ``changes_tracing``: the option changes what a traced program is (``jax_enable_x64``),
        so its value is part of ``trace_context``, which ``jit``'s cache keys include."""
        env = os.environ.get(name.upper())
        if env is not None and isinstance(default, bool):
            default = env.lower() in ("1", "true", "yes", "on")
        elif env is not None:
            default = env if default is None else type(default)(env)
        self._values[name] = self.__dict__[name] = default  # (read as a plain attribute)
        self._docs[name] = doc
        self._hooks[name] = [] if on_update is None else [on_update]
        if changes_tracing:
            self._tracing.append(name)
            self._update_trace_context()

    def on_update(self, name: str, hook: Callable[[Any], None]) -> None:
        """Adds ``hook`` to what sees option ``name``'s new values (a later stage reacts to
        an option of an earlier one: stage 2 to ``jax_platforms``)."""
        self._hooks[name].append(hook)

    def update(self, name: str, value: Any) -> None:
        """Sets option ``name`` to ``value``.

        Example:
            >>> import stage1_autodiff as jax
            >>> jax.config.update("jax_enable_x64", False)
        """
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}.")
        for hook in self._hooks[name]:
            hook(value)
        self._values[name] = self.__dict__[name] = value
        if name in self._tracing:
            self._update_trace_context()

    def _update_trace_context(self) -> None:
        self.trace_context = tuple(self._values[n] for n in self._tracing)

    def __getattr__(self, name: str) -> Any:  # only for names that are not options
        raise AttributeError(f"Unrecognized config option: {name!r}.")


_UNSET = object()


def one_of(name: str, *choices: Any) -> Callable[[Any], None]:
    """An ``on_update`` check: option ``name`` takes one of ``choices``."""
    def check(value: Any) -> None:
        if value not in choices:
            raise ValueError(f"{name} takes one of {list(choices)}, not {value!r}.")
    return check


class State:
    """An option as JAX's ``jax.enable_x64`` is: ``with jax.enable_x64(True): ...`` sets it
    for the block and then restores it; ``jax.enable_x64.value`` reads it.

    Example:
        >>> import stage1_autodiff as jax
        >>> with jax.enable_x64(True):
        ...     print(jax.numpy.array(1.0).dtype)
        float64
    """

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def value(self) -> Any:
        return getattr(config, self.name)

    @contextlib.contextmanager
    def __call__(self, value: Any = _UNSET) -> Iterator[None]:
        if value is _UNSET:  # ``with jax.debug_nans():`` turns a True/False option on
            if not isinstance(self.value, bool):
                raise TypeError(f"with jax.{self.name.removeprefix('jax_')}(...) needs the "
                                f"value to set {self.name} to for the block.")
            value = True
        previous = self.value
        config.update(self.name, value)
        try:
            yield
        finally:
            config.update(self.name, previous)


config = Config()
config.define("jax_enable_x64", False,
              "Enables 64-bit types (float64, int64). Off: they are canonicalized to 32 bits.",
              changes_tracing=True)
enable_x64 = State("jax_enable_x64")
"""``jax_enable_x64`` for a block: ``with jax.enable_x64(True): ...``."""


def _check_precision(value: Any) -> None:
    from .precision import canonicalize_precision
    canonicalize_precision(value)


config.define("jax_default_matmul_precision", None,
              "The precision of products that give none; checked, and it changes nothing here "
              "(see lax.Precision).", on_update=_check_precision)
default_matmul_precision = State("jax_default_matmul_precision")
"""``jax_default_matmul_precision`` for a block: ``with jax.default_matmul_precision("highest")``
(a name or ``lax.Precision`` is checked; the products are the same)."""


PLATFORMS: dict[str, Callable[[], str | None]] = {"cpu": lambda: None}
"""The platforms ``jax_platforms`` may name, each with why it cannot run here (None: it can).
Stage 1 runs everything on the host's CPU; stage 2 adds ``cuda`` (also spelled ``gpu``)."""


def _check_platforms(value: Any) -> None:
    if value is None or value == "":
        return
    if not isinstance(value, str):
        raise TypeError(f"A platform list is a string such as 'cpu' or 'cuda,cpu', not {value!r}.")
    for name in value.split(","):
        if name not in PLATFORMS:
            raise RuntimeError(f"Unable to initialize backend {name!r}: this library has the "
                               f"platforms {', '.join(PLATFORMS)}. Name those, e.g. 'cpu'.")
        reason = PLATFORMS[name]()
        if reason is not None:
            raise RuntimeError(f"Unable to initialize backend {name!r}: {reason}.")


config.define("jax_platforms", None,
              "The platforms to use, best first, e.g. 'cpu' or 'cuda,cpu'; the first is the "
              "default. Each is checked when it is set.", on_update=_check_platforms)
config.define("jax_platform_name", "",
              "The default platform, e.g. 'cpu' (the older spelling of jax_platforms).",
              on_update=_check_platforms)


def _check_bool(name: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"{name} takes True or False, not {value!r}.")
    return check


# Options that JAX programs set and that choose nothing here (each on "Differences from JAX").
config.define("jax_check_tracer_leaks", False,
              "JAX checks for a leaked tracer when its trace ends. Here a leaked tracer is "
              "reported when it is used (UnexpectedTracerError), with this option on or off.",
              on_update=_check_bool("jax_check_tracer_leaks"))
# (random.py defines these two options; a State needs only the name)
threefry_partitionable = State("jax_threefry_partitionable")
"""``jax_threefry_partitionable`` for a block: ``with jax.threefry_partitionable(False): ...``."""
default_prng_impl = State("jax_default_prng_impl")
"""``jax_default_prng_impl`` for a block (``'threefry2x32'``, the one generator here)."""
check_tracer_leaks = State("jax_check_tracer_leaks")
"""``jax_check_tracer_leaks`` for a block (accepted; it changes nothing here)."""


def checking_leaks() -> Any:
    """``with jax.checking_leaks(): ...``: ``jax_check_tracer_leaks`` on for the block."""
    return check_tracer_leaks(True)


config.define("jax_traceback_filtering", "auto",
              "JAX hides its own frames from tracebacks. Here every frame is kept (they are the "
              "course's code), whatever the value.",
              on_update=one_of("jax_traceback_filtering", "off", "tracebackhide",
                               "remove_frames", "quiet_remove_frames", "auto"))
config.define("jax_use_shardy_partitioner", True,
              "Chooses between XLA's two SPMD partitioners. Stage 4 has one, whatever the value.",
              on_update=_check_bool("jax_use_shardy_partitioner"))



config.define("jax_default_device", None,
              "The device that new arrays, device_put without a device, and jit calls of "
              "arrays that name none go to: a device, a platform name ('cpu'), or None (the "
              "default backend's first device). core.py checks the values.")
default_device = State("jax_default_device")
"""``jax_default_device`` for a block: ``with jax.default_device(jax.devices("cpu")[0]): ...``
(or a platform name, ``"cpu"``)."""
