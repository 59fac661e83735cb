"""Pytrees: nested containers flattened into a list of leaves plus a structure, a PyTreeDef.

Transformations flatten their arguments, work on the flat list, and unflatten the results. A value
is a *node* when its type is registered (tuple, list, dict, None, namedtuples, ``OrderedDict``,
``defaultdict``, anything given to :func:`register_pytree_node`); everything else, arrays
included, is a *leaf*. Only the standard library is used here, because the core imports this.

NB: in JAX the flatten/unflatten machinery is C++ (``jaxlib/xla/pytree.cc``); the Python surface
is ``jax/_src/tree_util.py``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

import numpy as np

PyTree = Any
IsLeaf = Callable[[Any], bool] | None
T = TypeVar("T", bound=type)


# Key entries: one step of a key path, printed the way you would index into the tree.


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Index of a child in a tuple or list; prints as ``[0]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Key of a child in a dict; prints as ``['a']``."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute holding a child (namedtuple or dataclass field); prints as ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Position of a child of a node registered without keys; prints as
    ``[<flat index 0>]``, as JAX's does (its bare index, as ``keystr(simple=True)`` gives it,
    is ``0``)."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key!r}>]"


KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple[KeyEntry, ...]


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path as text; ``simple=True`` prints bare indices, keys and names.

    Example:
        >>> path = (DictKey("b"), SequenceKey(1))
        >>> keystr(path), keystr(path, simple=True, separator="/")
        ("['b'][1]", 'b/1')
    """
    if not simple:
        return separator.join(str(key) for key in keys)
    # Every key entry class has exactly one field: the bare index, key or name.
    bare = [str(getattr(key, dataclasses.fields(key)[0].name)) for key in keys]
    return separator.join(bare)


# The registry: how to take each node type apart (with keys) and put it back together.


class _NodeRule(NamedTuple):
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]]
    unflatten: Callable[[Hashable, Iterable[Any]], Any]


_registry: dict[type, _NodeRule] = {}


def _is_namedtuple_type(node_type: type) -> bool:
    return issubclass(node_type, tuple) and hasattr(node_type, "_fields")


def _namedtuple_flatten(x: tuple) -> tuple[list[tuple[GetAttrKey, Any]], type]:
    # The node data is the class itself, so that unflatten knows what to build.
    return [(GetAttrKey(name), getattr(x, name)) for name in x._fields], type(x)


_namedtuple_rule = _NodeRule(_namedtuple_flatten, lambda cls, children: cls(*children))


def _rule_for_type(node_type: type) -> _NodeRule | None:
    # Lookup is by exact type, as in JAX: a subclass of dict is a leaf unless registered.
    rule = _registry.get(node_type)
    if rule is None and _is_namedtuple_type(node_type):
        rule = _namedtuple_rule
    return rule


# --8<-- [start:register_pytree_node]
def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_with_keys_func: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]]
    | None = None,
) -> None:
    """Makes instances of ``nodetype`` pytree nodes instead of leaves.

    Args:
        nodetype: The class to register.
        flatten_func: Maps an instance to ``(children, aux_data)``. ``aux_data`` must be
            hashable and comparable, because it becomes part of the treedef.
        unflatten_func: Maps ``(aux_data, children)`` back to an instance.
        flatten_with_keys_func: Optional: as ``flatten_func``, with each child paired with
            its key (``((key, child), ...), aux_data``); by default the keys are the
            children's positions (``FlattenedIndexKey``).

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, ab: Pair(*ab))
        >>> tree_leaves([Pair(1, 2), 3])
        [1, 2, 3]
    """

    def flatten_with_keys(x: Any) -> tuple[list[tuple[FlattenedIndexKey, Any]], Hashable]:
        children, aux_data = flatten_func(x)
        keyed = [(FlattenedIndexKey(i), child) for i, child in enumerate(children)]
        return keyed, aux_data

    register_pytree_with_keys(nodetype, flatten_with_keys_func or flatten_with_keys,
                              unflatten_func, flatten_func)


