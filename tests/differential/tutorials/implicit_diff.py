"""Derivatives a solver library writes by hand: a fixed-point solver (lax.while_loop)
differentiated implicitly with custom_vjp and nondiff_argnums, its backward pass itself a
fixed point, used for Newton's square root (checked against 0.5 / sqrt(a), under vmap and
jit) and for a small deep-equilibrium layer whose parameters are a tuple (checked against
unrolled iterations); a custom_vjp that bounds the norm of the gradient flowing back
through each step of an RNN in lax.scan, per sequence under vmap; and a custom_jvp norm
that is smooth at zero, pushed through jax.jvp, jax.linearize (the linear map vmapped over
tangents) and jax.linear_transpose of that map, which gives the gradient."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, params, x0):
    def not_done(carry):
        prev, x, i = carry
        gap = jax.tree.reduce(jnp.maximum, jax.tree.map(lambda u, v: jnp.max(jnp.abs(u - v)),
                                                        prev, x))
        return (gap > 1e-6) & (i < 200)

    def step(carry):
        _, x, i = carry
        return x, f(params, x), i + 1

    _, x_star, _ = lax.while_loop(not_done, step, (x0, f(params, x0), 0))
    return x_star


def _fixed_point_fwd(f, params, x0):
    x_star = fixed_point(f, params, x0)
    return x_star, (params, x_star)


def _adjoint_step(f, packed, u):
    params, x_star, x_bar = packed
    _, pullback = jax.vjp(lambda x: f(params, x), x_star)
    return jax.tree.map(jnp.add, x_bar, pullback(u)[0])


def _fixed_point_bwd(f, residuals, x_bar):
    params, x_star = residuals
    _, pullback = jax.vjp(lambda p: f(p, x_star), params)
    u = fixed_point(partial(_adjoint_step, f), (params, x_star, x_bar), x_bar)
    return pullback(u)[0], jax.tree.map(jnp.zeros_like, x_star)


fixed_point.defvjp(_fixed_point_fwd, _fixed_point_bwd)


def newton_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


def deq_layer(params, x):
    w, b = params
    return fixed_point(lambda p, z: jnp.tanh(p[0] @ z + p[1] + x), (w, b), jnp.zeros_like(b))


def unrolled_layer(params, x):
    w, b = params
    return lax.fori_loop(0, 200, lambda _, z: jnp.tanh(w @ z + b + x), jnp.zeros_like(b))


@jax.custom_vjp
def bound_gradient(h):
    return h


def _bound_fwd(h):
    return h, None


def _bound_bwd(_, g):
    norm = jnp.sqrt(jnp.sum(g ** 2))
    return (g * jnp.minimum(1.0, 0.1 / (norm + 1e-12)),)


bound_gradient.defvjp(_bound_fwd, _bound_bwd)


def rnn_loss(w, xs, bounded):
    def step(h, x):
        h = jnp.tanh(w @ h + x)
        return (bound_gradient(h) if bounded else h), h

    _, hs = lax.scan(step, jnp.zeros(w.shape[0]), xs)
    return jnp.sum(hs[-1] ** 2) + 0.1 * jnp.sum(hs ** 2)


@jax.custom_jvp
def smooth_norm(x):
    return jnp.sqrt(jnp.sum(x ** 2) + 1e-3)


@smooth_norm.defjvp
def _smooth_norm_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = smooth_norm(x)
    return y, jnp.vdot(x, t) / y


def main():
    a = jnp.array([0.25, 2.0, 9.0, 30.0])
    roots = jax.jit(jax.vmap(newton_sqrt))(a)
    droots = jax.vmap(jax.grad(newton_sqrt))(a)
    exact = 0.5 / jnp.sqrt(a)

    k1, k2, k3, k4 = jax.random.split(jax.random.key(44), 4)
    w = 0.3 * jax.random.normal(k1, (5, 5))
    b = 0.1 * jax.random.normal(k2, (5,))
    x = jax.random.normal(k3, (5,))
    deq_loss = jax.jit(lambda p: jnp.sum(deq_layer(p, x) ** 2))
    g_implicit = jax.grad(deq_loss)((w, b))
    g_unrolled = jax.grad(lambda p: jnp.sum(unrolled_layer(p, x) ** 2))((w, b))

    xs = jax.random.normal(k4, (3, 6, 5))  # three sequences of six steps
    w_rnn = 0.8 * w
    per_seq = jax.jit(jax.vmap(jax.grad(rnn_loss), in_axes=(None, 0, None)),
                      static_argnums=(2,))
    bounded, plain = per_seq(w_rnn, xs, True), per_seq(w_rnn, xs, False)

    v = jnp.array([0.3, -1.2, 2.0, 0.0])
    y, y_dot = jax.jvp(smooth_norm, (v,), (jnp.ones(4),))
    y_lin, f_jvp = jax.linearize(smooth_norm, v)
    directional = jax.vmap(f_jvp)(jnp.eye(4))
    (cotangent,) = jax.linear_transpose(f_jvp, v)(jnp.float32(1.0))
    hess = jax.hessian(smooth_norm)(v)
    at_zero = jax.grad(smooth_norm)(jnp.zeros(3))
    return (roots, droots, exact, g_implicit, g_unrolled, bounded, plain, y, y_dot, y_lin,
            directional, cotangent, jax.grad(smooth_norm)(v), hess, at_zero)
