"""jit and make_jaxpr: golden jaxprs, caching, errors, and composition with grad and jvp."""

import threading
import time

import numpy as np
import pytest
from backend_under_test import not_on_simulator

import stage2_jit as jax
from stage2_jit import numpy as jnp


def tanh(x):
    y = jnp.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


TANH_JAXPR = """\
{ lambda ; a:f32[]. let
    b:f32[] = mul -2.0:f32[] a
    c:f32[] = exp b
    d:f32[] = sub 1.0:f32[] c
    e:f32[] = add 1.0:f32[] c
    f:f32[] = div d e
  in (f,) }"""


def test_tanh_jaxpr_reads_like_jax():
    assert str(jax.make_jaxpr(tanh)(1.0)) == TANH_JAXPR


def test_short_jaxprs_print_on_one_line_and_constants_as_constvars():
    assert str(jax.make_jaxpr(jnp.sin)(1.0)) == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"
    table = np.arange(3.0, dtype=np.float32)
    text = str(jax.make_jaxpr(lambda x: x + table)(jnp.ones(3)))
    assert text == "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }"


def test_unused_results_print_as_underscore_and_outputs_may_repeat():
    text = str(jax.make_jaxpr(lambda x: (x, x))(1.0))
    assert text == "{ lambda ; a:f32[]. let  in (a, a) }"


def test_grad_of_tanh_is_one_jaxpr_with_forward_and_backward():
    closed = jax.make_jaxpr(jax.grad(tanh))(1.0)
    names = [eqn.primitive.name for eqn in closed.jaxpr.eqns]
    assert names[:5] == ["mul", "exp", "sub", "add", "div"]  # the forward pass
    assert len(names) > 5  # then the taped backward pass
    assert np.allclose(jax.jit(jax.grad(tanh))(1.0), 0.4199743)


@pytest.mark.parametrize("x", [0.3, -1.2, 2.0])
def test_jit_equals_eager(x):
    assert np.allclose(jax.jit(tanh)(x), tanh(x))
    assert np.allclose(jax.jit(jax.grad(tanh))(x), jax.grad(tanh)(x))
    assert np.allclose(jax.grad(jax.jit(tanh))(x), jax.grad(tanh)(x))
    second = jax.grad(jax.grad(tanh))(x)
    assert np.allclose(jax.jit(jax.grad(jax.grad(tanh)))(x), second)
    assert np.allclose(jax.grad(jax.grad(jax.jit(tanh)))(x), second, rtol=1e-5)


def test_jvp_of_jit_and_jit_of_jvp():
    x, t = jnp.array([0.5, 1.5]), jnp.array([1.0, -2.0])
    expected = jax.jvp(tanh, (x,), (t,))
    for out, want in zip(jax.jvp(jax.jit(tanh), (x,), (t,)), expected):
        assert np.allclose(out, want)
    jitted_jvp = jax.jit(lambda x, t: jax.jvp(tanh, (x,), (t,)))
    for out, want in zip(jitted_jvp(x, t), expected):
        assert np.allclose(out, want)


def test_nested_jit_shows_inner_program():
    inner = jax.jit(jnp.sin)
    closed = jax.make_jaxpr(lambda x: inner(x) * 2.0)(1.0)
    (call, _) = closed.jaxpr.eqns
    assert call.primitive.name == "jit" and call.params["name"] == "sin"
    assert "jaxpr={ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }" in str(closed)
    assert np.allclose(jax.jit(lambda x: inner(x) * 2.0)(1.0), 2 * np.sin(1.0))


def test_cache_hits_on_same_signature_and_retraces_on_new_one():
    traces = []

    @jax.jit
    def f(x):
        traces.append(x.shape)
        return x * 2

    f(jnp.ones(3))
    f(jnp.zeros(3))
    assert len(traces) == 1 and f._cache_size() == 1
    f(jnp.ones(4))  # new shape
    f(jnp.ones(3, jnp.int32))  # new dtype
    f(1.0)  # weak-typed scalar
    f(jnp.float32(1.0))  # strongly typed scalar: a different key
    assert len(traces) == 5 and f._cache_size() == 5


def test_print_runs_at_trace_time_debug_print_on_every_call(capsys):
    @jax.jit
    def f(x):
        print("tracing")
        jax.debug.print("value {}", x)
        return x + 1

    f(1.0)
    f(2.0)
    out = capsys.readouterr().out.splitlines()
    assert out == ["tracing", "value 1.0", "value 2.0"]


def test_static_argnums_and_argnames():
    calls = []

    def power(x, n):
        calls.append(n)
        return x ** n

    f = jax.jit(power, static_argnums=1)
    assert float(f(2.0, 3)) == 8.0 and float(f(2.0, 3)) == 8.0 and calls == [3]
    assert float(f(2.0, 2)) == 4.0 and calls == [3, 2]
    g = jax.jit(power, static_argnames="n")
    assert float(g(3.0, n=2)) == 9.0


def test_decorator_factory():
    @jax.jit(static_argnames=("axis",))
    def total(x, axis):
        return jnp.sum(x, axis=axis)

    assert total(jnp.ones((2, 3)), axis=1).shape == (2,)


def test_pytree_arguments_and_outputs():
    @jax.jit
    def f(params, x):
        return {"y": params["w"] * x + params["b"], "n": x.shape[0]}

    out = f({"w": jnp.ones(2), "b": 1.0}, jnp.arange(2.0))
    assert np.allclose(out["y"], [1.0, 2.0]) and int(out["n"]) == 2


