"""Structured control flow (issue 7): ``cond``, ``switch``, ``while_loop``, ``fori_loop`` and
``scan`` against their Python meaning, eagerly and under ``jit`` (one
primitive holding jaxprs); their printed jaxprs; their type errors; and their derivatives
(``check_grads``: JVP and VJP against numerical ones, to second order), including an RNN and
an RK4 pendulum integrator checked against NumPy."""

import numpy as np
import pytest
from backend_under_test import cpu_only, trips
from stage1_autodiff.test_util import check_grads

import stage2_jit as jax
from stage2_jit import lax
from stage2_jit import numpy as jnp

rng = np.random.default_rng(0)


def close(got, want, rtol=1e-5, atol=1e-6):
    for g, w in zip(jax.tree_leaves(got), jax.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def primitives_of(f, *args):
    return [eqn.primitive.name for eqn in jax.make_jaxpr(f)(*args).jaxpr.eqns]


# ------------------------------------------------------------------------------------------
# cond and switch
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [-1.5, 0.0, 2.0])
def test_cond_eager_and_jitted(x):
    def f(x):
        return lax.cond(x > 0, lambda v: jnp.sin(v) * 2, lambda v: jnp.cos(v) - 1, x)
    want = np.sin(x) * 2 if x > 0 else np.cos(x) - 1
    close(f(x), want)
    close(jax.jit(f)(x), want)
    assert "cond" in primitives_of(f, x)


def test_cond_with_pytrees_and_closures():
    w = jnp.asarray(rng.standard_normal(3).astype(np.float32))

    def f(x, scale):
        # the branches close over w (a constant) and scale (a traced value)
        return lax.cond(x.sum() > 0, lambda p: {"a": p[0] * w, "b": p[1] + scale},
                        lambda p: {"a": p[0] - w, "b": p[1] * scale}, (x, 2.0))
    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    for sign in (1.0, -1.0):
        close(jax.jit(f)(sign * x, 3.0), f(sign * x, 3.0))


def test_switch_clamps_its_index():
    branches = [lambda v: v + 1.0, lambda v: v * 10.0, lambda v: -v]
    f = jax.jit(lambda i, x: lax.switch(i, branches, x))
    for i, want in [(-3, 3.0), (0, 3.0), (1, 20.0), (2, -2.0), (7, -2.0)]:
        close(f(i, 2.0), want)
        close(lax.switch(i, branches, 2.0), want)


def test_cond_prints_as_jax_does():
    text = str(jax.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0))
    assert "cond[\n      branches=(\n        { lambda ; e:f32[]. let f:f32[] = cos e" in text
    assert "] c a\n" in text


def test_cond_errors():
    with pytest.raises(TypeError, match=r"true_fun gives i32\[\] at \[1\], but false_fun gives"
                                        r" f32\[\] there|false_fun gives f32\[\] at \[1\], but "
                                        r"true_fun gives i32\[\]"):
        jax.jit(lambda x: lax.cond(x > 0, lambda v: (v, 1), lambda v: (v, 1.0), x))(1.0)
    with pytest.raises(TypeError, match="same structure"):
        jax.jit(lambda x: lax.cond(x > 0, lambda v: (v, v), lambda v: v, x))(1.0)
    with pytest.raises(TypeError, match="predicate must be a scalar.*shape \\(2,\\)"):
        lax.cond(jnp.ones(2) > 0, jnp.sin, jnp.cos, 1.0)


def test_grad_of_cond():
    def f(x):
        return lax.cond(x.sum() > 0, lambda v: jnp.sin(v) * v, lambda v: jnp.exp(v), x)
    for x in (np.array([0.3, 0.5]), np.array([-0.3, -0.5])):
        check_grads(f, (x.astype(np.float32),), order=2)
        check_grads(jax.jit(f), (x.astype(np.float32),), order=1)


# ------------------------------------------------------------------------------------------
# while_loop and fori_loop
# ------------------------------------------------------------------------------------------


