"""Arrays to and from host data (bytes, strings, ``.npy`` files, DLPack capsules), and
NumPy's printing options. These run on the host, once: outside any transformation, or with
concrete inputs.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.fromstring("1 2 3", dtype=int, sep=" ")
    Array([1, 2, 3], dtype=int32)
"""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np

from .. import dtypes
from .creation import asarray

# NumPy's own, as JAX exports them: they print, save or warn about host arrays (ours turn
# into NumPy arrays through __array__).
array_repr, array_str = np.array_repr, np.array_str
save, savez = np.save, np.savez
ComplexWarning = np.exceptions.ComplexWarning


def frombuffer(buffer: bytes | Any, dtype: Any = float, count: int = -1, offset: int = 0):
    """The array whose bytes are ``buffer`` (from ``offset``, ``count`` elements of
    ``dtype``; all by default).

    Example:
        >>> import numpy as np, stage1_autodiff.numpy as jnp
        >>> jnp.frombuffer(np.array([1.5, 2.5], np.float32).tobytes(), dtype=jnp.float32)
        Array([1.5, 2.5], dtype=float32)
    """
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str):
    """The numbers written in ``string``, separated by ``sep``."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _impure(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"jnp.{name}() is not implemented: it consumes an iterator or file, a side effect "
        f"that a transformed function must not have. Use jnp.asarray(np.{name}(...)) "
        f"outside the transformed function instead.")


def fromiter(*args: Any, **kwargs: Any):
    """Refused, as in JAX (reading an iterator is a side effect): build the array with
    ``jnp.asarray(np.fromiter(...))``."""
    raise _impure("fromiter")


def fromfile(*args: Any, **kwargs: Any):
    """Refused, as in JAX (reading a file is a side effect): load it with
    ``jnp.asarray(np.fromfile(...))``."""
    raise _impure("fromfile")


def load(file: IO[bytes] | str | os.PathLike[Any], *args: Any, **kwargs: Any):
    """An array from a ``.npy`` file (NumPy's ``load``), as our array when its dtype is
    one we have (bfloat16 is saved as raw 2-byte values, and read back as bfloat16)."""
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == "V2":
        out = out.view(dtypes.bfloat16)
    try:
        return asarray(out)
    except (TypeError, ValueError):  # a dtype we do not have: NumPy's array as it is
        return out


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None):
    """An array from an object with a DLPack capsule (``__dlpack__``), through NumPy: on the
    host, so ``device`` must be None."""
    if device is not None:
        raise NotImplementedError("from_dlpack: a device cannot be chosen here; arrays live "
                                  "on the host. Pass device=None.")
    return asarray(np.from_dlpack(x, copy=copy))


def printoptions(*args: Any, **kwargs: Any):
    """NumPy's ``printoptions`` context manager (it sets how arrays print)."""
    return np.printoptions(*args, **kwargs)


def get_printoptions() -> dict[str, Any]:
    """NumPy's current printing options."""
    return np.get_printoptions()


def set_printoptions(*args: Any, **kwargs: Any) -> None:
    """Sets NumPy's printing options (which ours use too)."""
    return np.set_printoptions(*args, **kwargs)
