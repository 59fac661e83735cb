"""``jax.nn.initializers`` for stage 4: stage 1's, whose initializers take ``out_sharding=``
(a ``NamedSharding``, or a spec on the mesh ``set_mesh`` set) and lay the weights out over
the mesh (replicated when not given), as ``jax.random``'s samplers do here.

``orthogonal`` and ``delta_orthogonal`` refuse ``out_sharding``, as JAX's do.

Example:
    >>> import stage4_sharding as jax
    >>> from stage4_sharding.sharding import NamedSharding, P
    >>> mesh = jax.make_mesh((8,), ("data",))
    >>> init = jax.nn.initializers.glorot_normal()
    >>> w = init(jax.random.key(0), (16, 4), out_sharding=NamedSharding(mesh, P("data")))
    >>> print(jax.typeof(w))
    float32[16@data,4]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from stage1_autodiff.nn_initializers import (  # noqa: F401 (JAX's names, unchanged)
    Initializer,
    delta_orthogonal,
    orthogonal,
)

from stage1_autodiff import nn_initializers as _stage1

from .out_sharding import with_out_sharding


def _laid_out(factory: Callable[..., Initializer]) -> Callable[..., Initializer]:
    """``factory`` whose initializers take ``out_sharding``."""
    @functools.wraps(factory)
    def make(*args: Any, **kwargs: Any) -> Initializer:
        return with_out_sharding(factory(*args, **kwargs))
    return make


zeros = with_out_sharding(_stage1.zeros)
ones = with_out_sharding(_stage1.ones)
constant = _laid_out(_stage1.constant)
uniform = _laid_out(_stage1.uniform)
normal = _laid_out(_stage1.normal)
truncated_normal = _laid_out(_stage1.truncated_normal)
variance_scaling = _laid_out(_stage1.variance_scaling)
glorot_uniform = xavier_uniform = _laid_out(_stage1.glorot_uniform)
glorot_normal = xavier_normal = _laid_out(_stage1.glorot_normal)
lecun_uniform = _laid_out(_stage1.lecun_uniform)
lecun_normal = _laid_out(_stage1.lecun_normal)
he_uniform = kaiming_uniform = _laid_out(_stage1.he_uniform)
he_normal = kaiming_normal = _laid_out(_stage1.he_normal)