def collatz_steps(n):
    def body(c):
        k, steps = c
        return lax.cond(k % 2 == 0, lambda k: k // 2, lambda k: 3 * k + 1, k), steps + 1
    return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))[1]


@pytest.mark.parametrize("n", [1, 6, 27])
def test_while_loop_eager_and_jitted(n):
    want = 0
    k = n
    while k != 1:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        want += 1
    assert int(collatz_steps(n)) == want
    assert int(jax.jit(collatz_steps)(n)) == want
    assert "while" in primitives_of(collatz_steps, n)


def test_while_loop_errors():
    with pytest.raises(TypeError, match=r"body_fun must keep the carry's types: the initial "
                                        r"carry gives f32\[\] at \[1\], but body_fun gives "
                                        r"f32\[2\] there"):
        jax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1,
                                                                         jnp.ones(2)),
                                         (0, x)))(1.0)
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        jax.jit(lambda x: lax.while_loop(lambda c: c, lambda c: c + 1.0, x))(1.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop.*fori_loop.*scan"):
        jax.grad(lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0))(2.0)


def test_forward_mode_through_while_loop():
    def f(x):  # 1.5 doubled... by x until it passes 10: 1.5 x^3 at x = 2
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.5)
    out, tangent = jax.jvp(f, (2.0,), (1.0,))
    close(out, 12.0)
    close(tangent, 4.5 * 2.0 ** 2)


def test_a_while_loop_from_a_value_without_a_derivative_has_a_zero_gradient():
    """A carry from ``jnp.ceil(x)`` has no derivative: the tape records no entry for ceil,
    so the loop is not differentiated and the gradient is zeros, as JAX's. (It raised the
    refusal of reverse mode through a while_loop once.)"""
    def loss(x):
        carry = (0, jnp.ceil(x - 0.25))
        return jnp.sum(lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])),
                                      carry)[1])
    x = np.array([-1.75, 0.75], np.float32)
    assert np.asarray(jax.grad(loss)(x)).tolist() == [0.0, 0.0]
    assert float(jax.jvp(loss, (x,), (np.ones(2, np.float32),))[1]) == 0.0


def test_fori_loop_is_a_scan_with_static_bounds_and_a_while_without():
    def body(i, v):
        return v * 0.5 + jnp.sin(v) * i
    assert primitives_of(lambda x: lax.fori_loop(0, 6, body, x), 1.0).count("scan") == 1
    assert "while" in primitives_of(lambda n, x: lax.fori_loop(0, n, body, x), 6, 1.0)
    want = 1.0
    for i in range(6):
        want = want * 0.5 + np.sin(want) * i
    close(lax.fori_loop(0, 6, body, 1.0), want)
    close(jax.jit(lambda x: lax.fori_loop(0, 6, body, x))(1.0), want)
    close(jax.jit(lambda n, x: lax.fori_loop(0, n, body, x))(6, 1.0), want)
    check_grads(lambda x: lax.fori_loop(0, 6, body, x), (np.float32(1.0),), order=2)


# ------------------------------------------------------------------------------------------
# scan
# ------------------------------------------------------------------------------------------


def cumulative(c, x):
    return c + x, c * x


def test_scan_eager_and_jitted_forward_and_reverse():
    xs = rng.standard_normal(5).astype(np.float32)
    for reverse in (False, True):
        c, ys = 0.0, []
        for x in (xs[::-1] if reverse else xs):
            c, y = c + x, c * x
            ys.append(y)
        want = (c, np.array(ys[::-1] if reverse else ys))
        close(lax.scan(cumulative, 0.0, xs, reverse=reverse), want)
        close(jax.jit(lambda xs: lax.scan(cumulative, 0.0, xs, reverse=reverse))(xs), want)


