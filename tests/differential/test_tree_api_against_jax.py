"""The rest of ``jax.tree`` and ``jax.tree_util`` that programs use, against JAX: classes
registered through their own methods (``register_pytree_node_class``), static classes and
dataclass fields, ``Partial``, the reductions, ``broadcast`` and ``transpose``. Each was
missing (an AttributeError under the import swap)."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator

import numpy as np
import pytest

real = pytest.importorskip("jax")

import stage4_sharding as ours  # noqa: E402


def _plain(tree):
    return real.tree.map(lambda a: np.asarray(a).tolist() if hasattr(a, "shape") else a, tree)


def _both(f):
    """``f(ours)`` and ``f(jax)``, arrays as lists: equal when the APIs agree."""
    return _plain(f(ours)), _plain(f(real))


def _node_class(lib):
    @lib.tree_util.register_pytree_node_class
    class Scaled:
        def __init__(self, value, unit):
            self.value, self.unit = value, unit

        def tree_flatten(self):
            return (self.value,), self.unit

        @classmethod
        def tree_unflatten(cls, unit, children):
            return cls(children[0], unit)

    out = lib.jit(lambda s: Scaled(s.value * 2, s.unit))(Scaled(np.ones(2, np.float32), "m"))
    grads = lib.grad(lambda s: (s.value ** 2).sum())(Scaled(np.ones(2, np.float32), "m"))
    paths = [(lib.tree_util.keystr(path), lib.tree_util.keystr(path, simple=True))
             for path, _ in lib.tree.leaves_with_path([Scaled(1, "a"), {"k": Scaled(2, "b")}])]
    return (out.value, out.unit, grads.value, grads.unit, len(lib.tree.leaves(Scaled(1, "a"))),
            paths)  # a node registered without keys: its children's keys print as JAX's


def _static_dataclass(lib):
    @lib.tree_util.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        repeat: int = lib.tree.static(default=3)

    @lib.tree_util.register_static
    class Unit:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Unit)

    return (lib.tree.leaves(Layer(np.ones(1, np.float32))),
            lib.jit(lambda c: c.w * c.repeat)(Layer(np.ones(2, np.float32), 4)),
            lib.tree.leaves([Unit(), 2]))


def _partial(lib):
    Partial = lib.tree_util.Partial
    add = Partial(operator.add, np.float32(1.0))
    nested = Partial(Partial(operator.add, 1.0), 2.0)  # the inner one stays static
    return (lib.tree.leaves(add), lib.jit(lambda p: p(2.0))(add), lib.tree.leaves(nested),
            nested(), lib.grad(lambda p: p(3.0))(Partial(operator.mul, 2.0)).args)


def _reductions(lib):
    tree = [1, (2, 3), {"a": 4, "b": 5}]
    return (lib.tree.all([True, {"a": 1}]), lib.tree.all([1, 0]), lib.tree.all([]),
            lib.tree.reduce(operator.add, tree), lib.tree.reduce(operator.add, [], 5),
            lib.tree.reduce_associative(operator.add, tree),
            lib.tree.reduce_associative(operator.add, [], identity=0),
            lib.tree_util.tree_reduce(lambda a, b: a * b, tree, 1))


def _structures(lib):
    pairs = [(1, 2), (3, 4), (5, 6)]
    return (lib.tree.broadcast([1, {"k": 2}], [(0, 0), {"k": [0, 0]}]),
            lib.tree.transpose(lib.tree.structure([0] * 3), lib.tree.structure((0, 0)), pairs),
            lib.tree.transpose(lib.tree.structure([0] * 3), None, pairs),
            [(lib.tree_util.keystr(p), v) for p, v in
             lib.tree.flatten_with_path({"a": (1, 2)})[0]],
            [lib.tree_util.keystr(p) for p, _ in lib.tree.leaves_with_path([1, [2]])],
            lib.tree.map_with_path(lambda p, x: lib.tree_util.keystr(p), {"a": [1]}),
            [str(c) for c in lib.tree_util.treedef_children(lib.tree.structure((1, [2])))],
            str(lib.tree_util.treedef_tuple([lib.tree.structure(1), lib.tree.structure([1])])),
            lib.tree_util.flatten_one_level({"b": 1, "a": (2,)}))


def _registry(lib):
    """``flatten_one_level_with_keys``, ``is_tree_node`` and ``default_registry``."""
    t, registry = lib.tree_util, lib.tree_util.default_registry
    point = collections.namedtuple("Point", "x y")
    keyed = t.flatten_one_level_with_keys({"a": [1, 2], "b": point(3, 4)})
    return ([(str(key), child) for key, child in keyed[0]], keyed[1],
            [c for _, c in t.flatten_one_level_with_keys(point(5, 6))[0]],  # (keys below)
            t.flatten_one_level_with_keys(None),
            [t.is_tree_node(typ) for typ in (list, tuple, dict, type(None), int, point,
                                             collections.OrderedDict, np.ndarray, [1], 3)],
            (lambda flat: (flat[0], str(flat[1])))(registry.flatten([1, None, (2, 3)])),
            (lambda flat: (flat[0], str(flat[1])))(registry.flatten([1, 2], lambda x: x == 1)),
            [(t.keystr(p), v) for p, v in registry.flatten_with_path([1, {"a": 2}])[0]],
            registry.flatten_one_level([1, (2, 3)]), registry.flatten_one_level(1),
            registry.flatten_one_level_with_keys(1), registry.is_node(dict))


@pytest.mark.parametrize("case", [_node_class, _static_dataclass, _partial, _reductions,
                                  _structures, _registry], ids=lambda f: f.__name__[1:])
def test_as_jax(case):
    mine, theirs = _both(case)
    assert mine == theirs


@pytest.mark.parametrize("call, error", [
    (lambda lib: lib.tree.reduce(operator.add, []), TypeError),
    (lambda lib: lib.tree.reduce_associative(operator.add, []), TypeError),
    (lambda lib: lib.tree.broadcast([1, 2], [0]), ValueError),
    (lambda lib: lib.tree.transpose(lib.tree.structure([0, 0]), lib.tree.structure((0, 0)),
                                    [(1, 2), (3,)]), TypeError),
    (lambda lib: lib.tree_util.flatten_one_level(1), ValueError),
    (lambda lib: lib.tree_util.flatten_one_level_with_keys(1.0), ValueError),
    (lambda lib: lib.tree_util.is_tree_node(None), TypeError),
])
@pytest.mark.parametrize("lib", [ours, real], ids=["ours", "jax"])
def test_errors_as_jax(lib, call, error):
    with pytest.raises(error):
        call(lib)


def test_partial_is_a_partial():
    p = ours.tree_util.Partial(functools.partial(operator.sub, 10), 3)
    assert isinstance(p, functools.partial) and p() == 7
