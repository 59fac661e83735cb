"""``lax`` loops and branches against JAX 0.10.2, eagerly and under ``jit``, from a probe of
80 calls. It found: eagerly, the loops ran as Python loops, so a carry that changed type went
unchecked (JAX refuses it) and the slices of NumPy ``xs`` reached the body as NumPy scalars;
a Python-number initial carry of another dtype than the body returns was refused (JAX
converts it and traces again, so ``fori_loop(0, n, lambda i, s: s + x[i], 0)`` sums floats);
a carry the body makes weakly typed came back strong; and ``fori_loop``'s index ignored the
type of traced bounds."""

import numpy as np
import pytest
from oracle import assert_call_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

XS = np.float32([0.5, 1.5, 2.5])


def _cases(jax):
    lax, jnp = jax.lax, jax.numpy
    return {
        "fori_loop summing floats from 0": (
            lambda x: lax.fori_loop(0, 3, lambda i, s: s + jnp.asarray(x)[i], 0), XS),
        "while_loop from an int, stepping by 0.5": (
            lambda: lax.while_loop(lambda c: c < 3, lambda c: c + 0.5, 0),),
        "fori_loop of a tuple carry from ints": (
            lambda: lax.fori_loop(0, 3, lambda i, c: (c[0] + 0.5, c[1] + i), (0, 0)),),
        "fori_loop from a weak float to float16": (
            lambda: lax.fori_loop(0, 3, lambda i, c: c + jnp.float16(1), 0.0),),
        "scan from an int over floats": (
            lambda x: lax.scan(lambda c, xi: (c + xi, c), 0, x), XS),
        "scan of a complex sum from 0.0": (
            lambda x: lax.scan(lambda c, xi: (c + xi * 1j, None), 0.0, x), XS),
        "scan over NumPy booleans": (
            lambda b: lax.scan(lambda c, bi: (c + bi, bi), 0, b), np.array([True, False, True])),
        "scan whose body makes the carry weak": (
            lambda: lax.scan(lambda c, _: (1.0, c), jnp.float32(0), None, length=2),),
        "scan from a weak carry the body makes strong": (
            lambda: lax.scan(lambda c, _: (jnp.float32(2) * c, c), 1.0, None, length=2),),
        "while_loop of no steps from a weak carry": (
            lambda: lax.while_loop(lambda c: c < 0, lambda c: c + jnp.float32(1), 0.0),),
        "fori_loop with NumPy int32 bounds": (
            lambda: lax.fori_loop(np.int32(0), np.int32(3), lambda i, c: c + i, 0),),
        "fori_loop to a traced int16 bound": (
            lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0), np.int16(3)),
        "vmap of fori_loop summing from 0": (
            jax.vmap(lambda x: lax.fori_loop(0, 3, lambda i, s: s + x[i], 0)),
            np.stack([XS, 2 * XS])),
        "grad of fori_loop summing from 0": (
            jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, s: s + x[i] ** 2, 0)), XS),
        "hessian of a scan from 1": (
            jax.hessian(lambda x: lax.scan(lambda c, xi: (c * xi + 1, None), 1, x)[0]), XS),
        # (select_n's int32 ``which`` made the picked weak ints strong)
        "vmap of switch over the index, weak results": (
            jax.vmap(lambda i, x: lax.switch(i, [lambda v: jnp.where(v > 1, 1, 0),
                                                 lambda v: jnp.where(v > 2, 2, 1)], x),
                     in_axes=(0, None)), np.array([0, 1, 1]), np.float32(1.5)),
        "vmap of cond over the predicate, weak results": (
            jax.vmap(lambda p, x: lax.cond(p, lambda v: v * 2.0, lambda v: v + 1.0, x)),
            np.array([True, False]), np.float32([1.5, 2.5])),
        "select_n by int32 of weak cases": (
            lambda i: lax.select_n(i, jnp.where(i > 0, 1, 2), jnp.where(i > 0, 3, 4)),
            np.array([0, 1], np.int32)),
    }


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_cases(ours)))
def test_as_jax(name, how):
    assert_call_as_jax(_cases, name, how)


ERRORS = {
    "a carry changing dtype": (lambda lax, jnp: lax.while_loop(
        lambda c: c < 3, lambda c: (c + 1).astype(jnp.float16), jnp.float32(0)), "carry"),
    "a carry changing shape": (lambda lax, jnp: lax.scan(
        lambda c, x: ((c[0] + x, c[1]), None), (0.0, 2.0), jnp.ones((3, 2))), "carry"),
    "a strong int carry given floats": (lambda lax, jnp: lax.scan(
        lambda c, x: (c + x, None), jnp.int32(0), jnp.ones(3)), "carry"),
    "fori_loop bounds of two types": (lambda lax, jnp: lax.fori_loop(
        jnp.int16(0), jnp.int32(3), lambda i, c: c + i, 0), "equal types"),
}


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(ERRORS))
def test_refused_as_jax(name, how):
    """A TypeError, as JAX's, eagerly and under jit, with a message of ours."""
    call, match = ERRORS[name]

    def run(jax):
        return (call(jax.lax, jax.numpy) if how == "eager" else
                jax.jit(lambda: call(jax.lax, jax.numpy))())

    with pytest.raises(TypeError):
        run(real)
    with pytest.raises(TypeError, match=match):
        run(ours)


def _grow(lib):
    return lambda x: lib.lax.while_loop(lambda c: c[1] < 3,
                                        lambda c: (c[0] * 1.1 + 0.1, c[1] + 1), (x, 0))[0]


def _tangent_of_grow(lib):
    return lambda x: lib.jvp(_grow(lib), (x,), (1.0,))[1]


@pytest.mark.parametrize("how", ["grad", "vjp", "jit_grad", "jvp_grad", "vmap_grad",
                                 "grad_of_jitted", "grad_in_cond"])
