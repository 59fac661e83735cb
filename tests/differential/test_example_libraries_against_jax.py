"""``jax.example_libraries``, ``optimizers`` and ``stax``, against JAX 0.10.2's: the same
training steps, schedules, parameters drawn from the same keys, layers' outputs and their
gradients, eagerly and under ``jit``; and the errors of their misuse. Older tutorials and
course material import these two modules, so a program that uses them must run with only the
import swapped. (``lax``'s shape functions, which stax's layers use, are checked too.)"""

import importlib

import numpy as np
import pytest
from oracle import assert_call_as_jax, assert_raises_as_jax

import stage4_sharding as ours

real = pytest.importorskip("jax")

RNG = np.random.default_rng(0)
PARAMS = {"w": RNG.standard_normal((3, 4)).astype(np.float32),
          "b": RNG.standard_normal(4).astype(np.float32), "s": np.float32(0.5)}
IMAGES = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
BATCH = RNG.standard_normal((16, 5)).astype(np.float32)


def _lib(jax, name):
    return importlib.import_module(f"{jax.__name__}.example_libraries.{name}")


OPTIMIZERS = {"sgd": (0.1,), "momentum": (0.1, 0.9), "nesterov": (0.1, 0.9),
              "adagrad": (0.1,), "rmsprop": (0.1,), "rmsprop_momentum": (0.1,),
              "adam": (0.1,), "adamax": (0.1,), "sm3": (0.1,)}


def _optimizer_cases(jax):
    optimizers, jnp = _lib(jax, "optimizers"), jax.numpy

    def loss(p):
        return jnp.sum(jnp.tanh(p["w"] * 2.0) ** 2) + jnp.sum(p["b"] ** 3) + p["s"] ** 2

    def train(name, args, params):
        init, update, get_params = getattr(optimizers, name)(*args)
        state = init(params)
        for step in range(3):
            state = update(step, jax.grad(loss)(get_params(state)), state)
        return get_params(state), state.packed_state

    cases = {name: (lambda p, name=name, args=args: train(name, args, p), PARAMS)
             for name, args in OPTIMIZERS.items()}
    decay = optimizers.exponential_decay(0.1, 2, 0.5)
    cases["adam on a schedule"] = (lambda p: train("adam", (decay,), p), PARAMS)
    cases["l2_norm"] = (optimizers.l2_norm, PARAMS)
    for bound in (0.5, 100.0):
        cases[f"clip_grads to {bound}"] = (lambda p, b=bound: optimizers.clip_grads(p, b),
                                           PARAMS)
    return cases


SCHEDULES = {"constant": (0.1,), "exponential_decay": (0.1, 10, 0.5),
             "inverse_time_decay": (0.1, 3, 0.5), "polynomial_decay": (0.1, 4, 0.01),
             "piecewise_constant": ([2, 4], [1.0, 0.5, 0.1])}


def _schedule_cases(jax):
    optimizers = _lib(jax, "optimizers")
    cases = {}
    for name, args in SCHEDULES.items():
        schedule = getattr(optimizers, name)(*args)
        cases[name] = (lambda i, s=schedule: [s(i), s(i + 3), s(7)], np.int32(1))
    staircase = optimizers.inverse_time_decay(0.1, 3, 0.5, staircase=True)
    cases["inverse_time_decay staircase"] = (lambda i: [staircase(i), staircase(i + 3)],
                                             np.int32(1))
    return cases


def _networks(stax):
    return {
        "conv, batch norm, pools, dense": (stax.serial(
            stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Relu,
            stax.MaxPool((2, 2), strides=(2, 2)), stax.Flatten, stax.Dense(5),
            stax.LogSoftmax), IMAGES),
        "strided conv, average and sum pools": (stax.serial(
            stax.Conv(4, (3, 2), strides=(2, 1)), stax.Tanh,
            stax.AvgPool((2, 2), padding="SAME"),
            stax.SumPool((3, 3), strides=(2, 2), padding="SAME")), IMAGES),
        "general conv and every activation": (stax.serial(
            stax.GeneralConv(("NHWC", "OIHW", "NHWC"), 3, (2, 2)), stax.Elu, stax.Selu,
            stax.Gelu, stax.Sigmoid, stax.Softplus, stax.LeakyRelu, stax.Exp, stax.Softmax),
            IMAGES),
        "transposed convs": (stax.serial(
            stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME"),
            stax.ConvTranspose(2, (2, 2), strides=(2, 2))), IMAGES),
        "1-D transposed conv": (stax.Conv1DTranspose(2, (3,), strides=(2,)), IMAGES[:, 0]),
        "fan out, parallel, sum": (stax.serial(
            stax.FanOut(3), stax.parallel(stax.Dense(5), stax.Identity, stax.Dense(5)),
            stax.FanInSum), BATCH),
        "fan out, parallel, concat": (stax.serial(
            stax.FanOut(2), stax.parallel(stax.Dense(2), stax.Dense(3)),
            stax.FanInConcat(-1)), BATCH),
        "batch norm on axis 0, scale only": (stax.BatchNorm(axis=0, center=False), BATCH),
        "batch norm, center only": (stax.BatchNorm(axis=(0,), scale=False), BATCH),
        "batch norm, neither": (stax.BatchNorm(axis=(0,), center=False, scale=False), BATCH),
        "average pool, NCH": (stax.AvgPool((2,), spec="NCH"), IMAGES[:, :, 0]),
        "shape dependent": (stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2)),
                            BATCH),
        "dense and dropout": (stax.serial(stax.Dense(6), stax.Dropout(0.7)), BATCH),
        "dropout, test mode": (stax.Dropout(0.7, mode="test"), BATCH),
    }