def test_scan_with_pytrees_no_xs_and_no_ys():
    def step(carry, x):
        return {"sum": carry["sum"] + x["a"] * x["b"], "n": carry["n"] + 1}, None
    xs = {"a": jnp.arange(4.0), "b": jnp.ones(4)}
    out = jax.jit(lambda xs: lax.scan(step, {"sum": 0.0, "n": 0}, xs))(xs)
    assert out[1] is None and int(out[0]["n"]) == 4 and float(out[0]["sum"]) == 6.0
    counted = jax.jit(lambda x: lax.scan(lambda c, _: (c * 2.0, c), x, None, length=3))(1.0)
    close(counted, (8.0, np.array([1.0, 2.0, 4.0])))
    with pytest.raises(ValueError, match="leading dims"):
        lax.scan(cumulative, 0.0, jnp.ones(3), length=4)
    with pytest.raises(ValueError, match="needs length="):
        lax.scan(cumulative, 0.0, None)


def test_a_long_scan_is_one_equation():
    def loop(n):
        return jax.jit(lambda x: lax.fori_loop(0, n, lambda i, v: v * 0.999 + 0.002, x))
    assert primitives_of(loop(10_000).fun, 1.0) == ["scan"]
    n = trips(10_000)
    close(loop(n)(1.0), 2.0 - 0.999 ** n, rtol=1e-4)  # v_n = 2 - 0.999**n from v_0 = 1


def test_scan_errors_name_the_carry_leaf():
    with pytest.raises(TypeError, match=r"f must keep the carry's types: the initial carry "
                                        r"gives i32\[\] at \[0\], but f gives f32\[\] there"):
        jax.jit(lambda xs: lax.scan(lambda c, x: ((c[0] * 1.5, c[1]), x),
                                    (jnp.int32(1), 0.0), xs))(jnp.ones(3))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_python_number_carry_takes_the_bodys_type(jit):
    """A weakly typed initial carry (a Python number) of another dtype than the body returns
    becomes that dtype, and the body is traced again (JAX's rule), eagerly as under jit: so
    a float sum may start from 0. The same body runs once per trace, not once per step."""
    calls = []

    def total(xs):
        def step(i, s):
            calls.append(i)
            return s + xs[i]
        return lax.fori_loop(0, 3, step, 0), lax.while_loop(lambda c: c < 2, lambda c: c + 0.5, 0)

    xs = jnp.asarray([0.5, 1.5, 2.5])
    loop_sum, count = (jax.jit(total) if jit else total)(xs)
    assert (loop_sum.dtype, float(loop_sum), count.dtype, float(count)) == (
        np.float32, 4.5, np.float32, 2.0)
    assert len(calls) == 2  # traced on the int carry, then again on the float one
    with pytest.raises(TypeError, match="must have equal types, got int16 and int32"):
        lax.fori_loop(jnp.int16(0), jnp.int32(3), lambda i, s: s + i, 0)


# map, a scan with an empty carry: Task 2.10.


def loop_map(f, xs):
    """What map means: f of each slice along the leading dim, the results stacked."""
    leaves, tree = jax.tree_flatten(xs)
    outs = [f(jax.tree_unflatten(tree, [x[i] for x in leaves])) for i in range(len(leaves[0]))]
    return jax.tree_util.tree_map(lambda *ys: jnp.stack(ys), *outs)


def slices_product(p):
    return jnp.sin(p["a"]) * p["b"][0], {"twice": p["b"][1] * 2.0}


@pytest.mark.task2_10
@pytest.mark.parametrize("length", [1, 4])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)], ids=str)
def test_map_equals_a_loop_over_the_slices(length, shape):
    xs = {"a": rng.standard_normal((length, *shape)).astype(np.float32),
          "b": (rng.standard_normal(length).astype(np.float32), jnp.ones((length, 2)))}
    want = loop_map(slices_product, xs)
    close(lax.map(slices_product, xs), want)
    jitted = jax.jit(lambda xs: lax.map(slices_product, xs), backend="interpreter")
    close(jitted(xs), want)