def test_reverse_mode_of_a_while_whose_tangent_does_not_depend_on_the_input(how):
    """The tangent loop of jvp inside grad: the tangent's steps read the tangent alone, so
    its derivative is zero, which JAX finds by partial evaluation; this raised here (reverse
    mode through a while_loop) before its rule looked at what each carry depends on. Inside
    a jit or a cond it raised until their backward programs took no cotangent for an output
    none reached (the loop's primal): an array of zeros was a cotangent to its rule."""
    def run(lib):
        f = _tangent_of_grow(lib)
        jitted = lambda x: lib.jvp(lib.jit(_grow(lib)), (x,), (1.0,))[1]  # noqa: E731
        in_cond = lambda x: lib.lax.cond(x > 0, lambda v: lib.jvp(  # noqa: E731
            _grow(lib), (v,), (1.0,)), lambda v: (v, v), x)[1]
        return {"grad_of_jitted": lambda: lib.grad(jitted)(0.7),
                "grad_in_cond": lambda: lib.grad(in_cond)(0.7),
                "grad": lambda: lib.grad(f)(0.7),
                "vjp": lambda: lib.vjp(f, 0.7)[1](1.0),
                "jit_grad": lambda: lib.jit(lib.grad(f))(0.7),
                "jvp_grad": lambda: lib.jvp(lib.grad(f), (0.7,), (1.0,)),
                "vmap_grad": lambda: lib.vmap(lib.grad(f))(np.float32([0.5, 0.7]))}[how]()
    for o, t in zip(real.tree_util.tree_leaves(run(ours)), real.tree_util.tree_leaves(run(real))):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t))


def test_reverse_mode_of_a_while_that_depends_on_the_input_is_refused_as_in_jax():
    def sine_steps(lib):
        return lambda x: lib.lax.while_loop(lambda c: c[1] < 3,
                                            lambda c: (lib.numpy.sin(c[0]), c[1] + 1),
                                            (x, 0))[0]
    for lib in (real, ours):
        with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
            lib.grad(lambda x: lib.jvp(sine_steps(lib), (x,), (1.0,))[1])(0.7)
        with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
            lib.grad(_grow(lib))(0.7)


def _clipped_sine(lib):
    """A custom_vjp function whose bwd doubles the cotangent: its derivative is the rule's."""
    @lib.custom_vjp
    def f(x):
        return lib.numpy.sin(x)
    f.defvjp(lambda x: (lib.numpy.sin(x), lib.numpy.cos(x)), lambda c, g: (2.0 * g * c,))
    return f


def _custom_vjp_inside(lib, where):
    f, lax, np_ = _clipped_sine(lib), lib.lax, lib.numpy
    twice = lambda v: lax.scan(lambda c, _: (f(c), None), v, None, length=2)[0]  # noqa: E731
    return {"cond": lambda x: lax.cond(x > 0, f, lambda v: v * 3.0, x),
            "fori_loop": lambda x: lax.fori_loop(0, 2, lambda i, v: f(v) + v, x),
            "scan": lambda x: lax.scan(lambda c, w: (f(c * w), None), x,
                                       np.float32([1.0, 0.5]))[0],
            "scan in cond": lambda x: lax.cond(x > 0, twice, np_.sin, x),
            "cond in scan": lambda x: lax.scan(lambda c, _: (lax.cond(c > 0, f, np_.sin, c),
                                                             None), x, None, length=2)[0],
            "jit": lib.jit(lambda x: f(x) * x),
            "checkpoint": lib.checkpoint(lambda x: f(f(x)) * x),
            "checkpoint in scan": lambda x: lax.scan(lib.checkpoint(
                lambda c, w: (f(c) * w + c, None)), x, np.float32([0.8, -0.5]))[0]}[where]


WHERE = ["cond", "fori_loop", "scan", "scan in cond", "cond in scan", "jit", "checkpoint",
         "checkpoint in scan"]


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("how", ["jvp_grad", "hessian", "grad_grad", "grad_grad_grad"])
def test_higher_order_of_a_custom_vjp_inside_a_program(where, how):
    """A second derivative of a custom_vjp function inside a branch, a loop, a jit or a
    checkpoint: the inner grad differentiates the call by its bwd, and the outer
    differentiation sees its fwd, as in JAX. Before ``primal_below`` claimed the programs,
    forward over reverse raised here (a jvp of a custom_vjp function), and reverse over
    reverse through a scan (or a checkpoint in one) was silently wrong: the outer grad
    applied bwd again."""
    def run(lib):
        h, g = _custom_vjp_inside(lib, where), lib.grad
        return {"jvp_grad": lambda: lib.jvp(g(h), (0.5,), (1.0,)),
                "hessian": lambda: lib.hessian(h)(0.5),
                "grad_grad": lambda: g(g(h))(0.5),
                "grad_grad_grad": lambda: g(g(g(h)))(0.5)}[how]()
    for o, t in zip(real.tree_util.tree_leaves(run(ours)), real.tree_util.tree_leaves(run(real))):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=2e-6)


@pytest.mark.parametrize("where", ["cond", "jit", "scan"])
def test_forward_mode_of_a_custom_vjp_inside_a_program_is_still_refused(where):
    """Without a grad above, a jvp of the call is refused as in JAX, also after the same
    program was differentiated under grad (the claimed programs are copies)."""
    for lib in (ours, real):
        h = _custom_vjp_inside(lib, where)
        lib.jvp(lib.grad(h), (0.5,), (1.0,))
        with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
            lib.jvp(h, (0.5,), (1.0,))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        ours.grad(lambda x: ours.jvp(_custom_vjp_inside(ours, where), (x,), (1.0,))[1])(0.5)
