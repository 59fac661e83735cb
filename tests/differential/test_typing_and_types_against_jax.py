"""The types JAX code annotates and checks with, against JAX: ``jax.typing.ArrayLike`` and
``DTypeLike``, ``jax.Device`` and ``jax.sharding.Sharding``. Each was missing (an
AttributeError, or an ImportError of ``jax.typing``)."""

import typing

import pytest

real = pytest.importorskip("jax")

from stage4_sharding.typing import ArrayLike, DTypeLike  # noqa: E402

import stage4_sharding as ours  # noqa: E402


def _accepted(union):
    """The names of the types in ``union`` (JAX's Array's ``__name__`` is its full path)."""
    return {getattr(t, "__name__", str(t)).rsplit(".", 1)[-1] for t in typing.get_args(union)}


def test_array_like_and_dtype_like_accept_what_jax_s_do():
    import jax.typing
    assert _accepted(ArrayLike) == _accepted(jax.typing.ArrayLike)
    assert _accepted(DTypeLike) == _accepted(jax.typing.DTypeLike)


@pytest.mark.parametrize("lib", [ours, real], ids=["ours", "jax"])
def test_devices_and_shardings_are_instances_of_the_types(lib):
    mesh = lib.make_mesh((2,), ("x",))
    split = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x"))
    assert isinstance(lib.devices()[0], lib.Device)
    assert isinstance(split, lib.sharding.Sharding)
    assert isinstance(lib.numpy.ones(2).sharding, lib.sharding.Sharding)
    assert not isinstance(lib.sharding.PartitionSpec("x"), lib.sharding.Sharding)
    assert not isinstance("cpu", lib.Device)
