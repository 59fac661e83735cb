"""``out_sharding=`` for random sampling (``jax.random.normal``, ...) and the initializers
of ``jax.nn.initializers``. (The creation functions, ``jnp.zeros``, ``jnp.arange``, ..., take
it from stage 1, through ``arrays.place``.)

Their results are replicated unless asked otherwise, as in JAX's explicit mode. Given
``out_sharding``, the value is made and then resharded: each device keeps its block, which
moves no data (a ``shard_slice`` in the per-device program).

NB: JAX passes ``out_sharding`` into the primitives themselves (``iota``, ``broadcast_in_dim``,
the random bits), so each device computes only its block.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .reshard import reshard


def with_out_sharding(fun: Callable) -> Callable:
    """``fun`` with an ``out_sharding`` keyword: a ``NamedSharding`` or a spec on the mesh
    ``set_mesh`` set."""
    @functools.wraps(fun)
    def wrapped(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        out = fun(*args, **kwargs)
        return out if out_sharding is None else reshard(out, out_sharding)
    wrapped.__doc__ = (fun.__doc__ or "") + (
        "\n\n    Stage 4: ``out_sharding`` lays the result out over the mesh (replicated "
        "when not given).")
    signature = inspect.signature(fun)  # what help() and inspect show: the new keyword too
    params = list(signature.parameters.values())
    if "out_sharding" in signature.parameters:
        return wrapped
    out_sharding = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                     default=None)
    at = len(params) - (params and params[-1].kind is inspect.Parameter.VAR_KEYWORD)
    wrapped.__signature__ = signature.replace(parameters=[*params[:at], out_sharding,
                                                          *params[at:]])
    return wrapped
