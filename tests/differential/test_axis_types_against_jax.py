"""Switching mesh axis types, against JAX 0.10.2: ``jax.sharding.auto_axes``,
``explicit_axes``, ``get_abstract_mesh``, ``use_abstract_mesh`` and ``AbstractMesh``, as
JAX's sharding tutorial uses them; ops on a mesh whose axes are of both types; and
``device_put`` from one mesh to another. Types are compared where every axis they could
name is ``Explicit``: on ``Auto`` axes a layout shows in the type here and not in JAX's (the
Differences page says so)."""

import numpy as np
import pytest
from oracle import assert_raises_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

ROWS = np.arange(16.0, dtype=np.float32).reshape(4, 4)


def _setup(jax):
    """A 4x2 Explicit mesh, set, and two arrays split so that their sum is ambiguous."""
    S = jax.sharding  # noqa: N806
    mesh = jax.make_mesh((4, 2), ("X", "Y"))
    jax.sharding.set_mesh(mesh)
    x = jax.device_put(ROWS, S.NamedSharding(mesh, S.PartitionSpec("X", None)))
    y = jax.device_put(ROWS * 2, S.NamedSharding(mesh, S.PartitionSpec(None, "X")))
    return S, S.PartitionSpec, mesh, x, y


def _case_names(make) -> list[str]:
    """The names of ``make(ours)``'s cases, made without leaving its mesh set (collection
    runs this before any test, and a mesh set then would reach other modules' tests)."""
    with ours.sharding.set_mesh(None):
        made = make(ours)
    return list(made[1] if isinstance(made, tuple) else made)


@pytest.fixture(autouse=True)
def no_mesh_after():
    yield
    ours.sharding.set_mesh(None)
    real.sharding.set_mesh(None)


def _auto_cases(jax):
    S, P, mesh, x, y = _setup(jax)  # noqa: N806
    seen = []

    @S.auto_axes
    def add(a, b):
        seen.append(repr(S.get_abstract_mesh()))
        return a + b

    def typed(tree):
        return [str(jax.typeof(leaf)) for leaf in jax.tree_util.tree_leaves(tree)], tree

    return seen, {
        "called with out_sharding": lambda: typed(add(x, y, out_sharding=P("X", None))),
        "under jit": lambda: typed(jax.jit(lambda a, b: add(a, b, out_sharding=P(None, "Y")))(
            x, y)),
        "out_sharding when decorating": lambda: typed(S.auto_axes(
            lambda a, b: a * b, out_sharding=P(None, "X"))(x, y)),
        "one axis": lambda: typed(S.auto_axes(
            lambda a, b: (seen.append(repr(S.get_abstract_mesh())), a + b)[1], axes="X",
            out_sharding=P("X"))(x, y)),
        "a pytree of out_shardings": lambda: typed(S.auto_axes(
            lambda a, b: (a + b, a * b), out_sharding=(P("X"), P(None, "X")))(x, y)),
        "one out_sharding for every result": lambda: typed(S.auto_axes(
            lambda a, b: {"sum": a + b, "product": a * b}, out_sharding=P("X"))(x, y)),
        "grad through it": lambda: typed(jax.grad(lambda a: S.auto_axes(
            lambda a: jax.numpy.sum(a * a * 3.0), out_sharding=P())(a))(x)),
        "vmap of it": lambda: typed(jax.vmap(S.auto_axes(lambda a: a * 2, out_sharding=P()))(x)),
        "a mesh context it sees": lambda: (seen, add(x, y, out_sharding=P("X"))),
    }


@pytest.mark.parametrize("name", _case_names(_auto_cases))
def test_auto_axes_as_jax(name):
    got, expected = _auto_cases(ours)[1][name](), _auto_cases(real)[1][name]()
    assert got[0] == expected[0]  # the types of the results (Explicit axes), or the meshes
    for g, e in zip(real.tree_util.tree_leaves(got[1]), real.tree_util.tree_leaves(expected[1])):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)


def _explicit_run(jax):
    S = jax.sharding  # noqa: N806
    P, auto = S.PartitionSpec, S.AxisType.Auto  # noqa: N806
    mesh = jax.make_mesh((4, 2), ("X", "Y"), (auto, auto))
    seen = []

    @S.explicit_axes
    def double(a):
        seen.append((repr(S.get_abstract_mesh()), str(jax.typeof(a))))
        return a * 2

    with S.set_mesh(mesh):
        x = jax.device_put(ROWS, S.NamedSharding(mesh, P("X", "Y")))
        eager = double(x, in_sharding=P("X", "Y"))
        jitted = jax.jit(lambda a: double(jax.numpy.sin(a), in_sharding=P("X", "Y")) + 1)(x)
        one = S.explicit_axes(lambda a: (seen.append(str(jax.typeof(a))), a)[1], axes="Y",
                              in_sharding=P(None, "Y"))(x)
        outer = repr(S.get_abstract_mesh())
    # (with one axis switched, the other's layout is the compiler's choice: values only)
    return seen, outer, [(np.asarray(r), tuple(r.sharding.spec) if r is not one else None)
                         for r in (eager, jitted, one)]


