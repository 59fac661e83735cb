"""Stage 4's names as JAX 0.10.2 writes them: a mesh's ``repr`` is JAX's, axis names
written with ``repr``. Its short form (``str``, which jaxprs and reports show) is JAX's for
plain names; a name with a quote or a newline is written with ``repr`` there too, where JAX
writes it bare between quotes, so that it stays one token. Such a name goes through ``jit``,
``shard_map`` and the per-device programs as plain data (every generated kernel still parses,
every value is right). ``shard_map`` rejects what is not a function, as JAX does.
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from stage4_sharding.sharding import NamedSharding, P

import stage4_sharding as ours
from stage2_jit import runtime
from stage4_sharding import numpy as jnp

real = pytest.importorskip("jax")
from jax.sharding import AxisType  # noqa: E402

# Everything that could end a line of source or a string literal.
HOSTILE = 'odd\n"""\nraise SystemExit(3)  # \'\r\\'
NAMES = [("data",), ("data", "model"), (HOSTILE,), ("it's", 'say "hi"')]


def meshes(names: tuple[str, ...]):
    """The same one-device mesh in JAX and here (JAX may have a single CPU device)."""
    shape = (1,) * len(names)
    theirs = real.make_mesh(shape, names, axis_types=(AxisType.Explicit,) * len(names),
                            devices=real.devices()[:1])
    return theirs, ours.make_mesh(shape, names, devices=ours.devices()[:1])


@pytest.mark.parametrize("names", NAMES, ids=["one axis", "two axes", "hostile", "quotes"])
def test_mesh_repr_and_str_are_jax_s(names):
    theirs, mine = meshes(names)
    assert repr(mine) == repr(theirs)
    # JAX's short form quotes each name as '{name}', unescaped; ours writes repr(name), the
    # same text for a plain name (a difference kept on purpose: see the module docstring).
    expected_str = str(theirs)
    for name in names:
        expected_str = expected_str.replace(f"'{name}'", repr(name))
    assert str(mine) == expected_str
    assert str(NamedSharding(mine, P(*names))).startswith(f"NamedSharding(mesh={mine},")
    if names == ("data",):
        assert str(mine) == str(theirs)


@pytest.fixture
def kernel_sources(monkeypatch):
    """The source of every CPU kernel loaded while the test runs."""
    sources: list[str] = []
    load = runtime.load_kernel_module

    def recording(source: str):
        sources.append(source)
        return load(source)

    monkeypatch.setattr(runtime, "load_kernel_module", recording)
    return sources


def test_a_hostile_axis_name_is_data_everywhere(kernel_sources):
    mesh = ours.make_mesh((8,), (HOSTILE,))
    values = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    x = ours.device_put(values, NamedSharding(mesh, P(HOSTILE)))
    assert str(ours.typeof(x)) == f"float32[8@{HOSTILE},2]"  # JAX writes names bare here

    summed = ours.jit(lambda v: (jnp.sin(v) * 2.0).sum(axis=0))(x)
    total = ours.jit(ours.shard_map(lambda b: ours.lax.psum(b.sum(), HOSTILE), mesh=mesh,
                                    in_specs=P(HOSTILE), out_specs=P()))(x)
    want = real.numpy.sin(values) * 2.0
    np.testing.assert_allclose(np.asarray(summed), np.asarray(want.sum(axis=0)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(total), values.sum(), rtol=1e-6)

    assert kernel_sources, "no kernel was generated: the test would check nothing"
    for source in kernel_sources:
        tree = ast.parse(source)
        assert not any(isinstance(node, ast.Raise) for node in ast.walk(tree)), source
    text = ours.jit(lambda v: v * 2.0).lower(x).as_text()
    assert f"per-device program on {mesh}\n" in text and repr(HOSTILE) in str(mesh)


def test_shard_map_of_a_non_callable_raises_jax_s_class():
    mesh = ours.make_mesh((8,), ("data",))
    with pytest.raises(TypeError) as mine:
        ours.shard_map(3, mesh=mesh, in_specs=P("data"), out_specs=P())
    with pytest.raises(TypeError) as theirs:
        real.shard_map(3, mesh=meshes(("data",))[0], in_specs=None, out_specs=None)
    assert type(mine.value) is type(theirs.value) is TypeError
    assert "callable" in str(mine.value)


@pytest.mark.parametrize("entries", [(), ("data",), ("data", None), (None, "model"),
                                     (("data", "model"),), (None, ("data", "model"), None)])
def test_partition_spec_repr_is_jax_s(entries):
    from jax.sharding import PartitionSpec as TheirP
    assert repr(P(*entries)) == repr(TheirP(*entries)) == str(P(*entries))