def test_python_if_on_traced_value_is_a_concretization_error():
    @jax.jit
    def f(x):
        if x > 0:
            return x
        return -x

    message = r"argument x.*static_argnums.*jnp\.where"
    with pytest.raises(jax.ConcretizationTypeError, match=message):
        f(1.0)


def test_non_hashable_static_argument():
    f = jax.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(ValueError, match=r"Non-hashable static arguments.*list"):
        f(jnp.ones(4), [2, 2])


def test_non_array_argument_names_its_path():
    f = jax.jit(lambda x, options: x)
    with pytest.raises(TypeError, match=r"type <class 'str'>.*path options\['mode'\].*static"):
        f(1.0, {"mode": "fast"})


# The cache through ``lower``, which traces (and caches) without compiling: Task 2.3's tests,
# which must pass before dead-code elimination (Task 2.4), which compiling needs, is written.


@pytest.mark.task2_3
def test_the_cache_key_is_structure_avals_statics_and_x64():
    traces = []

    def norm(v, scale=1.0):
        traces.append(jax.tree_structure(v))
        return scale * jnp.sqrt(sum(x * x for x in v))

    f = jax.jit(norm)
    f.lower((3.0, 4.0))
    f.lower((6.0, 8.0))  # same avals: a hit
    assert len(traces) == 1 and f._cache_size() == 1
    f.lower([3.0, 4.0])  # a list, not a tuple: a new tree structure
    f.lower((jnp.float32(3.0), 4.0))  # a strong float32: a new aval
    f.lower((jnp.ones(2), 4.0))  # a new shape
    f.lower((3.0, 4.0), scale=2.0)  # a keyword argument is part of the tree
    assert len(traces) == 5 and f._cache_size() == 5
    jax.config.update("jax_enable_x64", True)
    try:
        f.lower((3.0, 4.0))  # the same arguments, traced to other dtypes
    finally:
        jax.config.update("jax_enable_x64", False)
    assert len(traces) == 6 and f._cache_size() == 6
    for option, value in (("jax_numpy_rank_promotion", "raise"),
                          ("jax_threefry_partitionable", False)):
        before = getattr(jax.config, option)
        jax.config.update(option, value)
        try:
            f.lower((3.0, 4.0))  # an option that changes tracing: traced again
        finally:
            jax.config.update(option, before)
    assert len(traces) == 8 and f._cache_size() == 8
    f.lower((3.0, 4.0))  # the options back as they were: a hit
    assert len(traces) == 8


@pytest.mark.task2_3
def test_static_arguments_are_keyed_by_value():
    seen = []
    f = jax.jit(lambda x, n: seen.append(n) or x * n, static_argnums=1)
    f.lower(2.0, 3)
    f.lower(5.0, 3)
    f.lower(2.0, 4)
    assert seen == [3, 4] and f._cache_size() == 2
    with pytest.raises(ValueError, match=r"Non-hashable static arguments.*list"):
        f.lower(2.0, [3])


@pytest.mark.task2_3
def test_a_program_closing_over_a_tracer_is_not_kept():
    scales = []
    f = jax.jit(lambda x: x * scales[-1])

    def outer(y):
        scales.append(y)  # a tracer of grad, a constant of f's program
        f.lower(2.0)
        return y * 2.0

    jax.grad(outer)(3.0)
    assert f._cache_size() == 0
    scales.append(3.0)
    f.lower(2.0)
    assert f._cache_size() == 1


@pytest.mark.task2_3
def test_threads_that_miss_together_trace_once():
    traces, errors = [], []
    ready = threading.Barrier(6)

    def slow_square(x):
        traces.append(1)
        time.sleep(0.05)  # a slow trace: every thread misses while the first one traces
        return x * x

    f = jax.jit(slow_square)

    def work():
        try:
            ready.wait()
            for _ in range(5):
                f.lower(jnp.ones(3))
        except Exception as e:  # noqa: BLE001 -- collected and re-raised below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(traces) == 1 and f._cache_size() == 1


def test_unknown_backend():
    with pytest.raises(ValueError, match=r"Unknown backend 'tpu'.*interpreter"):
        jax.jit(tanh, backend="tpu")


def test_disable_jit_runs_eagerly():
    seen = []

    @jax.jit
    def f(x):
        seen.append(type(x).__name__)
        return x

    with jax.disable_jit():
        f(1.0)
    assert seen == ["float"]


def test_lower_and_compile():
    lowered = jax.jit(tanh).lower(1.0)
    assert TANH_JAXPR in lowered.as_text()
    compiled = lowered.compile()
    assert np.allclose(compiled(1.0), tanh(1.0))
    cost = compiled.cost_analysis()
    assert cost["flops"] == 5 and cost["bytes accessed"] > 0


@not_on_simulator
def test_jitted_function_is_safe_from_several_threads():
    f = jax.jit(lambda x: jnp.sum(x * x))
    results, errors = [], []

    def work(n):
        try:
            for _ in range(20):
                results.append((n, float(f(jnp.full((n,), 2.0)))))
        except Exception as e:  # noqa: BLE001 -- collected and re-raised below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(value == 4.0 * n for n, value in results)
    assert f._cache_size() == 4


def test_closure_over_outer_tracer():
    def outer(y):
        return jax.jit(lambda x: x * y)(2.0)

    assert float(jax.grad(outer)(3.0)) == 2.0