def test_explicit_axes_as_jax():
    got, expected = _explicit_run(ours), _explicit_run(real)
    assert got[0] == expected[0]  # the meshes and types the function saw inside
    assert got[1] == expected[1]
    for (g, g_spec), (e, e_spec) in zip(got[2], expected[2]):
        np.testing.assert_allclose(g, e, rtol=1e-6)
        assert g_spec == e_spec


def _abstract_meshes(jax):
    S = jax.sharding  # noqa: N806
    explicit, auto = S.AxisType.Explicit, S.AxisType.Auto
    none = repr(S.get_abstract_mesh())
    made = S.AbstractMesh((4, 2), ("a", "b"), (explicit, auto))
    mesh = jax.make_mesh((4, 2), ("X", "Y"))
    inside = []
    with S.set_mesh(mesh):
        top = repr(S.get_abstract_mesh())
        jax.jit(lambda: inside.append(repr(S.get_abstract_mesh())))()
        switched = S.AbstractMesh((4, 2), ("X", "Y"), (auto, explicit))

        def zeros():
            with S.use_abstract_mesh(switched) as entered:
                inside.append(repr(entered))
                return jax.numpy.zeros((8, 2), out_sharding=S.PartitionSpec(None, "Y"))
        typed = str(jax.typeof(jax.jit(zeros)()))
    return [none, repr(made), repr(S.AbstractMesh((8,), ("A",))), made.shape, made.size,
            made.axis_sizes, made.empty, made.explicit_axes, made.auto_axes, top, inside,
            typed, mesh.abstract_mesh == S.get_abstract_mesh(), made == S.AbstractMesh(
                (4, 2), ("a", "b"), (explicit, auto))]


def test_abstract_meshes_as_jax():
    got, expected = _abstract_meshes(ours), _abstract_meshes(real)
    got[3], expected[3] = dict(got[3]), dict(expected[3])  # JAX's is an OrderedDict
    assert got == expected


def _mixed_cases(jax):
    S = jax.sharding  # noqa: N806
    P = S.PartitionSpec  # noqa: N806
    mesh = jax.make_mesh((4, 2), ("X", "Y"), (S.AxisType.Auto, S.AxisType.Explicit))
    put = lambda a, spec: jax.device_put(a, S.NamedSharding(mesh, spec))  # noqa: E731
    return {
        "a conflict on an Auto axis computes": lambda: put(ROWS, P("X", None))
        + put(ROWS, P(None, "X")),
        "a conflict on an Explicit axis raises": lambda: put(ROWS, P("Y", None))
        + put(ROWS, P(None, "Y")),
        "both, under jit": lambda: jax.jit(lambda a, b: a * b)(put(ROWS, P("X", "Y")),
                                                              put(ROWS, P("Y", "X"))),
    }


@pytest.mark.parametrize("name", _case_names(_mixed_cases))
def test_a_mesh_of_both_axis_types_as_jax(name):
    outcomes = []
    for jax in (ours, real):
        try:
            outcomes.append(np.asarray(_mixed_cases(jax)[name]()))
        except Exception as error:  # noqa: BLE001 -- the class is compared
            outcomes.append(type(error).__name__)
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        np.testing.assert_array_equal(outcomes[0], outcomes[1])


def test_device_put_from_one_mesh_to_another_as_jax():
    results = []
    for jax in (ours, real):
        S = jax.sharding  # noqa: N806
        x = jax.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4), S.NamedSharding(
            jax.make_mesh((4, 2), ("X", "Y")), S.PartitionSpec("X", "Y")))
        other = jax.make_mesh((8,), ("A",))
        z = jax.device_put(x, S.NamedSharding(other, S.PartitionSpec("A", None)))
        w = S.reshard(x, S.NamedSharding(other, S.PartitionSpec(None, None)))
        results.append([(str(jax.typeof(a)), tuple(a.sharding.spec), np.asarray(a))
                        for a in (z, w)])
    for (g_type, g_spec, g), (e_type, e_spec, e) in zip(*results):
        assert (g_type, g_spec) == (e_type, e_spec)
        np.testing.assert_array_equal(g, e)


def _misuses(jax):
    S, P, mesh, x, y = _setup(jax)  # noqa: N806
    return {
        "auto_axes without out_sharding": (TypeError, lambda: S.auto_axes(lambda a: a)(x)),
        "explicit_axes without in_sharding": (TypeError,
                                              lambda: S.explicit_axes(lambda a: a)(x)),
        "out_sharding naming no axis of the mesh": (
            ValueError, lambda: S.auto_axes(lambda a: a, out_sharding=P("Z"))(x)),
        "use_abstract_mesh of another size": (
            ValueError, lambda: S.use_abstract_mesh(S.AbstractMesh((4,), ("A",))).__enter__()),
    }


@pytest.mark.parametrize("name", _case_names(_misuses))
def test_misuses_raise_as_jax(name):
    assert_raises_as_jax(_misuses, name)