# --8<-- [end:register_pytree_node]


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Like :func:`register_pytree_node`, but ``flatten_with_keys`` returns ``(key, child)`` pairs.

    ``flatten_func`` is accepted for JAX compatibility and unused. NB: JAX uses it for a faster
    ``tree_flatten``; here one recursion serves both kinds of flatten.

    Example:
        >>> class Box:
        ...     def __init__(self, value):
        ...         self.value = value
        >>> register_pytree_with_keys(
        ...     Box, lambda b: ([(GetAttrKey("value"), b.value)], None), lambda _, c: Box(*c))
        >>> keystr(tree_leaves_with_path(Box(1))[0][0])
        '.value'
    """
    del flatten_func
    if nodetype in _registry:
        raise ValueError(
            f"Duplicate registration for pytree node type {nodetype.__name__}: it is already "
            "registered. Register each type once, at import time of the module defining it."
        )
    _registry[nodetype] = _NodeRule(flatten_with_keys, unflatten_func)


def register_dataclass(
    nodetype: T,
    data_fields: Iterable[str] | None = None,
    meta_fields: Iterable[str] | None = None,
    drop_fields: Iterable[str] = (),
) -> T:
    """Registers a class whose ``data_fields`` are children and whose ``meta_fields`` are static.

    Works as a decorator on a dataclass. When both field lists are omitted they come from the
    dataclass: ``init`` fields with ``metadata=dict(static=True)`` are meta, the others data.
    Meta values go into the treedef, so they must be hashable. Instances are rebuilt with
    ``nodetype(**fields)``; ``drop_fields`` are ``init`` fields left to their defaults.

    Example:
        >>> @register_dataclass
        ... @dataclasses.dataclass
        ... class Linear:
        ...     w: float
        ...     name: str = dataclasses.field(default="lin", metadata=dict(static=True))
        >>> tree_leaves(Linear(w=2.0)), tree_structure(Linear(w=2.0)).num_leaves
        ([2.0], 1)
    """
    # --8<-- [start:task1_6]
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass needs both data_fields and meta_fields, or neither.")
    if data_fields is None:
        data_fields, meta_fields = _infer_dataclass_fields(nodetype, drop_fields)
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        _check_dataclass_fields(nodetype, data_fields + meta_fields, drop_fields)

    def flatten_with_keys(x: Any) -> tuple[list[tuple[GetAttrKey, Any]], Hashable]:
        keyed = [(GetAttrKey(name), getattr(x, name)) for name in data_fields]
        return keyed, tuple(getattr(x, name) for name in meta_fields)

    def unflatten(meta: tuple, children: Iterable[Any]) -> Any:
        kwargs = dict(zip(data_fields, children, strict=True))
        kwargs.update(zip(meta_fields, meta, strict=True))
        return nodetype(**kwargs)

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype
    # --8<-- [end:task1_6]


def _infer_dataclass_fields(nodetype: type, drop: Iterable[str]) -> tuple[list, list]:
    # --8<-- [start:task1_6]
    if not dataclasses.is_dataclass(nodetype):
        raise TypeError(f"{nodetype.__name__} is not a dataclass: pass data_fields/meta_fields.")
    fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop]
    meta = [f.name for f in fields if f.metadata.get("static", False)]
    data = [f.name for f in fields if not f.metadata.get("static", False)]
    return data, meta
    # --8<-- [end:task1_6]


def _check_dataclass_fields(nodetype: type, named: tuple, drop: Iterable[str]) -> None:
    # Unflatten calls the constructor, so every init field must be named exactly once.
    init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop)
    if set(named) != init or len(named) != len(set(named)):
        raise ValueError(
            f"register_dataclass({nodetype.__name__}): data_fields + meta_fields are "
            f"{sorted(named)}, but the init fields not in drop_fields are {sorted(init)}. "
            "Name each of those fields exactly once."
        )


# PyTreeDef: the structure of a tree with its leaves taken out.


@dataclasses.dataclass(frozen=True, repr=False)
class PyTreeDef:
    """The structure of a pytree: node types, node data and children, with ``*`` for leaves.

    ``node_type`` is None for a leaf. ``node_data`` is what the node's flatten returned beside
    its children: the sorted keys of a dict, the aux data of a custom node.

    Example:
        >>> treedef = tree_structure((1, {"a": 2, "b": [3, 4]}))
        >>> treedef, treedef.num_leaves, treedef.num_nodes
        (PyTreeDef((*, {'a': *, 'b': [*, *]})), 4, 7)
        >>> treedef.unflatten([5, 6, 7, 8])
        (5, {'a': 6, 'b': [7, 8]})
    """

    node_type: type | None
    node_data: Hashable
    children_defs: tuple[PyTreeDef, ...]

    # A treedef is part of every jit cache key: hash it once, and compare by identity first.
    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        return hash((self.node_type, self.node_data, self.children_defs))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return (self.node_type == other.node_type and self.node_data == other.node_data
                and self.children_defs == other.children_defs)

    def __getstate__(self) -> dict[str, Any]:
        # Not the hash: a type hashes by its address, which another process does not share.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @functools.cached_property  # a treedef is immutable: count once (vmap asks on every call)
    def num_leaves(self) -> int:
        if self.node_type is None:
            return 1
        return sum(child.num_leaves for child in self.children_defs)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(child.num_nodes for child in self.children_defs)

    def children(self) -> list[PyTreeDef]:
        return list(self.children_defs)

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree: PyTree) -> list[Any]:
        """Flattens ``tree`` only as deep as this treedef goes: each ``*`` takes a subtree."""
        subtrees: list[Any] = []
        _flatten_up_to(self, tree, (), subtrees)
        return subtrees

    def __repr__(self) -> str:
        return f"PyTreeDef({_treedef_str(self)})"


_LEAF = PyTreeDef(None, None, ())


def _treedef_str(treedef: PyTreeDef) -> str:
    node_type, node_data = treedef.node_type, treedef.node_data
    children = [_treedef_str(child) for child in treedef.children_defs]
    if node_type is None:
        return "*"
    if node_type is type(None):
        return "None"
    if node_type is tuple:
        trailing_comma = "," if len(children) == 1 else ""
        return f"({', '.join(children)}{trailing_comma})"
    if node_type is list:
        return f"[{', '.join(children)}]"
    if node_type is dict:
        items = [f"{key!r}: {child}" for key, child in zip(node_data, children)]
        return "{" + ", ".join(items) + "}"
    # A namedtuple the user registered explicitly has other node data and prints as custom.
    if _is_namedtuple_type(node_type) and node_data is node_type:
        return f"CustomNode(namedtuple[{node_type.__name__}], [{', '.join(children)}])"
    return f"CustomNode({node_type.__name__}[{node_data!r}], [{', '.join(children)}])"


# --8<-- [start:tree_flatten]
def _flatten(tree: PyTree, is_leaf: IsLeaf, path: KeyPath, out: list) -> PyTreeDef:
    # Depth first, children in the order the node's flatten gives them; appends (path, leaf).
    rule = _rule_for_type(type(tree))
    if (is_leaf is not None and is_leaf(tree)) or rule is None:
        out.append((path, tree))
        return _LEAF
    keyed_children, node_data = rule.flatten_with_keys(tree)
    children_defs = [_flatten(child, is_leaf, path + (key,), out) for key, child in keyed_children]
    return PyTreeDef(type(tree), node_data, tuple(children_defs))


def tree_flatten(tree: PyTree, is_leaf: IsLeaf = None) -> tuple[list[Any], PyTreeDef]:
    """Flattens a pytree into its leaves and its structure.

    ``is_leaf``, if given, makes any value for which it returns True a leaf, node or not.

    Example:
        >>> tree_flatten({"b": [1, 2], "a": None})
        ([1, 2], PyTreeDef({'a': None, 'b': [*, *]}))
    """
    leaves: list[Any] = []
    return leaves, _flatten_leaves(tree, is_leaf, leaves)


# --8<-- [end:tree_flatten]


def _flatten_leaves(tree: PyTree, is_leaf: IsLeaf, out: list) -> PyTreeDef:
    """``_flatten`` without the key paths, which ``tree_flatten`` would drop: every ``grad``,
    ``jit`` and ``vmap`` call flattens its arguments, and making the keys was most of the
    cost (2 µs of a tuple of one leaf's 2.5). Tuples and lists, the usual containers, skip
    their rule."""
    node_type = type(tree)
    if is_leaf is not None and is_leaf(tree):
        out.append(tree)
        return _LEAF
    if node_type is tuple or node_type is list:
        children, node_data = tree, None
    else:
        rule = _rule_for_type(node_type)
        if rule is None:
            out.append(tree)
            return _LEAF
        keyed_children, node_data = rule.flatten_with_keys(tree)
        children = [child for _, child in keyed_children]
    return PyTreeDef(node_type, node_data,
                     tuple([_flatten_leaves(child, is_leaf, out) for child in children]))


def tree_flatten_with_path(
    tree: PyTree, is_leaf: IsLeaf = None
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes paired with its key path.

    Example:
        >>> pairs, _ = tree_flatten_with_path({"a": (1, 2)})
        >>> [(keystr(path), leaf) for path, leaf in pairs]
        [("['a'][0]", 1), ("['a'][1]", 2)]
    """
    paths_and_leaves: list[tuple[KeyPath, Any]] = []
    treedef = _flatten(tree, is_leaf, (), paths_and_leaves)
    return paths_and_leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> PyTree:
    """Builds the pytree with structure ``treedef`` and leaves ``leaves``.

    Example:
        >>> tree_unflatten(tree_structure([1, (2, 3)]), "abc")
        ['a', ('b', 'c')]
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten got {len(leaves)} leaves for {treedef}, which has "
            f"{treedef.num_leaves} leaves. Pass exactly one leaf per '*' in the treedef."
        )
    return _unflatten(treedef, iter(leaves))


def _unflatten(treedef: PyTreeDef, leaves: Iterator[Any]) -> PyTree:
    node_type = treedef.node_type
    if node_type is None:
        return next(leaves)
    children = tuple([_unflatten(child, leaves) for child in treedef.children_defs])
    if node_type is tuple:  # the usual container, without its rule's call
        return children
    return _rule_for_type(node_type).unflatten(treedef.node_data, children)


def tree_leaves(tree: PyTree, is_leaf: IsLeaf = None) -> list[Any]:
    """Returns the leaves of a pytree in flattening order.

    Example:
        >>> tree_leaves([1, {"b": 3, "a": 2}, None])
        [1, 2, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_leaves_with_path(tree: PyTree, is_leaf: IsLeaf = None) -> list[tuple[KeyPath, Any]]:
    """Returns ``(key_path, leaf)`` pairs in flattening order.

    Example:
        >>> tree_leaves_with_path([7])
        [((SequenceKey(idx=0),), 7)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: IsLeaf = None) -> PyTreeDef:
    """Returns the treedef of a pytree.

    Example:
        >>> tree_structure((1, [2]))
        PyTreeDef((*, [*]))
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """Applies ``f`` leafwise to ``tree`` and the matching leaves of the trees in ``rest``.

    Each tree in ``rest`` must have the structure of ``tree``, or have it as a prefix: then a
    leaf of ``tree`` is matched with a whole subtree.

    Example:
        >>> tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)}, {"a": 10, "b": (20, 30)})
        {'a': 11, 'b': (22, 33)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    all_leaves = [leaves] + [treedef.flatten_up_to(other) for other in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


def tree_map_with_path(
    f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeaf = None
) -> PyTree:
    """Like :func:`tree_map`, but ``f`` receives each leaf's key path first.

    Example:
        >>> tree_map_with_path(lambda path, x: f"{keystr(path)}={x}", {"a": [1]})
        {'a': ["['a'][0]=1"]}
    """
    paths_and_leaves, treedef = tree_flatten_with_path(tree, is_leaf)
    paths = [path for path, _ in paths_and_leaves]
    all_leaves = [[leaf for _, leaf in paths_and_leaves]]
    all_leaves += [treedef.flatten_up_to(other) for other in rest]
    return treedef.unflatten(f(path, *xs) for path, *xs in zip(paths, *all_leaves))


class _NodeSummary(NamedTuple):
    node_type: type
    node_data: Hashable
    num_children: int | None  # None for a leaf


def _flatten_up_to(treedef: PyTreeDef, tree: PyTree, path: KeyPath, out: list) -> None:
    if treedef.node_type is None:
        out.append(tree)  # a leaf of the prefix stands for the whole subtree found here
        return
    expected = _NodeSummary(treedef.node_type, treedef.node_data, len(treedef.children_defs))
    rule = _rule_for_type(type(tree))
    if rule is None:
        raise _mismatch_error(path, expected, _NodeSummary(type(tree), None, None))
    keyed_children, node_data = rule.flatten_with_keys(tree)
    keyed_children = list(keyed_children)
    found = _NodeSummary(type(tree), node_data, len(keyed_children))
    if found != expected:
        raise _mismatch_error(path, expected, found)
    for (key, child), child_def in zip(keyed_children, treedef.children_defs):
        _flatten_up_to(child_def, child, path + (key,), out)


def _mismatch_error(path: KeyPath, expected: _NodeSummary, found: _NodeSummary) -> ValueError:
    where = f"key path {keystr(path)}" if path else "the root"
    want, got = _describe_node(expected), _describe_node(found)
    if want == got:  # same kind and arity, so the node data (e.g. the dict keys) differs
        want += f" with node data {expected.node_data!r}"
        got += f" with node data {found.node_data!r}"
    return ValueError(
        f"Tree structure mismatch at {where}: expected {want}, got {got}. Every tree passed "
        "after the first must have the structure of the first tree (or have it as a prefix)."
    )


def _describe_node(node: _NodeSummary) -> str:
    if node.num_children is None:
        return f"a leaf of type {node.node_type.__name__}"
    if node.node_type is type(None):
        return "None"
    noun = "child" if node.num_children == 1 else "children"
    return f"a {node.node_type.__name__} of {node.num_children} {noun}"


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True when the treedef is a single node: a leaf, or a node without children like None.

    Example:
        >>> treedef_is_leaf(tree_structure(1)), treedef_is_leaf(tree_structure([1]))
        (True, False)
    """
    return treedef.num_nodes == 1


def all_leaves(iterable: Iterable[Any], is_leaf: IsLeaf = None) -> bool:
    """True when every element of ``iterable`` is a leaf (None is a node, not a leaf).

    Example:
        >>> all_leaves([1, 2.0, "x"]), all_leaves([1, (2,)]), all_leaves([None])
        (True, False, False)
    """
    return all(tree_structure(x, is_leaf) == _LEAF for x in iterable)


# Registering a class through its own methods, and the rest of JAX's tree API.


def register_pytree_node_class(cls: T) -> T:
    """A class decorator: registers ``cls`` through its own ``tree_flatten`` (an instance
    method returning ``(children, aux_data)``) and ``tree_unflatten`` (a classmethod taking
    ``(aux_data, children)``).

    Example:
        >>> @register_pytree_node_class
        ... class Scaled:
        ...     def __init__(self, value, scale):
        ...         self.value, self.scale = value, scale
        ...     def tree_flatten(self):
        ...         return (self.value,), self.scale
        ...     @classmethod
        ...     def tree_unflatten(cls, scale, children):
        ...         return cls(children[0], scale)
        >>> tree_map(lambda x: x + 1, Scaled(1, "kg")).value
        2
    """
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: T) -> T:
    """As :func:`register_pytree_node_class`, with ``tree_flatten_with_keys`` (an instance
    method returning ``((key, child), ...), aux_data``) naming the children."""
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten)
    return cls


