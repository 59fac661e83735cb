"""custom_vjp and custom_jvp functions (nondiff_argnums, two results, inside scan, fori_loop
and cond) through sixteen transformations and their compositions, against JAX 0.10.2: the
same values, shapes and dtypes, or both refuse with the same class of error (forward mode of
a custom_vjp function is a TypeError in both)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import stage4_sharding.numpy as sjnp  # noqa: E402

import stage4_sharding as sj  # noqa: E402


def functions(L, np_) -> dict:
    """The same custom functions, written with ``L`` (a jax) and ``np_`` (its numpy)."""
    @L.custom_vjp
    def clipped(x, c):
        return np_.sin(x) * c

    def clipped_fwd(x, c):
        return clipped(x, c), (np_.cos(x), c, x)

    def clipped_bwd(res, g):
        cos_x, c, x = res
        return np_.clip(g * cos_x * c, -0.5, 0.5), (g * np_.sin(x)).sum() * np_.ones_like(c)
    clipped.defvjp(clipped_fwd, clipped_bwd)

    @L.custom_jvp
    def softplus(x):
        return np_.log1p(np_.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return softplus(x), x_dot * L.nn.sigmoid(x)

    @functools.partial(L.custom_vjp, nondiff_argnums=(0,))
    def scaled(k, x):
        return x * k
    scaled.defvjp(lambda k, x: (x * k, None), lambda k, _, g: (g * k * 2,))

    @functools.partial(L.custom_vjp, nondiff_argnames=("f",))
    def applied(f, x):
        return f(x)
    applied.defvjp(lambda f, x: (f(x), x), lambda f, x, g: (g * np_.cos(x),))

    @L.custom_jvp
    def two_out(x, y):
        return x * y, np_.sin(x)

    @two_out.defjvp
    def two_out_jvp(primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return two_out(x, y), (x_dot * y + x * y_dot, np_.cos(x) * x_dot)

    lax = L.lax
    return {
        "custom_vjp": lambda x: clipped(x, x[::-1] + 2.0),
        "custom_jvp": lambda x: softplus(x) * x,
        "nondiff_argnums": lambda x: scaled(3.0, x) + x,
        "nondiff_argnames_function": lambda x: applied(np_.sin, x) * x,
        "custom_jvp_two_results": lambda x: (lambda a, b: a + b * 2)(*two_out(x, np_.tanh(x))),
        "custom_vjp_in_scan": lambda x: lax.scan(
            lambda c, v: (c + clipped(v, c), c), np_.float32(0.5), x)[1],
        "custom_jvp_in_fori_loop": lambda x: lax.fori_loop(
            0, 3, lambda i, v: softplus(v) - 0.3, x),
        "custom_vjp_in_cond": lambda x: lax.cond(
            x.sum() > 0, lambda v: clipped(v, v), lambda v: v * 2, x),
    }


X = (np.arange(6, dtype=np.float32) - 2.5) / 2
DIRECTION = np.cos(np.arange(6)).astype(np.float32)
TWO = np.stack([X, X * 0.7 + 0.2])


def _sq(f):
    return lambda x: (f(x) ** 2).sum()


TRANSFORMS = {
    "eager": lambda L, f, x, d, two: f(x),
    "jit": lambda L, f, x, d, two: L.jit(f)(x),
    "grad": lambda L, f, x, d, two: L.grad(_sq(f))(x),
    "jit_of_grad": lambda L, f, x, d, two: L.jit(L.grad(_sq(f)))(x),
    "grad_of_jit": lambda L, f, x, d, two: L.grad(_sq(L.jit(f)))(x),
    "vmap": lambda L, f, x, d, two: L.vmap(f)(two),
    "vmap_of_grad": lambda L, f, x, d, two: L.vmap(L.grad(_sq(f)))(two),
    "grad_of_vmap": lambda L, f, x, d, two: L.grad(_sq(L.vmap(f)))(two),
    "jvp": lambda L, f, x, d, two: L.jvp(f, (x,), (d,)),
    "jacfwd": lambda L, f, x, d, two: L.jacfwd(f)(x),
    "jacrev": lambda L, f, x, d, two: L.jacrev(f)(x),
    "hessian": lambda L, f, x, d, two: L.hessian(_sq(f))(x),
    "grad_of_grad": lambda L, f, x, d, two: L.grad(lambda x: (L.grad(_sq(f))(x) ** 2).sum())(x),
    "linearize": lambda L, f, x, d, two: L.linearize(f, x)[1](d),
    "grad_of_checkpoint": lambda L, f, x, d, two: L.grad(_sq(L.checkpoint(f)))(x),
    "vmap_of_jit_of_grad": lambda L, f, x, d, two: L.vmap(L.jit(L.grad(_sq(f))))(two),
}


def _run(L, np_, name: str, transform: str):
    f = functions(L, np_)[name]
    run = lambda *args: TRANSFORMS[transform](L, f, *args)  # noqa: E731
    try:
        # JAX's eager mode compiles each primitive apart; one jit of the whole is faster
        # and gives the same values and errors
        out = (jax.jit(run) if L is jax else run)(X, DIRECTION, TWO)
    except Exception as error:  # noqa: BLE001 -- a refusal is a result to compare
        return error
    leaves = jax.tree_util.tree_leaves(out) if L is jax else sj.tree_util.tree_leaves(out)
    return [np.asarray(leaf) for leaf in leaves]


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("name", list(functions(sj, sjnp)))
def test_a_custom_rule_through_a_transformation_equals_jax(name: str, transform: str) -> None:
    theirs, ours = _run(jax, jnp, name, transform), _run(sj, sjnp, name, transform)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"JAX raised {theirs!r}; we did not"
        assert isinstance(ours, TypeError) == isinstance(theirs, TypeError), (ours, theirs)
        return
    assert not isinstance(ours, Exception), f"we raised {ours!r}; JAX did not"
    assert [(o.shape, o.dtype) for o in ours] == [(t.shape, t.dtype) for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=2e-4, atol=1e-5)


def test_a_traced_nondiff_argument_is_refused_as_in_jax() -> None:
    for L in (jax, sj):
        scale = L.custom_vjp(lambda k, x: k * x, nondiff_argnums=(0,))
        scale.defvjp(lambda k, x: (k * x, None), lambda k, _, g: (k * g,))
        with pytest.raises(L.errors.UnexpectedTracerError):
            L.grad(lambda k: scale(k, 2.0))(3.0)


WEIGHTS = np.array([1.0, 2.0], np.float32)


def _custom_functions(library, numpy):
    """A custom_vjp and a custom_jvp function whose bodies use a NumPy constant, which a
    jaxpr keeps as a closed-over operand of the call."""
    @library.custom_vjp
    def by_vjp(x):
        return numpy.dot(WEIGHTS, x)
    by_vjp.defvjp(lambda x: (by_vjp(x), None), lambda _, g: (g * WEIGHTS,))

    @library.custom_jvp
    def by_jvp(x):
        return numpy.dot(WEIGHTS, x)
    by_jvp.defjvp(lambda p, t: (by_jvp(p[0]), numpy.dot(WEIGHTS, t[0])))
    return {"custom_vjp": by_vjp, "custom_jvp": by_jvp}


@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
def test_a_custom_rule_with_constants_inside_scan_under_every_transformation(kind):
    """Under grad, the scan's reverse pass differentiated every float constant of its body,
    and the custom function refused a differentiated closed-over value; under vmap, the
    constants stayed closed over inside the batched call and escaped their trace. Both raised
    here where JAX computes."""
    def transforms(library, numpy):
        f = _custom_functions(library, numpy)[kind]

        def loss(k):
            return library.lax.scan(lambda c, _: (c + f(numpy.stack([k, c])), None), 0.0,
                                    None, length=2)[0]
        ones = numpy.ones(3)
        return [library.grad(loss)(1.0), library.vmap(loss)(ones),
                library.vmap(library.grad(loss))(ones),
                library.jit(library.vmap(library.grad(loss)))(ones)]
    for ours, theirs in zip(transforms(sj, sjnp), transforms(jax, jnp)):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