@pytest.mark.task2_10
def test_map_is_one_scan_without_a_carry_under_jit_and_grad():
    xs = jnp.arange(5.0)
    closed = jax.make_jaxpr(lambda xs: lax.map(jnp.sin, xs))(xs)
    assert [eqn.primitive.name for eqn in closed.jaxpr.eqns] == ["scan"]
    assert closed.jaxpr.eqns[0].params["num_carry"] == 0
    close(jax.jit(lambda xs: lax.map(lambda x: x * x + 1.0, xs))(xs), xs * xs + 1.0)
    close(jax.grad(lambda xs: lax.map(jnp.sin, xs).sum())(xs), np.cos(np.arange(5.0)))
    with pytest.raises(ValueError, match="leading dims"):
        lax.map(lambda p: p[0] + p[1], (jnp.ones(2), jnp.ones(3)))


def test_grad_of_scan():
    xs = (rng.standard_normal((4, 3)) * 0.5).astype(np.float32)
    w = (rng.standard_normal((3, 3)) * 0.5).astype(np.float32)

    def f(w, xs):
        final, ys = lax.scan(lambda h, x: (jnp.tanh(h @ w + x), (h * h).sum()), jnp.zeros(3),
                             xs)
        return final.sum() + ys.sum()
    check_grads(f, (w, xs), order=2)
    check_grads(jax.jit(f), (w, xs), order=1)
    check_grads(lambda w, xs: f(w, xs[::-1]), (w, xs), order=1)


# ------------------------------------------------------------------------------------------
# Two programs: an RNN and an ODE integrator
# ------------------------------------------------------------------------------------------


def rnn_loss(params, xs):
    def cell(h, x):
        h = jnp.tanh(h @ params["wh"] + x @ params["wx"] + params["b"])
        return h, h @ params["wo"]
    _, ys = lax.scan(cell, jnp.zeros(params["wh"].shape[0]), xs)
    return (ys ** 2).mean()


def rnn_loss_numpy(params, xs):
    h = np.zeros(params["wh"].shape[0])
    ys = []
    for x in xs:
        h = np.tanh(h @ params["wh"] + x @ params["wx"] + params["b"])
        ys.append(h @ params["wo"])
    return (np.array(ys) ** 2).mean()


def test_an_rnn_against_numpy_with_its_gradient():
    params = {k: (rng.standard_normal(s) * 0.4).astype(np.float32)
              for k, s in [("wh", (5, 5)), ("wx", (3, 5)), ("b", (5,)), ("wo", (5, 2))]}
    xs = rng.standard_normal((7, 3)).astype(np.float32)
    close(jax.jit(rnn_loss)(params, xs), rnn_loss_numpy(params, xs), rtol=1e-5)
    check_grads(rnn_loss, (params, xs), order=1)


def pendulum(state, length=1.0):
    theta, omega = state[0], state[1]
    return jnp.stack([omega, -9.81 / length * jnp.sin(theta)])


def rk4(state, dt, length):
    k1 = pendulum(state, length)
    k2 = pendulum(state + dt / 2 * k1, length)
    k3 = pendulum(state + dt / 2 * k2, length)
    k4 = pendulum(state + dt * k3, length)
    return state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate(state, length, steps=300, dt=0.01):
    return lax.fori_loop(0, steps, lambda i, s: rk4(s, dt, length), state)