def register_static(cls: T) -> T:
    """Registers ``cls`` as a node without children: its instances go into the treedef whole
    (so they must be hashable), as static configuration does.

    Example:
        >>> @register_static
        ... class Config(tuple):
        ...     pass
        >>> tree_leaves([Config(), 1])
        [1]
    """
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


class Partial(functools.partial):
    """``functools.partial`` as a pytree: the bound arguments are its children and the function
    is static, so a ``Partial`` can be passed into ``jit`` or returned from it. A partial given
    as the function stays whole (static), as in JAX: ``functools.partial`` would merge its
    arguments into this one's.

    Example:
        >>> import operator
        >>> tree_leaves(Partial(operator.add, 1.0))
        [1.0]
    """

    def __new__(cls, func: Callable, *args: Any, **kw: Any) -> Partial:
        if isinstance(func, functools.partial):
            func = _WholePartial(func)
        return super().__new__(cls, func, *args, **kw)


class _WholePartial:
    """A partial that calls through, which ``functools.partial`` does not take apart."""

    __slots__ = ("partial",)

    def __init__(self, partial: functools.partial) -> None:
        self.partial = partial

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.partial(*args, **kw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _WholePartial) and self.partial == other.partial

    def __hash__(self) -> int:
        return hash(self.partial)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, xs: Partial(func, *xs[0], **xs[1]))


