"""Global configuration: ``jax.config.update("jax_enable_x64", True)``.

Options are declared with :meth:`Config.define`, so later stages add their own
(``jax_num_cpu_devices`` in stage 4) next to the code that reads them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
        self._hooks: dict[str, Callable[[Any], None]] = {}

    def define(self, name: str, default: Any, doc: str,
               on_update: Callable[[Any], None] | None = None) -> None:
        """Declares option ``name``; an environment variable ``NAME`` overrides ``default``."""
        env = os.environ.get(name.upper())
        if env is not None and isinstance(default, bool):
            default = env.lower() in ("1", "true", "yes", "on")
        elif env is not None:
            default = type(default)(env)
        self._values[name] = default
        self._docs[name] = doc
        if on_update is not None:
            self._hooks[name] = on_update

    def update(self, name: str, value: Any) -> None:
        """Sets option ``name`` to ``value``.

        Example:
            >>> import stage1_autodiff as jax
            >>> jax.config.update("jax_enable_x64", False)
        """
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}.")
        self._values[name] = value
        if name in self._hooks:
            self._hooks[name](value)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"Unrecognized config option: {name!r}.")


config = Config()
config.define("jax_enable_x64", False,
              "Enables 64-bit types (float64, int64). Off: they are canonicalized to 32 bits.")
