"""Indexing, ``.at[]`` updates and ``jnp.take`` against JAX itself, out-of-bounds indices and
every ``mode`` included: eagerly, under ``jit`` (on the backend under test), under ``vmap``
and through ``grad``. A scatter or gather with an index past either end must give exactly
what JAX gives (dropped, clamped or filled), never another element."""

import numpy as np
import pytest
from backend_under_test import BACKEND
from hypothesis import given, settings
from hypothesis import strategies as st

import stage3_vmap as ours
from stage3_vmap import numpy as ojnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

X = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0
ROWS = np.array([1, 9, -1, -4, 2], np.int32)  # in range, past the end, negative, past the start
INDICES = {
    "python int past the end": 10,
    "python int past the start": -5,
    "negative python int": -1,
    "array of rows": ROWS,
    "row and column arrays": (ROWS, np.array([0, 3, 7, -1, -9], np.int32)),
    "slice then array": (slice(1, None), np.array([3, -7], np.int32)),
    "array then strided slice": (np.array([2, 5], np.int32), slice(None, None, 2)),
    "int, array": (1, np.array([[0], [6]], np.int32)),
    "non-adjacent arrays": (np.array([0, 4], np.int32), slice(None), None),
    "reversed slice": (slice(None, None, -1), 0),
    "ellipsis and array": (Ellipsis, np.array([1, 4], np.int32)),
}
UPDATES = ["set", "add", "multiply", "min", "max"]
MODES = [None, "clip", "drop", "fill", "promise_in_bounds"]


def _on(library, index):
    """The index with its arrays made ``library``'s."""
    array = library.numpy.asarray if library is ours else jnp.asarray
    if isinstance(index, tuple):
        return tuple(_on(library, i) for i in index)
    return array(index) if isinstance(index, np.ndarray) else index


def assert_same(out, expected):
    out, expected = np.asarray(out), np.asarray(expected)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-6, equal_nan=True)


def _jit(f):
    return ours.jit(f, backend=BACKEND)


@pytest.mark.parametrize("name", INDICES)
def test_getitem_and_get_with_every_mode(name):
    index = INDICES[name]
    for mode in [None, "clip", "fill"]:
        if mode is None and name == "non-adjacent arrays":
            continue  # covered by the plain x[idx] below
        expected = jnp.asarray(X).at[_on(jax, index)].get(mode=mode)
        get = lambda x: x.at[_on(ours, index)].get(mode=mode)
        assert_same(get(ojnp.asarray(X)), expected)
        assert_same(_jit(get)(ojnp.asarray(X)), expected)
    assert_same(ojnp.asarray(X)[_on(ours, index)], jnp.asarray(X)[_on(jax, index)])


# Under jit, a few of the (update, mode) pairs: each is a kernel to compile.
JITTED = {("set", None), ("add", None), ("min", "clip")}


@pytest.mark.parametrize("name", INDICES)
def test_updates_drop_or_clip_out_of_bounds_indices_as_jax(name):
    index = INDICES[name]
    shape = np.shape(np.asarray(jnp.asarray(X)[_on(jax, index)]))
    values = np.linspace(-3, 3, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    for update in UPDATES:
        for mode in [None, "clip", "drop"]:
            expected = getattr(jnp.asarray(X).at[_on(jax, index)], update)(values, mode=mode)

            def f(x, v):
                return getattr(x.at[_on(ours, index)], update)(v, mode=mode)
            assert_same(f(ojnp.asarray(X), ojnp.asarray(values)), expected)
            if (update, mode) in JITTED:
                assert_same(_jit(f)(ojnp.asarray(X), ojnp.asarray(values)), expected)


def test_the_issue_example_drops_an_update_past_the_end():
    f = lambda x, i: x.at[i].set(7)
    assert_same(_jit(f)(ojnp.arange(3), 10), jax.jit(f)(jnp.arange(3), 10))
    assert_same(_jit(f)(ojnp.arange(3), -4), jax.jit(f)(jnp.arange(3), -4))


@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.bool_])
def test_take_fills_out_of_bounds_with_jax_default_values(mode, dtype):
    a = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    idx = np.array([0, 3, 4, -1, -5, 11, 12], np.int32)
    for axis in [None, 0, 1]:
        expected = jnp.take(jnp.asarray(a), jnp.asarray(idx), axis=axis, mode=mode)
        take = lambda a, i: ojnp.take(a, i, axis=axis, mode=mode)
        assert_same(take(ojnp.asarray(a), ojnp.asarray(idx)), expected)
        if axis == 1:
            assert_same(_jit(take)(ojnp.asarray(a), ojnp.asarray(idx)), expected)
    filled = jnp.take(jnp.asarray(a), jnp.asarray(idx), fill_value=3)
    assert_same(ojnp.take(ojnp.asarray(a), ojnp.asarray(idx), fill_value=3), filled)