def tree_all(tree: PyTree, *, is_leaf: IsLeaf = None) -> bool:
    """Whether every leaf of ``tree`` is true.

    Example:
        >>> tree_all([True, {"a": 1}]), tree_all([True, (0,)])
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


_NO_INITIALIZER = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: PyTree,
                initializer: Any = _NO_INITIALIZER, is_leaf: IsLeaf = None) -> Any:
    """``functools.reduce`` over the leaves of ``tree``.

    Example:
        >>> tree_reduce(lambda a, b: a + b, [1, (2, 3)], 10)
        16
    """
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, tree_leaves(tree, is_leaf))
    return functools.reduce(function, tree_leaves(tree, is_leaf), initializer)


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: PyTree, *,
                            identity: Any = _NO_INITIALIZER, is_leaf: IsLeaf = None) -> Any:
    """The leaves of ``tree`` combined by an associative ``operation``, pairwise in a balanced
    tree (so ``log2(n)`` levels deep): ``identity`` when there are none.

    Example:
        >>> tree_reduce_associative(lambda a, b: a + b, [1, 2, 3, 4])
        10
    """
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_INITIALIZER:
            raise TypeError("tree_reduce_associative of a tree without leaves needs an "
                            "identity=, the value to return then.")
        return identity
    while len(leaves) > 1:
        pairs = [operation(a, b) for a, b in zip(leaves[::2], leaves[1::2])]
        leaves = pairs + leaves[len(pairs) * 2:]
    return leaves[0]


def tree_broadcast(prefix_tree: PyTree, full_tree: PyTree, is_leaf: IsLeaf = None) -> PyTree:
    """``prefix_tree`` with each leaf repeated over the leaves of the subtree of ``full_tree``
    it stands for: a tree shaped as ``full_tree``.

    Example:
        >>> tree_broadcast([1, 2], [(0, 0), {"a": 0}])
        [(1, 1), {'a': 2}]
    """
    return tree_structure(full_tree).unflatten(
        broadcast_prefix(prefix_tree, full_tree, is_leaf))


def broadcast_prefix(prefix_tree: PyTree, full_tree: PyTree, is_leaf: IsLeaf = None) -> list:
    """The leaves of ``prefix_tree``, each repeated once per leaf of the subtree of
    ``full_tree`` it stands for: one per leaf of ``full_tree`` (``in_axes``, ``device_put``'s
    shardings). A ``ValueError`` when ``prefix_tree`` is not a prefix of ``full_tree``.

    Example:
        >>> broadcast_prefix([1, None], [(0, 0), {"a": 0}], is_leaf=lambda x: x is None)
        [1, 1, None]
    """
    subtrees = tree_structure(prefix_tree, is_leaf).flatten_up_to(full_tree)
    return [leaf for leaf, sub in zip(tree_leaves(prefix_tree, is_leaf), subtrees)
            for _ in range(tree_structure(sub).num_leaves)]


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: PyTree) -> PyTree:
    """A tree of trees turned inside out: ``outer`` of ``inner`` becomes ``inner`` of ``outer``
    (``inner_treedef=None``: the structure of the first inner tree).

    Example:
        >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
        ([1, 3], [2, 4])
    """
    try:
        inners = outer_treedef.flatten_up_to(pytree_to_transpose)
        if inner_treedef is None:
            inner_treedef = tree_structure(inners[0]) if inners else _LEAF
        columns = [inner_treedef.flatten_up_to(inner) for inner in inners]
    except ValueError as e:  # a TypeError, as JAX's
        raise TypeError(f"tree_transpose: {tree_structure(pytree_to_transpose)} is not "
                        f"{outer_treedef} of {inner_treedef}: {e}") from None
    rows = zip(*columns) if columns else [[]] * inner_treedef.num_leaves
    return inner_treedef.unflatten(outer_treedef.unflatten(row) for row in rows)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The treedefs of the root's children."""
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the structures ``treedefs``."""
    return PyTreeDef(tuple, None, tuple(treedefs))


def flatten_one_level(tree: PyTree) -> tuple[tuple[Any, ...], Hashable]:
    """The root's children and node data; a ``ValueError`` for a leaf.

    Example:
        >>> flatten_one_level({"b": 1, "a": (2,)})
        (((2,), 1), ('a', 'b'))
    """
    keyed, node_data = flatten_one_level_with_keys(tree)
    return tuple(child for _, child in keyed), node_data


def flatten_one_level_with_keys(tree: PyTree) -> tuple[tuple[tuple[Any, Any], ...], Hashable]:
    """The root's children, each after its key, and node data; a ``ValueError`` for a leaf.

    Example:
        >>> flatten_one_level_with_keys([1, (2, 3)])
        (((SequenceKey(idx=0), 1), (SequenceKey(idx=1), (2, 3))), None)
    """
    rule = _rule_for_type(type(tree))
    if rule is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keyed, node_data = rule.flatten_with_keys(tree)
    return tuple((key, child) for key, child in keyed), node_data


def is_tree_node(typ: type) -> bool:
    """Whether instances of the type ``typ`` are pytree nodes: registered (built in or by
    ``register_pytree_node``) or a namedtuple.

    Example:
        >>> is_tree_node(dict), is_tree_node(int)
        (True, False)
    """
    if typ is None:  # (another value is no type, so not a node's: False, as in JAX)
        raise TypeError("is_tree_node takes a type, got None: pass type(None) to ask about "
                        "None, which is a node with no children.")
    return isinstance(typ, type) and _rule_for_type(typ) is not None


class _Registry:
    """``tree_util.default_registry``: the registry every pytree function here consults, with
    the methods of JAX's ``PyTreeRegistry``."""

    def flatten(self, tree: PyTree, leaf_predicate: IsLeaf = None
                ) -> tuple[list[Any], PyTreeDef]:
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree: PyTree, leaf_predicate: IsLeaf = None
                          ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
        return tree_flatten_with_path(tree, leaf_predicate)

    def flatten_one_level(self, tree: PyTree) -> tuple[list[Any], Hashable] | None:
        if not is_tree_node(type(tree)):
            return None  # a leaf: None here, a ValueError from tree_util's function
        children, node_data = flatten_one_level(tree)
        return list(children), node_data

    def flatten_one_level_with_keys(self, tree: PyTree
                                    ) -> tuple[list[tuple[Any, Any]], Hashable] | None:
        if not is_tree_node(type(tree)):
            return None
        keyed, node_data = flatten_one_level_with_keys(tree)
        return list(keyed), node_data

    def is_node(self, typ: type) -> bool:
        return is_tree_node(typ)

    def register_node(self, typ: type, to_iterable: Callable, from_iterable: Callable,
                      to_iterable_with_keys: Callable | None = None) -> None:
        register_pytree_node(typ, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, typ: type, data_fields: Iterable[str],
                                meta_fields: Iterable[str], /) -> None:
        register_dataclass(typ, data_fields, meta_fields)


