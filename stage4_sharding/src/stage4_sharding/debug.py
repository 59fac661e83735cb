"""``jax.debug``: stage 3's ``print`` and ``callback``; ``visualize_array_sharding`` and
``visualize_sharding`` (where JAX 0.10 has them: ``jax.debug``), and
``inspect_array_sharding``."""

from collections.abc import Callable
from typing import Any

from stage1_autodiff.core import Array, SingleDeviceSharding, Tracer, asarray
from stage1_autodiff.tree_util import tree_leaves
from stage3_vmap.debug import callback, log, print  # noqa: F401, A004

from .arrays import visualize_array_sharding, visualize_sharding  # noqa: F401
from .mesh import devices


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:  # noqa: F811
    """Calls ``callback`` with the sharding of each array of the pytree ``value``. Under
    ``jit`` it is called while tracing, so once per compilation as in JAX, with the sharding
    the value's type says; outside, with the array's own.

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> x = jax.device_put(np.zeros(8), NamedSharding(jax.make_mesh((8,), ("x",)), P("x")))
        >>> specs = []
        >>> _ = jax.jit(lambda a: jax.debug.inspect_array_sharding(
        ...     a * 2, callback=lambda s: specs.append(s.spec)))(x)
        >>> specs
        [P('x',)]
    """
    for leaf in tree_leaves(value):
        if isinstance(leaf, Tracer):
            sharding = leaf.aval.sharding
        else:
            sharding = (leaf if isinstance(leaf, Array) else asarray(leaf)).sharding
        callback(sharding if sharding is not None else SingleDeviceSharding(devices()[0]))
