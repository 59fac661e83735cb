"""``jax.experimental.ode.odeint`` against JAX 0.10.2 (the module was missing): exponential
decay, a damped oscillator whose state is a dict, and a Lotka–Volterra system with ``*args``,
at several times; gradients with respect to ``y0``, ``args``, the times and a value ``func``
closes over (the adjoint method); a case under ``jit`` and one under ``vmap`` (of values and
of gradients); ``hmax``, ``mxstep`` and a complex state; the errors JAX raises.

The solver decides whether to take each step from an error estimate near float32's rounding
(the default ``rtol`` is 1.4e-8), and XLA rounds ``a·b + c`` once (a fused multiply-add)
where NumPy rounds twice, so the two libraries need not take the same steps: answers agree to
the solver's accuracy, about 1e-6 relative here, not bit for bit."""

import inspect

import numpy as np
import pytest

import stage4_sharding as ours

jax = pytest.importorskip("jax")
import jax.experimental.ode as their_ode  # noqa: E402
import stage4_sharding.experimental.ode as our_ode  # noqa: E402

TIMES = np.linspace(0.0, 3.0, 7).astype(np.float32)


def systems(lib):
    """Each system as ``(func, y0, t, args, options)``, written with ``lib``."""
    jnp = lib.numpy

    def decay(y, t):
        return -0.7 * y

    def oscillator(state, t):  # x'' = -4x - 0.3x', the velocity as a vector of two
        return {"x": state["v"][0], "v": -4.0 * state["x"] - 0.3 * state["v"]}

    def lotka_volterra(y, t, a, b, c, d):
        prey, predators = y[0], y[1]
        return jnp.stack([a * prey - b * prey * predators, d * prey * predators - c * predators])

    return {
        "decay": (decay, 2.0, TIMES, (), {}),
        "oscillator": (oscillator, {"x": np.float32(1.0), "v": np.zeros(2, np.float32)},
                       TIMES, (), {}),
        "lotka_volterra": (lotka_volterra, np.array([10.0, 5.0], np.float32),
                           np.linspace(0.0, 8.0, 5).astype(np.float32),
                           (1.1, 0.4, 0.4, 0.1), {"rtol": 1e-6, "atol": 1e-6}),
    }


def assert_trees_close(got, expected, rtol=1e-5, atol=1e-6):
    got, expected = jax.tree.leaves(got), jax.tree.leaves(expected)
    assert [(np.shape(g), np.asarray(g).dtype) for g in got] == \
        [(np.shape(e), np.asarray(e).dtype) for e in expected]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=atol)


def test_signature_and_imports_as_jax():
    def parameters(fun):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fun).parameters.values()]

    assert parameters(our_ode.odeint) == parameters(their_ode.odeint)
    import stage2_jit.experimental.ode
    import stage3_vmap.experimental.ode
    from stage4_sharding.experimental.ode import odeint
    assert odeint is stage2_jit.experimental.ode.odeint is stage3_vmap.experimental.ode.odeint


@pytest.mark.parametrize("name", ["decay", "oscillator", "lotka_volterra"])
def test_values_as_jax(name):
    def solve(lib, ode):
        func, y0, t, args, options = systems(lib)[name]
        return ode.odeint(func, y0, t, *args, **options)

    assert_trees_close(solve(ours, our_ode), solve(jax, their_ode))


def test_gradients_as_jax():
    """With respect to ``y0``, the times and every argument, through a loss on all times."""
    def gradients(lib, ode):
        func, y0, t, args, options = systems(lib)["lotka_volterra"]

        def loss(y0, t, *args):
            ys = ode.odeint(func, y0, t, *args, **options)
            return (ys[:, 0] * lib.numpy.arange(1.0, 6.0)).sum() - (ys[:, 1] ** 2).sum()

        return lib.grad(loss, argnums=tuple(range(2 + len(args))))(y0, t, *args)

    assert_trees_close(gradients(ours, our_ode), gradients(jax, their_ode), rtol=1e-4)