default_registry = _Registry()


# Built-in node types, registered through the same function users call.


def _sequence_flatten(xs: tuple | list) -> tuple[list[tuple[SequenceKey, Any]], None]:
    return [(SequenceKey(i), x) for i, x in enumerate(xs)], None


def _dict_flatten(d: dict) -> tuple[list[tuple[DictKey, Any]], tuple]:
    # Sorted keys make {'a': 1, 'b': 2} and {'b': 2, 'a': 1} one treedef, as in JAX.
    keys = tuple(sorted(d))
    return [(DictKey(k), d[k]) for k in keys], keys


def _ordered_dict_flatten(d: collections.OrderedDict) -> tuple[list, tuple]:
    # Insertion order is part of what an OrderedDict means, so it is kept, not sorted.
    return [(DictKey(k), v) for k, v in d.items()], tuple(d)


def _defaultdict_flatten(d: collections.defaultdict) -> tuple[list, tuple]:
    keyed, keys = _dict_flatten(d)
    return keyed, (d.default_factory, keys)


def _defaultdict_unflatten(node_data: tuple, children: Iterable[Any]) -> collections.defaultdict:
    default_factory, keys = node_data
    return collections.defaultdict(default_factory, zip(keys, children, strict=True))


def _zip_dict(cls: type) -> Callable[[tuple, Iterable[Any]], dict]:
    return lambda keys, children: cls(zip(keys, children, strict=True))


