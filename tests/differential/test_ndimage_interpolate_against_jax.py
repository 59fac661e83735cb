"""``jax.scipy.ndimage.map_coordinates`` and ``jax.scipy.interpolate.RegularGridInterpolator``
against JAX 0.10.2 (both modules were missing).

``map_coordinates``: 1-D, 2-D and 3-D inputs, orders 0 and 1, every mode, coordinates out
of range and negative, ``cval``; integer inputs (the result rounded, halves away from zero, to
the input's dtype; ``cval`` cast to it), integer coordinates, booleans and complex numbers;
coordinates broadcast together; gradients with respect to the input and the coordinates; and
JAX's errors (order above 1, an unknown mode, the wrong number of coordinate arrays, an
unhashable ``cval``, the order in which they are checked).

``RegularGridInterpolator``: 1-D, 2-D and 3-D grids (values with a trailing axis too), both
methods, points outside the grid with ``fill_value`` NaN, ``None`` (extrapolation) or a
number; the query as an array or a tuple of arrays; a pytree, as JAX's; gradients with
respect to the values, the query points, the grid and the fill value; a decreasing grid and
one longer than the values' axis, which JAX does not refuse (it could not under ``jit``) and
which give JAX's results here; and JAX's errors. Two cases under ``jit`` (compiling is
slow)."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")
import jax.scipy.interpolate as their_interpolate  # noqa: E402
import jax.scipy.ndimage as their_ndimage  # noqa: E402
import stage4_sharding.scipy.interpolate as interpolate  # noqa: E402
import stage4_sharding.scipy.ndimage as ndimage  # noqa: E402

RNG = np.random.default_rng(0)
MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]
INPUTS = {1: RNG.standard_normal(7).astype(np.float32),
          2: RNG.standard_normal((4, 5)).astype(np.float32),
          3: RNG.standard_normal((3, 4, 2)).astype(np.float32)}
# per dim: inside, on the grid, halves, out of range on both sides, far out, negative
COORDINATES = {n: [np.concatenate([RNG.uniform(-1, size, 6), [0.0, size - 1.0, 0.5, 1.5, -0.5,
                                                              -1.0, size - 0.5, size + 0.25,
                                                              -7.3, 2.5 * size]]
                                  ).astype(np.float32)[RNG.permutation(16)]
                   for size in x.shape] for n, x in INPUTS.items()}


def _same(got, expected, rtol=1e-6, atol=1e-6):
    got, expected = np.asarray(got), np.asarray(expected)
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_map_coordinates_as_jax(ndim, order, mode):
    x, coordinates = INPUTS[ndim], COORDINATES[ndim]
    for cval in (0.0, -2.5):
        _same(ndimage.map_coordinates(x, coordinates, order, mode=mode, cval=cval),
              their_ndimage.map_coordinates(x, coordinates, order, mode=mode, cval=cval))


@pytest.mark.parametrize("mode", MODES)
def test_map_coordinates_of_integers_as_jax(mode):
    """An integer input's result is rounded, halves away from zero (0.5 -> 1, -0.5 -> -1),
    and has the input's dtype; ``cval`` is cast to it (2.7 -> 2); integer coordinates give
    integer weights."""
    halves = [np.array([0.5, 1.5, 2.5, -0.5, 0.25, 0.75, 3.5, 4.2, -1.5, 1.3], np.float32)]
    whole = [np.array([0, 2, 3, -1, 5, -4], np.int32)]
    for x in (np.arange(5, dtype=np.int32) * 3 - 5, np.arange(5, dtype=np.uint8) * 7,
              np.array([-3, 5, -1, 7, 2], np.int8)):
        for order in (0, 1):
            for coordinates in (halves, whole):
                for cval in (0.0, 2.7, 3):
                    _same(ndimage.map_coordinates(x, coordinates, order, mode, cval),
                          their_ndimage.map_coordinates(x, coordinates, order, mode, cval))
    image = np.arange(20, dtype=np.int32).reshape(4, 5)
    two = [np.array([0.5, 1.25, -0.75, 3.5]), np.array([1.5, 4.5, 0.5, -0.5])]
    _same(ndimage.map_coordinates(image, two, 1, mode),
          their_ndimage.map_coordinates(image, two, 1, mode))


def test_map_coordinates_of_other_dtypes_and_shapes_as_jax():
    cases = [
        # booleans (the weighted sum cast back: nonzero is True), complex numbers
        (np.array([True, False, True]), [np.array([0.3, 0.5, 1.5, -0.5, 2.7])], 1, {}),
        (np.array([True, False, True]), [np.array([0, 2, 4, -1])], 1, {}),
        (np.arange(5, dtype=np.float32) + 1j, [np.array([1.5, 2.0, 7.0, -1.0])], 1, {}),
        # a float16 input keeps its dtype; integer coordinates into floats
        (np.arange(5, dtype=np.float16), [np.array([1.5, 2.0, 7.0, -1.0])], 1, {}),
        (np.arange(5, dtype=np.float32), [np.array([1, 2, 7, -1], np.int32)], 1, {}),
        # Python numbers as coordinates, a 0-D coordinate, coordinates as one array
        (np.arange(5, dtype=np.float32), [[0.5, 1.5]], 1, {}),
        (np.arange(5, dtype=np.float32), [1.5], 1, {}),
        (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[0.5, 1.0], [1.5, 2.5]]), 1,
         {}),
        # coordinates broadcast together; an empty one; a NaN one and infinite ones
        (np.arange(6, dtype=np.float32).reshape(2, 3),
         [np.full((2, 3), 0.5), np.array([0.0, 1.5, 2.0])], 1, {}),
        (np.arange(5, dtype=np.float32), [np.array([], np.float32)], 1, {"mode": "nearest"}),
        (np.arange(4, dtype=np.float32), [np.array([np.nan, np.inf, -np.inf, 1e10, -1e10])],
         1, {"mode": "nearest"}),
        # a single element in every mode reads that element wherever the index falls
        *[(np.array([5.0], np.float32), [np.array([-2.0, -1.0, -0.3, 0.3, 1.0, 2.6])], order,
           {"mode": mode}) for mode in MODES for order in (0, 1)],
        # cval NaN, a NumPy scalar cval, order given as True or 1.0
        (np.arange(4, dtype=np.float32), [np.array([1.5, 5.0])], 1, {"cval": np.nan}),
        (np.arange(4, dtype=np.float32), [np.array([1.5, 5.0])], 1, {"cval": np.int32(2)}),
        (np.arange(4, dtype=np.float32), [np.array([1.5, 5.0])], True, {}),
        (np.arange(4, dtype=np.float32), [np.array([1.5, 5.0])], 1.0, {}),
    ]
    for x, coordinates, order, keywords in cases:
        _same(ndimage.map_coordinates(x, coordinates, order, **keywords),
              their_ndimage.map_coordinates(x, coordinates, order, **keywords))


@pytest.mark.parametrize("call, error", [
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 3), NotImplementedError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 2), NotImplementedError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], -1), NotImplementedError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], None), NotImplementedError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 1, mode="grid-wrap"),
     NotImplementedError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 1, mode="foo"),
     NotImplementedError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])] * 2, 1), ValueError),
    (lambda m: m.map_coordinates(np.ones((2, 3)), [np.array([0.5])], 1), ValueError),
    (lambda m: m.map_coordinates(np.ones((2, 3)), [np.ones((2, 3)), np.ones(4)], 1),
     ValueError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 1, cval=np.array(2.0)),
     ValueError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 1, cval=[2.0]),
     ValueError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 1, cval=None), ValueError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5])], 1, mode=["constant"]),
     ValueError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([True])], 1), TypeError),
    (lambda m: m.map_coordinates(np.arange(5.0), [np.array([0.5 + 1j])], 1), TypeError),
    (lambda m: m.map_coordinates(np.float32(3.0), [], 1), TypeError),
    (lambda m: m.map_coordinates(np.ones((2, 0)), [np.ones(3), np.ones(3)], 1), TypeError),
])
def test_map_coordinates_refuses_as_jax(call, error):
    for module in (their_ndimage, ndimage):
        with pytest.raises(error):
            call(module)


def test_map_coordinates_checks_the_length_then_the_mode_then_the_order_as_jax():
    x = np.arange(5.0, dtype=np.float32)
    for module, words in ((their_ndimage, ("length input.ndim", "mode foo", "order<=1")),
                          (ndimage, ("one coordinate array per dim", "mode 'foo'", "order 3"))):
        with pytest.raises(ValueError, match=words[0]):
            module.map_coordinates(x, [x, x], 3, mode="foo")
        with pytest.raises(NotImplementedError, match=words[1]):
            module.map_coordinates(x, [x], 3, mode="foo")
        with pytest.raises(NotImplementedError, match=words[2]):
            module.map_coordinates(x, [x], 3)


def test_map_coordinates_gradients_as_jax():
    x = INPUTS[2] ** 2
    coordinates = COORDINATES[2]

    def loss(lib, module, order, mode, wrt):
        def f(value):
            image, points = (value, coordinates) if wrt == "input" else (x, value)
            return (module.map_coordinates(image, points, order, mode=mode, cval=1.5)
                    ** 2).sum()
        return lib.grad(f)

    for order in (0, 1):
        for mode in ("constant", "nearest", "mirror"):
            _same(loss(ours, ndimage, order, mode, "input")(x),
                  loss(real, their_ndimage, order, mode, "input")(x), rtol=1e-5, atol=1e-5)
            got = loss(ours, ndimage, order, mode, "coordinates")(coordinates)
            expected = loss(real, their_ndimage, order, mode, "coordinates")(coordinates)
            for g, e in zip(got, expected):
                _same(g, e, rtol=1e-5, atol=1e-5)


def test_map_coordinates_under_jit_and_vmap_as_jax():
    x, (rows, columns) = INPUTS[2], COORDINATES[2]

    def f(module):
        return lambda x, c: module.map_coordinates(x, [c[0], c[1]], 1, mode="reflect")

    c = np.stack([rows, columns])
    _same(ours.jit(f(ndimage))(x, c), f(their_ndimage)(x, c), rtol=1e-6, atol=1e-6)
    _same(ours.vmap(f(ndimage), in_axes=(None, 1))(x, c),
          real.vmap(f(their_ndimage), in_axes=(None, 1))(x, c))
    with pytest.raises(ValueError, match="must be hashable"):  # a traced cval
        ours.jit(lambda x: ndimage.map_coordinates(x, [rows, columns], 1, cval=x[0, 0]))(x)


# --- RegularGridInterpolator ---

GRIDS = {1: (np.array([-1.0, 0.0, 0.5, 2.0, 3.0], np.float32),),
         2: (np.array([0.0, 1.0, 2.0], np.float32), np.array([0.0, 2.0, 4.0, 6.0], np.float32)),
         3: (np.array([0.0, 1.0, 2.5], np.float32), np.array([-1.0, 1.0], np.float32),
             np.array([0.0, 0.5, 1.0, 3.0], np.float32))}


def _queries(grid):
    """Points inside, on the grid's points, at halves of cells, outside on either side in
    one dim or in several, and one with a NaN coordinate."""
    n = len(grid)
    low = np.array([g[0] for g in grid])
    high = np.array([g[-1] for g in grid])
    inside = low + (high - low) * RNG.uniform(size=(6, n))
    on_points = np.stack([g[np.arange(4) % len(g)] for g in grid], axis=-1)
    halves = np.stack([(g[:-1] + g[1:])[np.arange(3) % (len(g) - 1)] / 2 for g in grid], -1)
    outside = np.stack([low - 0.5, high + 0.25, np.where(np.arange(n) == 0, low - 3, low),
                        np.where(np.arange(n) == n - 1, high + 1, high)])
    nan = np.where(np.arange(n) == 0, np.nan, low)[None]
    return np.concatenate([inside, on_points, halves, outside, nan]).astype(np.float32)


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_regular_grid_interpolator_as_jax(ndim, method):
    grid = GRIDS[ndim]
    shape = tuple(len(g) for g in grid)
    xi = _queries(grid)
    for values in (RNG.standard_normal(shape).astype(np.float32),
                   RNG.standard_normal(shape + (2,)).astype(np.float32)):  # a trailing axis
        for fill_value in (np.nan, None, -1.5, 7):
            got = interpolate.RegularGridInterpolator(grid, values, method, False, fill_value)
            expected = their_interpolate.RegularGridInterpolator(grid, values, method, False,
                                                                 fill_value)
            _same(got(xi), expected(xi), rtol=1e-5, atol=1e-6)
            other = "nearest" if method == "linear" else "linear"  # chosen at the call
            _same(got(xi, method=other), expected(xi, method=other), rtol=1e-5, atol=1e-6)


def test_regular_grid_interpolator_queries_and_dtypes_as_jax():
    grid, values = GRIDS[2], np.arange(12.0, dtype=np.float32).reshape(3, 4)
    rows, columns = np.array([0.5, 1.5, -1.0]), np.array([1.0, 3.0, 5.0])
    queries = [
        (rows, columns),  # a tuple of arrays, one per dim
        (np.full((2, 3), 0.5), columns),  # broadcast together
        ((rows, columns),),  # wrapped in a tuple of one
        (0.5, 1.0),  # one point as a tuple of numbers
        np.array([0.5, 1.0, 1.5, 3.0]),  # a flat array: points of 2 coordinates
        np.zeros((2, 3, 2)) + 0.5,  # points in a 2x3 array
        np.zeros((0, 2)),  # none
        np.array([[-1, 1], [1, 1]], np.int32),  # integers
    ]
    for method in ("linear", "nearest"):
        got = interpolate.RegularGridInterpolator(grid, values, method)
        expected = their_interpolate.RegularGridInterpolator(grid, values, method)
        for xi in queries:
            _same(got(xi), expected(xi))
    cases = [  # values of other dtypes: integers become floats; fill values of any kind
        (grid, values.astype(np.int32), {"fill_value": -1}),
        (grid, values.astype(np.int32), {"method": "nearest", "fill_value": None}),
        (grid, values.astype(np.float16), {}),
        (grid, values.astype(np.float16), {"method": "nearest"}),
        (grid, values.astype(np.complex64) * (1 - 1j), {"fill_value": 1 + 1j}),
        (grid, values, {"fill_value": True}),
        (grid, values, {"fill_value": np.array([1.0, 2.0], np.float32)}),
        (tuple(g.astype(np.int32) for g in grid), values, {}),  # an integer grid
        (grid[:1], values, {}),  # fewer grid dims than values' axes
    ]
    xi = np.array([[-0.5, 1.0], [1.5, 1.0]], np.float32)
    for points, v, keywords in cases:
        query = xi[:, :len(points)]
        _same(interpolate.RegularGridInterpolator(points, v, **keywords)(query),
              their_interpolate.RegularGridInterpolator(points, v, **keywords)(query))


def test_unsorted_or_mismatched_grids_give_jaxs_results():
    """JAX checks neither that the points increase nor that their count matches the values'
    axis (it could not under ``jit``): a decreasing grid's points are all outside it, a grid
    longer than the values reads the last value beyond them (clamped), a shorter one uses
    the first values, a single point gives NaN (0 / 0)."""
    values = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    column = np.array([0.0, 2.0, 4.0, 6.0], np.float32)
    xi = np.array([[0.5, 1.0], [1.0, 1.0], [2.5, 1.0], [1.5, 5.0]], np.float32)
    for rows, v in ((np.array([2.0, 1.0, 0.0]), values),
                    (np.array([0.0, 1.0, 2.0, 3.0]), values),
                    (np.array([0.0, 1.0]), values),
                    (np.array([0.0, 1.0, 1.0]), values),
                    (np.array([0.0]), values[:1])):
        points = (rows.astype(np.float32), column)
        for method in ("linear", "nearest"):
            got = interpolate.RegularGridInterpolator(points, v, method)(xi)
            expected = their_interpolate.RegularGridInterpolator(points, v, method)(xi)
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("call, error", [
    (lambda m, g, v: m.RegularGridInterpolator(g, v, method="cubic"), ValueError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v, method="cubic", bounds_error=True),
     ValueError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v, bounds_error=True), NotImplementedError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v[0]), ValueError),  # more grid dims
    (lambda m, g, v: m.RegularGridInterpolator(g, v.tolist()), TypeError),
    (lambda m, g, v: m.RegularGridInterpolator(tuple(p.tolist() for p in g), v), TypeError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v, fill_value=1 + 2j), ValueError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v, fill_value=[1.0]), TypeError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v)(np.array([[0.5, 1.5, 3.0]])),
     ValueError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v)(np.array([[0.5, 1.0]]), method="cubic"),
     ValueError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v)((np.ones(2), np.ones(3))), ValueError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v)([[0.5, 1.0]]), TypeError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v)(0.5), IndexError),
    (lambda m, g, v: m.RegularGridInterpolator(g, v)(np.ones(3)), TypeError),
    (lambda m, g, v: m.RegularGridInterpolator((g[0][None], g[1]), v)(np.ones((1, 2))),
     ValueError),  # a grid of 2-D points, refused at the call
])
def test_regular_grid_interpolator_refuses_as_jax(call, error):
    grid, values = GRIDS[2], np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for module in (their_interpolate, interpolate):
        with pytest.raises(error):
            call(module, grid, values)


def test_regular_grid_interpolator_is_a_pytree_as_jaxs():
    grid, values = GRIDS[2], np.arange(12.0, dtype=np.float32).reshape(3, 4)
    xi = np.array([[0.5, 1.0], [1.5, 5.5], [5.0, 5.0]], np.float32)
    for fill_value, method in ((np.nan, "linear"), (None, "nearest")):
        mine = interpolate.RegularGridInterpolator(grid, values, method, fill_value=fill_value)
        theirs = their_interpolate.RegularGridInterpolator(grid, values, method,
                                                           fill_value=fill_value)
        assert str(ours.tree_util.tree_structure(mine)).replace("stage1_autodiff.", "") == \
            str(real.tree_util.tree_structure(theirs))
        assert len(ours.tree_util.tree_leaves(mine)) == len(real.tree_util.tree_leaves(theirs))
        doubled = ours.tree_util.tree_map(lambda leaf: leaf * 2, mine)
        assert isinstance(doubled, interpolate.RegularGridInterpolator)
        _same(doubled(xi), real.tree_util.tree_map(lambda leaf: leaf * 2, theirs)(xi))
        assert (mine.method, mine.bounds_error) == (theirs.method, theirs.bounds_error)
    mine = interpolate.RegularGridInterpolator(grid, values)
    theirs = their_interpolate.RegularGridInterpolator(grid, values)
    # passed to jit as an argument: its arrays traced, its method static
    _same(ours.jit(lambda f, x: f(x))(mine, xi), theirs(xi))


def test_regular_grid_interpolator_gradients_as_jax():
    grid, values = GRIDS[2], RNG.standard_normal((3, 4)).astype(np.float32)
    xi = np.array([[0.5, 1.0], [1.5, 5.5], [5.0, 5.0], [1.0, 2.0], [-0.5, 3.0]], np.float32)

    def check(loss, at):
        got = ours.grad(loss(ours, interpolate))(at)
        expected = real.grad(loss(real, their_interpolate))(at)
        _same(got, expected, rtol=1e-5, atol=1e-5)

    for fill_value in (np.nan, None):
        for method in ("linear", "nearest"):
            check(lambda lib, m: lambda v: (m.RegularGridInterpolator(  # noqa: B023
                grid, v, method, fill_value=fill_value)(xi) ** 2).sum(), values)
            check(lambda lib, m: lambda x: lib.numpy.nansum(m.RegularGridInterpolator(  # noqa: B023
                grid, values, method, fill_value=fill_value)(x) ** 2), xi)
    check(lambda lib, m: lambda g: (m.RegularGridInterpolator(
        (g, grid[1]), values, fill_value=None)(xi) ** 2).sum(), grid[0])
    check(lambda lib, m: lambda f: (m.RegularGridInterpolator(
        grid, values, fill_value=f)(xi) ** 2).sum(), np.float32(2.0))