def integrate_numpy(state, length, steps=300, dt=0.01):
    def f(s):
        return np.array([s[1], -9.81 / length * np.sin(s[0])])
    s = np.asarray(state, np.float64)
    for _ in range(steps):
        k1 = f(s)
        k2 = f(s + dt / 2 * k1)
        k3 = f(s + dt / 2 * k2)
        k4 = f(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s


def test_an_rk4_pendulum_against_numpy_with_its_gradient():
    state = np.array([1.0, 0.0], np.float32)
    close(jax.jit(integrate)(state, 1.0), integrate_numpy(state, 1.0), rtol=1e-4, atol=1e-4)
    # d(final angle)/d(length), and /d(initial state), against central differences
    check_grads(lambda s, length: integrate(s, length, steps=60)[0], (state, np.float32(1.0)),
                order=1, modes=("rev",), eps=1e-2, atol=2e-2)


# ------------------------------------------------------------------------------------------
# Generated code: loops stay loops
# ------------------------------------------------------------------------------------------


@cpu_only
def test_loops_stay_loops_in_the_generated_code():
    """A 10,000-step loop is one loop calling one body function; a cond an if/else; a while
    a while; none falls back to the interpreter."""
    programs = {
        "scan": (lambda x: lax.fori_loop(0, 10_000, lambda i, v: v * 0.999 + 0.001, x), 1.0),
        "while": (collatz_steps, 27),
        "cond": (lambda x: lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x), np.ones(3, np.float32)),
    }
    for kind, (f, x) in programs.items():
        text = jax.jit(f).lower(x).as_text()
        assert "Not generated" not in text, text
        source = text.split("# generated source (cpu)")[1]
        assert {"scan": "def scan_body_", "while": "def while_body_",
                "cond": "def branch_"}[kind] in source
    source = jax.jit(programs["scan"][0]).lower(1.0).as_text().split("# generated source")[1]
    assert source.count("def scan_body_") == 1 and source.count("in range(10000)") == 1
    close(jax.jit(programs["scan"][0])(1.0), 1.0, rtol=1e-4)


def test_loop_buffers_reused_across_steps_do_not_alias():
    """The generated loop reuses a body's arrays from step to step (two sets for the carry,
    taking turns): a step that reads its carry out of order, or returns it as a y too, must
    still see the previous step's values."""
    def step(c, x):
        new = jnp.flip(c) * 0.5 + jnp.concatenate([c[2:], c[:2]]) + x
        return new, new

    xs = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    close(jax.jit(lambda c, xs: lax.scan(step, c, xs))(jnp.arange(3.0), xs),
          lax.scan(step, jnp.arange(3.0), xs))
    spin = lambda c: lax.while_loop(lambda s: s[0] < 5,  # noqa: E731
                                    lambda s: (s[0] + 1, jnp.flip(s[1]) + s[1][0]), c)
    close(jax.jit(spin)((0, jnp.arange(4.0))), spin((0, jnp.arange(4.0))))


def test_jitted_gradient_of_a_long_body_with_many_residuals():
    """The backward scan of the pendulum takes dozens of arrays (residuals, scratch): the
    generated call must stay valid for Numba however many there are."""
    state = np.array([1.0, 0.0], np.float32)

    steps = trips(50)

    def final_angle(length):
        return integrate(state, length, steps=steps)[0]

    got = float(jax.jit(jax.grad(final_angle))(np.float32(1.0)))
    eps = 1e-3
    want = (integrate_numpy(state, 1.0 + eps, steps)[0]
            - integrate_numpy(state, 1.0 - eps, steps)[0]) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=2e-3)


def test_nested_loops_and_a_cond_inside_a_loop():
    def f(x):
        def outer(c, row):
            inner = lax.fori_loop(0, 3, lambda i, v: v * 0.5 + row, c)
            return lax.cond(inner.sum() > 0, lambda v: v - 1.0, lambda v: v * 2.0, inner), \
                inner.sum()
        return lax.scan(outer, jnp.zeros(3), x)

    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    close(jax.jit(f)(x), f(x))