register_pytree_with_keys(tuple, _sequence_flatten, lambda _, children: tuple(children))
register_pytree_with_keys(list, _sequence_flatten, lambda _, children: list(children))
register_pytree_with_keys(dict, _dict_flatten, _zip_dict(dict))
register_pytree_with_keys(type(None), lambda _: ((), None), lambda _, __: None)
register_pytree_with_keys(
    collections.OrderedDict, _ordered_dict_flatten, _zip_dict(collections.OrderedDict)
)
register_pytree_with_keys(collections.defaultdict, _defaultdict_flatten, _defaultdict_unflatten)


def block_until_ready(tree: Any) -> Any:
    """Waits until every array in ``tree`` is computed, and returns ``tree`` (as
    ``jax.block_until_ready`` does): a GPU array waits for its kernels; other leaves are
    left as they are.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.block_until_ready({"w": jnp.ones(2), "step": 3})["step"]
        3
    """
    return _ask_each_leaf(tree, "block_until_ready")


def copy_to_host_async(tree: Any) -> Any:
    """Starts copying every array in ``tree`` to the host, and returns ``tree`` (as
    ``jax.copy_to_host_async``): each leaf with a ``copy_to_host_async`` method is asked to;
    a later ``device_get`` then waits less. Host arrays are there already.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.copy_to_host_async({"w": jnp.ones(2), "step": 3})["step"]
        3
    """
    return _ask_each_leaf(tree, "copy_to_host_async")