def test_take_along_axis_fills_out_of_bounds():
    idx = np.array([[0, 9], [-1, 2], [-7, 1]], np.int32)
    expected = jnp.take_along_axis(jnp.asarray(X), jnp.asarray(idx), axis=1)
    assert_same(ojnp.take_along_axis(ojnp.asarray(X), ojnp.asarray(idx), axis=1), expected)


def test_bad_modes_raise_as_jax():
    for library, np_ in [(ours, ojnp), (jax, jnp)]:
        with pytest.raises(ValueError, match="mode"):
            np_.take(np_.arange(4), np_.asarray([1]), mode="foo")
        with pytest.raises(ValueError, match="mode"):
            np_.arange(4.0).at[1].set(1.0, mode="foo")


@pytest.mark.parametrize("update", ["set", "add", "get"])
def test_vmap_of_updates_with_out_of_bounds_rows(update):
    rows = np.array([0, 3, -1, 7, -5], np.int32)
    xs = np.arange(20, dtype=np.float32).reshape(5, 4)

    def f(np_):
        def one(x, i):
            ref = x.at[i]
            return ref.get(mode="fill", fill_value=-1.0) if update == "get" else getattr(
                ref, update)(100.0)
        return one
    expected = jax.vmap(f(jnp))(jnp.asarray(xs), jnp.asarray(rows))
    out = ours.vmap(f(ojnp))(ojnp.asarray(xs), ojnp.asarray(rows))
    assert_same(out, expected)
    assert_same(_jit(ours.vmap(f(ojnp)))(ojnp.asarray(xs), ojnp.asarray(rows)), expected)


@pytest.mark.parametrize("mode", [None, "clip", "drop"])
def test_gradients_of_updates_and_gathers_with_out_of_bounds_indices(mode):
    rows = np.array([0, 2, 5, -1, 0], np.int32)

    def loss(np_, library):
        def f(x, v):
            y = x.at[library_rows(library)].add(v * v, mode=mode)
            picked = y.at[library_rows(library)].get(mode="fill", fill_value=0.0)
            return np_.sum(np_.sin(picked)) + np_.sum(y * y)
        return f

    def library_rows(library):
        return _on(library, rows)
    x, v = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), np.ones((5, 4), np.float32)
    expected = jax.grad(loss(jnp, jax), argnums=(0, 1))(jnp.asarray(x), jnp.asarray(v))
    for grad in [ours.grad(loss(ojnp, ours), argnums=(0, 1)),
                 _jit(ours.grad(loss(ojnp, ours), argnums=(0, 1)))]:
        for out, want in zip(grad(ojnp.asarray(x), ojnp.asarray(v)), expected):
            np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=2e-5, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_indices_and_updates_equal_jax(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    entries = []
    for n in shape[:data.draw(st.integers(1, len(shape)))]:
        kind = data.draw(st.sampled_from(["int", "array", "slice"]))
        if kind == "int":
            entries.append(data.draw(st.integers(-n - 2, n + 2)))
        elif kind == "array":
            entries.append(np.array(data.draw(st.lists(st.integers(-n - 2, n + 2), min_size=1,
                                                        max_size=3)), np.int32))
        else:
            entries.append(slice(data.draw(st.integers(-n, n)), data.draw(st.integers(-n, n)),
                                 data.draw(st.sampled_from([1, 2, -1]))))
    index, update = tuple(entries), data.draw(st.sampled_from(UPDATES))
    try:
        target = jnp.asarray(x)[_on(jax, index)]
    except (IndexError, TypeError, ValueError) as error:  # index arrays that don't broadcast
        with pytest.raises(type(error)):
            ojnp.asarray(x)[_on(ours, index)]
        return
    values = np.full(target.shape, 2.5, np.float32)
    expected = getattr(jnp.asarray(x).at[_on(jax, index)], update)(values)
    f = lambda x, v: getattr(x.at[_on(ours, index)], update)(v)
    assert_same(f(ojnp.asarray(x), ojnp.asarray(values)), expected)
    assert_same(ojnp.asarray(x)[_on(ours, index)], target)


@pytest.mark.parametrize("index", [np.array(9, np.int32), np.array([9, 1], np.int32), 9, -9,
                                   (np.array(1, np.int32), 7)], ids=str)
def test_gradient_of_an_out_of_bounds_read_goes_where_jax_sends_it(index):
    """Scalar indices read with a clamped start in JAX (dynamic_slice), in both directions;
    an array of indices reads with a gather whose transpose drops what was out of bounds."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) if isinstance(index, tuple) else (
        np.arange(4, dtype=np.float32))

    def loss(np_, library):
        return lambda x: np_.sum(x[_on(library, index)] ** 2)
    expected = jax.grad(loss(jnp, jax))(jnp.asarray(x))
    assert_same(ours.grad(loss(ojnp, ours))(ojnp.asarray(x)), expected)