def _network_cases(jax):
    stax, jnp = _lib(jax, "stax"), jax.numpy
    cases = {}
    for name, ((init_fun, apply_fun), x) in _networks(stax).items():
        def init(init_fun=init_fun, x=x):
            shape, params = init_fun(jax.random.key(0), x.shape)
            return [np.array(shape)], params

        def apply(x, init_fun=init_fun, apply_fun=apply_fun):
            params = init_fun(jax.random.key(0), x.shape)[1]
            return apply_fun(params, x, rng=jax.random.key(3))

        def grad(x, init_fun=init_fun, apply_fun=apply_fun):
            params = init_fun(jax.random.key(0), x.shape)[1]
            loss = lambda p: jnp.sum(apply_fun(p, x, rng=jax.random.key(3)) ** 2)  # noqa: E731
            return jax.grad(loss)(params)

        cases[f"{name}: init"] = (init,)
        cases[f"{name}: apply"] = (apply, x)
        cases[f"{name}: grad"] = (grad, x)
    return cases


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_optimizer_cases(ours)))
def test_optimizers_as_jax(name, how):
    assert_call_as_jax(_optimizer_cases, name, how, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("how", ["eager", "jit"])
@pytest.mark.parametrize("name", list(_schedule_cases(ours)))
def test_schedules_as_jax(name, how):
    assert_call_as_jax(_schedule_cases, name, how)


# Under jit each network compiles kernels of its own: three of them, the others eagerly.
JITTED_NETWORKS = ("conv, batch norm, pools, dense", "fan out, parallel, sum",
                   "dense and dropout")
NETWORK_CALLS = [(name, how) for name in _network_cases(ours) for how in ("eager", "jit")
                 if how == "eager" or name.startswith(JITTED_NETWORKS)]


@pytest.mark.parametrize(("name", "how"), NETWORK_CALLS)
def test_stax_as_jax(name, how):
    # a gradient sums over a batch: its large entries (~20) set the absolute tolerance
    atol = 1e-4 if name.endswith("grad") else 3e-6
    assert_call_as_jax(_network_cases, name, how, rtol=3e-5, atol=atol)


def test_a_jitted_training_loop_carries_the_optimizer_state_as_jax():
    """The state is a pytree: a jitted step takes it and returns it, and the loss falls in
    both libraries alike."""
    def losses(jax):
        optimizers, stax, jnp = _lib(jax, "optimizers"), _lib(jax, "stax"), jax.numpy
        init_fun, apply_fun = stax.serial(stax.Dense(8), stax.Tanh, stax.Dense(1))
        opt_init, opt_update, get_params = optimizers.adam(0.05)
        state = opt_init(init_fun(jax.random.key(1), BATCH.shape)[1])
        target = BATCH[:, :1] * 2

        def loss(params):
            return jnp.mean((apply_fun(params, BATCH) - target) ** 2)

        @jax.jit
        def step(i, state):
            value, grads = jax.value_and_grad(loss)(get_params(state))
            return value, opt_update(i, grads, state)

        values = []
        for i in range(5):
            value, state = step(i, state)
            values.append(float(value))
        return values

    got, expected = losses(ours), losses(real)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert got[-1] < got[0]


def test_unpacking_and_packing_the_state_round_trips_as_jax():
    for jax in (ours, real):
        optimizers = _lib(jax, "optimizers")
        state = optimizers.momentum(0.1, 0.9)[0](PARAMS)
        marked = optimizers.unpack_optimizer_state(state)
        assert sorted(marked) == ["b", "s", "w"]
        assert isinstance(marked["w"], optimizers.JoinPoint)
        again = optimizers.pack_optimizer_state(marked)
        assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
        for a, b in zip(jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(state)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _misuses(jax):
    optimizers, stax = _lib(jax, "optimizers"), _lib(jax, "stax")
    init, update, _ = optimizers.adam(0.1)
    return {
        "gradients of another tree": (TypeError, lambda: update(0, {"v": np.ones(2)},
                                                               init(PARAMS))),
        "a step size that is an array": (TypeError, lambda: optimizers.sgd(np.ones(3))),
        "boundaries as many as values": (ValueError,
                                         lambda: optimizers.piecewise_constant([1, 2], [1.0])),
        "boundaries not a sequence": (ValueError,
                                      lambda: optimizers.piecewise_constant([[1]], [1.0, 2])),
        "dropout without a key": (ValueError, lambda: stax.Dropout(0.5)[1]((), np.ones(3))),
        "serial of no layers": (ValueError, lambda: stax.serial()),
        "sm3's state through jit": (TypeError, lambda: jax.jit(optimizers.sm3(0.1)[2])(
            optimizers.sm3(0.1)[0](PARAMS))),
    }


@pytest.mark.parametrize("name", list(_misuses(ours)))
def test_misuses_raise_as_jax(name):
    assert_raises_as_jax(_misuses, name)


def test_our_errors_say_what_to_do():
    optimizers, stax = _lib(ours, "optimizers"), _lib(ours, "stax")
    init, update, _ = optimizers.adam(0.1)
    with pytest.raises(TypeError, match=r"gradients' tree .*'v'.* parameters' tree .*'w'"):
        update(0, {"v": np.ones(2)}, init(PARAMS))
    with pytest.raises(TypeError, match="number or a schedule.*ndarray of shape"):
        optimizers.sgd(np.ones(3))
    with pytest.raises(ValueError, match="rng=key"):
        stax.Dropout(0.5)[1]((), np.ones(3))


SHAPE_CALLS = {
    "conv_general_shape_tuple SAME": ("conv_general_shape_tuple", (1, 8, 8, 3),
                                      (3, 3, 3, 16), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC")),
    "conv_general_shape_tuple pads": ("conv_general_shape_tuple", (1, 8, 8, 3),
                                      (3, 3, 3, 16), (2, 2), [(1, 1), (0, 0)],
                                      ("NHWC", "HWIO", "NHWC")),
    "conv_general_shape_tuple NCHW": ("conv_general_shape_tuple", (2, 3, 9, 7),
                                      (5, 3, 2, 2), (1, 2), "VALID", ("NCHW", "OIHW", "NCHW")),
    "conv_transpose_shape_tuple SAME": ("conv_transpose_shape_tuple", (1, 8, 8, 3),
                                        (3, 3, 3, 16), (2, 2), "SAME",
                                        ("NHWC", "HWIO", "NHWC")),
    "conv_transpose_shape_tuple VALID": ("conv_transpose_shape_tuple", (1, 8, 8, 3),
                                         (3, 3, 3, 16), (2, 2), "VALID",
                                         ("NHWC", "HWIO", "NHWC")),
    "conv_transpose_shape_tuple pads": ("conv_transpose_shape_tuple", (1, 5, 2), (4, 2, 3),
                                        (3,), [(2, 1)], ("NHC", "HIO", "NHC")),
    "conv_shape_tuple": ("conv_shape_tuple", (1, 3, 8, 8), (16, 3, 3, 3), (2, 2), "SAME"),
    "conv_shape_tuple groups": ("conv_shape_tuple", (4, 3, 8, 8), (16, 3, 3, 3), (1, 1),
                                [(0, 0), (1, 2)], 2),
    "reduce_window_shape_tuple": ("reduce_window_shape_tuple", (1, 8, 7, 3), (1, 2, 3, 1),
                                  (1, 2, 2, 1), [(0, 0), (0, 1), (1, 1), (0, 0)]),
    "reduce_window_shape_tuple dilated": ("reduce_window_shape_tuple", (9, 4), (2, 2), (1, 1),
                                          [(0, 0), (0, 0)], (1, 2), (2, 1)),
}


@pytest.mark.parametrize("name", list(SHAPE_CALLS))
def test_lax_shape_functions_as_jax(name):
    function, *args = SHAPE_CALLS[name]
    got = getattr(ours.lax, function)(*args)
    assert type(got) is tuple
    assert got == tuple(int(n) for n in getattr(real.lax, function)(*args))