def _ask_each_leaf(tree: Any, method: str) -> Any:
    """Calls ``method`` of each leaf that has one; returns ``tree``."""
    for leaf in tree_leaves(tree):
        ask = getattr(leaf, method, None)
        if callable(ask):
            ask()
    return tree


def device_get(tree: Any) -> Any:
    """``tree`` with each array copied to the host as a NumPy array (as
    ``jax.device_get``): a GPU array is copied back, an array split over devices gathered.
    Other leaves are left as they are.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> jax.device_get({"w": jnp.ones(2), "step": 3})
        {'step': 3, 'w': array([1., 1.], dtype=float32)}
    """
    from .core import Array, Tracer
    def fetch(leaf: Any) -> Any:
        if isinstance(leaf, Tracer):
            raise TypeError("device_get of a traced value: under a transformation the value "
                            "is not known yet. Call device_get on the transformed function's "
                            "result instead.")
        return np.asarray(leaf) if isinstance(leaf, Array) else leaf
    return tree_map(fetch, tree)


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` under another ``name`` (JAX shows it as a scope in its profiles and HLO). Ours
    has no scopes to name, so it returns ``fun`` renamed; results are unchanged."""
    @functools.wraps(fun)
    def named(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)
    if name is not None:
        named.__name__ = named.__qualname__ = name
    return named