def test_the_passes_reach_inside_bodies_and_branches_without_adding_constants():
    from stage2_jit.passes import optimize

    def f(xs, p):
        def body(c, x):
            table = jnp.arange(3.0) * 2.0  # foldable, but no splat: stays an equation
            return c + x, (c + x) * jnp.add(1.0, 1.0) + table[1]
        carry, ys = lax.scan(body, 0.0, xs)
        return lax.cond(p > 0, lambda v: jnp.sin(v) + jnp.sin(v), lambda v: v, ys), carry

    xs = rng.standard_normal(4).astype(np.float32)
    program = jax.make_jaxpr(f)(xs, 1.0)
    optimized = optimize(program)
    scan_eqn, cond_eqn = (e for e in optimized.jaxpr.eqns if e.primitive.name in ("scan", "cond"))
    body = scan_eqn.params["jaxpr"]
    traced = next(e for e in program.jaxpr.eqns if e.primitive.name == "scan").params["jaxpr"]
    adds = [[e.primitive.name for e in b.jaxpr.eqns].count("add") for b in (traced, body)]
    assert adds[1] < adds[0]  # CSE merged the two c + x
    assert body.consts == [] and not body.jaxpr.constvars  # no constants were added
    assert [v.aval for v in body.jaxpr.invars] == [v.aval for v in traced.jaxpr.invars]
    assert len(body.jaxpr.outvars) == len(traced.jaxpr.outvars)  # the signature is kept
    branch = cond_eqn.params["branches"][1]
    assert [e.primitive.name for e in branch.jaxpr.eqns].count("sin") == 1  # CSE in a branch
    for p in (1.0, -1.0):
        close(jax.jit(f)(xs, p), f(xs, p))


def test_cost_analysis_counts_loop_bodies_by_their_trips_and_the_costliest_branch():
    x = np.ones(100, np.float32)

    def cost(f):
        return jax.jit(f).lower(x).compile().cost_analysis()

    body = cost(lambda v: jnp.sin(v) * 2.0)
    looped = cost(lambda v: lax.fori_loop(0, 7, lambda i, c: jnp.sin(c) * 2.0, v))
    assert looped["flops"] >= 7 * body["flops"] and looped["flops"] < 8 * body["flops"]
    cheap, dear = cost(lambda v: v + 1.0), cost(lambda v: jnp.exp(v) @ v + v)
    branches = cost(lambda v: lax.cond(v[0] > 0, lambda u: u + 1.0,
                                       lambda u: jnp.exp(u) @ u + u, v))
    assert dear["flops"] <= branches["flops"] < dear["flops"] + cheap["flops"]


LOOPS_AND_BRANCHES = {
    "jit": lambda lib, n: lib.jit(n.sin),
    "cond": lambda lib, n: lambda x: lib.lax.cond(True, n.sin, n.cos, x),
    "switch": lambda lib, n: lambda x: lib.lax.switch(1, [n.sin, n.cos, n.tanh], n.tanh(x)),
    "fori_loop": lambda lib, n: lambda x: lib.lax.fori_loop(0, 2, lambda i, c: n.sin(c), x),
    "scan carry": lambda lib, n: lambda x: lib.lax.scan(
        lambda c, _: (n.sin(c), None), x, None, length=2)[0],
    "scan ys": lambda lib, n: lambda x: n.sum(lib.lax.scan(
        lambda c, _: (c, n.sin(c)), x, None, length=2)[1]),
}


@pytest.mark.parametrize("case", list(LOOPS_AND_BRANCHES))
def test_derivatives_through_control_flow_keep_jax_s_weak_types(case):
    """A Python float's derivative through a jit, loop or branch is weakly typed, as in JAX
    (unless the cotangent is not): the results take the types of the program, not the
    generic rule's (which would count the int32 index or a constant among the operands)."""
    real = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    theirs = LOOPS_AND_BRANCHES[case](real, real_jnp)
    mine = LOOPS_AND_BRANCHES[case](jax, jnp)
    for transform in (lambda lib, f: lib.grad(f)(0.3),
                      lambda lib, f: lib.jvp(f, (0.3,), (1.0,))[1],
                      lambda lib, f: lib.jit(lib.grad(f))(0.3),
                      # a strongly typed cotangent gives a strongly typed result
                      lambda lib, f: lib.vjp(f, 0.3)[1](lib.numpy.ones((), "float32"))[0]):
        want, got = transform(real, theirs), transform(jax, mine)
        assert got.weak_type == want.weak_type
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
