"""``jax.linear_transpose`` against JAX 0.10.2: the transposes of linear functions (values,
dtypes, pytrees, ``jit`` inside), the transposition law ``<f^T(c), x> = <c, f(x)>`` on random
values, and the refusal of functions that are not linear. It was missing (an AttributeError);
built on ``vjp`` alone it would have returned the derivative at zero for a nonlinear function,
a silently wrong value."""

import numpy as np
import pytest

import stage4_sharding as ours
from stage4_sharding import numpy as ojnp

real = pytest.importorskip("jax")
rjnp = real.numpy

A = np.arange(6.0, dtype=np.float32).reshape(2, 3)

LINEAR = {
    "scale and sum": (lambda lib, jnp: (lambda x, y: (x * 2.0 + y.sum(), -y)), ((3,), (2,))),
    "matrix product": (lambda lib, jnp: (lambda x: jnp.dot(A, x)), ((3,),)),
    "slices to a dict": (lambda lib, jnp: (lambda x: {"a": x[0], "b": x[1:]}), ((3,),)),
    "reverse, in a jit": (lambda lib, jnp: lib.jit(lambda x: x[::-1] * 2), ((3,),)),
    "cumsum and pad": (lambda lib, jnp: (lambda x: jnp.cumsum(x) + jnp.pad(x, (1, 0))[:3]),
                       ((3,),)),
    "concatenate, reshape, transpose": (
        lambda lib, jnp: (lambda x: jnp.concatenate([x, 2 * x]).reshape(2, 3).T), ((3,),)),
    "scatter-add": (lambda lib, jnp: (lambda x: x.at[1].add(x[0])), ((3,),)),
    "divide by a constant, mean": (lambda lib, jnp: (lambda x: x / 4.0 - jnp.mean(x)), ((4,),)),
    "broadcast and where with a constant mask": (
        lambda lib, jnp: (lambda x: jnp.where(np.array([True, False, True]), x[:, None] * 3,
                                              0.0)), ((3,),)),
    "an affine map's linear part": (lambda lib, jnp: (lambda x: x + 1.0), ((2,),)),
}


def _random(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("name", LINEAR)
def test_the_transpose_is_jaxs(name):
    make, shapes = LINEAR[name]
    primals = _random(shapes, 0)
    f_ours, f_theirs = make(ours, ojnp), make(real, rjnp)
    out = real.tree.map(np.asarray, f_theirs(*[rjnp.asarray(p) for p in primals]))
    ct = real.tree.map(lambda o: np.random.default_rng(1).standard_normal(o.shape).astype(
        np.float32), out)
    got = ours.linear_transpose(f_ours, *primals)(ct)
    expected = real.linear_transpose(f_theirs, *primals)(ct)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert (g.shape, g.dtype) == (e.shape, e.dtype)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", [n for n in LINEAR if "affine" not in n])
def test_the_transposition_law(name):
    """<f^T(c), x> = <c, f(x)> for random x and c."""
    make, shapes = LINEAR[name]
    f = make(ours, ojnp)
    for seed in range(3):
        xs = _random(shapes, seed)
        out = f(*[ojnp.asarray(x) for x in xs])
        cs = ours.tree.map(lambda o, s=seed: np.random.default_rng(s + 10).standard_normal(
            np.shape(o)).astype(np.float32), out)
        ts = ours.linear_transpose(f, *xs)(cs)
        lhs = sum(float(np.vdot(np.asarray(t), x)) for t, x in zip(ts, xs))
        rhs = sum(float(np.vdot(c, np.asarray(o)))
                  for c, o in zip(ours.tree.leaves(cs), ours.tree.leaves(out)))
        np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-4)


def test_a_shape_dtype_struct_stands_for_an_argument():
    for lib in (ours, real):
        spec = lib.ShapeDtypeStruct((2,), np.float32)
        (t,) = lib.linear_transpose(lambda x: x * 3.0, spec)(lib.numpy.ones(2))
        np.testing.assert_array_equal(np.asarray(t), [3.0, 3.0])


NONLINEAR = {
    "sin": lambda jnp: jnp.sin,
    "a square": lambda jnp: lambda x: x * x,
    "a mask from the input": lambda jnp: lambda x: jnp.where(x > 0, x, 0.0),
    "a reciprocal": lambda jnp: lambda x: 1.0 / x,
    "a max": lambda jnp: jnp.max,
}


@pytest.mark.parametrize("name", NONLINEAR)
def test_a_nonlinear_function_is_refused(name):
    with pytest.raises((NotImplementedError, AssertionError)):
        real.linear_transpose(NONLINEAR[name](rjnp), 1.0)(1.0)
    with pytest.raises(NotImplementedError, match="not linear in its input"):
        ours.linear_transpose(NONLINEAR[name](ojnp), 1.0)(1.0)


def test_bad_cotangents_and_kinds_are_refused():
    t = ours.linear_transpose(lambda x, y: (x, y), 1.0, 2.0)
    for lib in (ours, real):
        with pytest.raises(TypeError, match="structure|tree"):
            lib.linear_transpose(lambda x, y: (x, y), 1.0, 2.0)(1.0)
        with pytest.raises(TypeError):
            lib.linear_transpose(lambda x: x.astype(np.int32), 1.0)
    with pytest.raises(ValueError, match="[Ss]hape"):
        t((np.ones(2, np.float32), 1.0))