def test_gradients_of_a_pytree_state_and_a_closure_as_jax():
    """``func`` closes over a differentiated value (JAX's odeint closure-converts ``func``);
    the state is a dict."""
    def gradients(lib, ode):
        func, y0, t, _, _ = systems(lib)["oscillator"]

        def loss(stiffness, y0):
            def pulled(state, t):
                return {"x": func(state, t)["x"], "v": func(state, t)["v"] * stiffness}
            ys = ode.odeint(pulled, y0, t)
            return (ys["x"] ** 2).sum() + ys["v"][-1].sum()

        return lib.grad(loss, argnums=(0, 1))(1.5, y0)

    assert_trees_close(gradients(ours, our_ode), gradients(jax, their_ode), rtol=1e-4)


def test_under_jit_as_jax():
    """The decay (the smallest program: ``jit`` compiles the solver's loops with Numba)."""
    def solve(lib, ode):
        func, y0, t, _, _ = systems(lib)["decay"]
        return lib.jit(lambda y0, t: ode.odeint(func, y0, t))(np.float32(y0), t)

    assert_trees_close(solve(ours, our_ode), solve(jax, their_ode))


def test_under_vmap_as_jax():
    """A batch of rates (closed over, so closure conversion meets ``vmap``) and initial
    values; then the gradient of each example's last value."""
    rates = np.array([0.3, 1.0, 2.5], np.float32)
    starts = np.array([1.0, -2.0, 0.5], np.float32)

    def solve(lib, ode):
        def one(rate, y0):
            return ode.odeint(lambda y, t: -rate * y + lib.numpy.sin(t), y0, TIMES)
        last = lib.grad(lambda rate, y0: one(rate, y0)[-1], argnums=(0, 1))
        return lib.vmap(one)(rates, starts), lib.vmap(last)(rates, starts)

    assert_trees_close(solve(ours, our_ode), solve(jax, their_ode), rtol=1e-4)


def test_options_and_a_complex_state_as_jax():
    """``hmax`` and ``mxstep`` (at a tolerance where both libraries take the same steps), and
    a complex state."""
    def solve(lib, ode):
        decay, y0, t, _, _ = systems(lib)["decay"]
        return (ode.odeint(decay, y0, t, hmax=0.05),
                ode.odeint(decay, y0, t, mxstep=2, rtol=1e-3, atol=1e-3),
                ode.odeint(lambda y, t: -1j * y, np.complex64(1.0), t))

    assert_trees_close(solve(ours, our_ode), solve(jax, their_ode))


def _decay(y, t):
    return -y


@pytest.mark.parametrize("call, error, words", [
    (lambda lib, ode: ode.odeint(_decay, 1, TIMES), TypeError, "y0 must hold floats"),
    (lambda lib, ode: ode.odeint(_decay, 1.0, np.float32(1.0)), IndexError, "must be 1-D"),
    (lambda lib, ode: ode.odeint(_decay, 1.0, np.ones((2, 2), np.float32)), TypeError,
     "must be 1-D"),
    (lambda lib, ode: ode.odeint(_decay, 1.0, np.arange(3)), TypeError, "array of floats"),
    (lambda lib, ode: ode.odeint(_decay, 1.0, [0.0, 1.0]), AttributeError, "no dtype"),
    (lambda lib, ode: ode.odeint(lambda y, t: (y, y), 1.0, TIMES), ValueError,
     "as many numbers as y0"),
    (lambda lib, ode: ode.odeint(lambda y, t: y[:2], np.ones(3, np.float32), TIMES), TypeError,
     "as many numbers as y0"),
    (lambda lib, ode: ode.odeint(lambda y, t, s: -y, 1.0, TIMES, "fast"), TypeError,
     r"\*args must hold arrays"),
    (lambda lib, ode: ode.odeint(3.0, 1.0, TIMES), TypeError, "func must be a function"),
    (lambda lib, ode: lib.jvp(lambda y0: ode.odeint(_decay, y0, TIMES), (1.0,), (1.0,)),
     TypeError, "forward-mode"),
])
def test_errors_as_jax(call, error, words):
    with pytest.raises(error):
        call(jax, their_ode)
    with pytest.raises(error, match=words):
        call(ours, our_ode)
