"""custom_jvp, checkpoint, linearize, eval_shape and the everyday top-level names, run the
same way by stage 4 and by JAX 0.10.2: values, dtypes and weak types, gradients, the printed
equations, and errors. vmap and sharding laws for the new program primitives too."""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax.ad_checkpoint")  # (import jax leaves jax.ad_checkpoint out)
import stage4_sharding.numpy as sjnp  # noqa: E402

import stage4_sharding as sj  # noqa: E402


def _same(ours, theirs, rtol=1e-5):
    """Leaf by leaf: structure, dtype, weak type, values."""
    o_leaves, o_tree = sj.tree_flatten(ours)
    t_leaves, t_tree = jax.tree_util.tree_flatten(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        assert getattr(o, "weak_type", False) == getattr(t, "weak_type", False)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=rtol, atol=1e-6)


def both(build):
    """``build(jax, jnp)`` run with our modules and with JAX's."""
    return build(sj, sjnp), build(jax, jnp)


# ------------------------------------------------------------------------------------------
# custom_jvp: JAX's documented examples
# ------------------------------------------------------------------------------------------


def log1pexp_of(jx, np_):
    @jx.custom_jvp
    def log1pexp(x):
        return np_.log(1.0 + np_.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = log1pexp(x)
        ans_dot = (1 - 1 / (1 + np_.exp(x))) * x_dot
        return ans, ans_dot
    return log1pexp


def f_of(jx, np_):
    @jx.custom_jvp
    def f(x, y):
        return np_.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        primal_out = f(x, y)
        tangent_out = np_.cos(x) * x_dot * y + np_.sin(x) * y_dot
        return primal_out, tangent_out
    return f


def defjvps_of(jx, np_):
    @jx.custom_jvp
    def f(x, y):
        return np_.sin(x) * y

    f.defjvps(lambda x_dot, primal_out, x, y: np_.cos(x) * x_dot * y,
              lambda y_dot, primal_out, x, y: np_.sin(x) * y_dot)
    return f


def clip_of(jx, np_):
    @functools.partial(jx.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        x, = primals
        x_dot, = tangents
        return f(x), 2. * x_dot
    return functools.partial(app, lambda x: x ** 3)


X = np.array([0.5, -1.0, 3.0, 100.0], np.float32)
TRANSFORMS = {
    "call": lambda jx, f: f(X, 2.0),
    "jit": lambda jx, f: jx.jit(f)(X, 2.0),
    "grad": lambda jx, f: jx.grad(lambda x, y: f(x, y).sum(), (0, 1))(X, 2.0),
    "jit_grad": lambda jx, f: jx.jit(jx.grad(lambda x, y: f(x, y).sum(), (0, 1)))(X, 2.0),
    "grad_jit": lambda jx, f: jx.grad(lambda x, y: jx.jit(f)(x, y).sum(), (0, 1))(X, 2.0),
    "jvp": lambda jx, f: jx.jvp(f, (X, 2.0), (np.ones(4, np.float32), 1.0)),
    "jvp_jit": lambda jx, f: jx.jvp(jx.jit(f), (X, 2.0), (np.ones(4, np.float32), 1.0)),
    "vmap": lambda jx, f: jx.vmap(f, (0, None))(X, 2.0),
    "vmap_grad": lambda jx, f: jx.vmap(jx.grad(f), (0, None))(X, 2.0),
    "grad_vmap": lambda jx, f: jx.grad(lambda x: jx.vmap(f, (0, None))(x, 2.0).sum())(X),
    "hessian": lambda jx, f: jx.hessian(lambda x: f(x, 2.0).sum())(X[:3]),
}


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("example", [f_of, defjvps_of])
def test_custom_jvp_agrees_with_jax(example, transform):
    ours, theirs = both(lambda jx, np_: TRANSFORMS[transform](jx, example(jx, np_)))
    _same(ours, theirs)


@pytest.mark.parametrize("transform", ["call", "grad", "jit_grad", "vmap_grad", "hessian"])
def test_log1pexp_and_nondiff_argnums_agree_with_jax(transform):
    for example in (log1pexp_of, clip_of):
        def run(jx, np_, example=example):
            g = example(jx, np_)
            return TRANSFORMS[transform](jx, lambda x, y=None: g(x))
        ours, theirs = both(run)
        _same(ours, theirs)


def test_custom_jvp_call_prints_as_jax_prints_it():
    ours, theirs = both(lambda jx, np_: str(jx.make_jaxpr(f_of(jx, np_))(1.0, 2.0)))
    def params(text):
        return [line.strip() for line in text.splitlines()
                if line.strip().split("=")[0] in ("name", "jvp", "symbolic_zeros")]
    assert sorted(params(ours)) == sorted(params(theirs))
    assert ours.count("custom_jvp_call[") == theirs.count("custom_jvp_call[") == 1


def test_custom_jvp_under_sharding_equals_unsharded():
    mesh = sj.make_mesh((8,), ("data",))
    x = np.linspace(-3, 3, 16).astype(np.float32)
    xs = sj.device_put(x, sj.NamedSharding(mesh, sj.P("data")))
    f = f_of(sj, sjnp)
    loss = sj.jit(sj.grad(lambda x: f(x, 2.0).sum()))
    sharded, plain = loss(xs), loss(x)
    np.testing.assert_allclose(sharded, plain, rtol=1e-6)
    assert str(sj.typeof(sharded)) == "float32[16@data]"
    theirs = jax.jit(jax.grad(lambda x: f_of(jax, jnp)(x, 2.0).sum()))(x)
    np.testing.assert_allclose(sharded, theirs, rtol=1e-5)


# ------------------------------------------------------------------------------------------
# checkpoint
# ------------------------------------------------------------------------------------------

W = np.full((3, 3), 0.5, np.float32)


def mlp_of(jx, np_):
    return lambda x: np_.tanh(W @ np_.tanh(W @ x)).sum()


@pytest.mark.parametrize("policy", [None, "nothing_saveable", "dots_saveable",
                                    "everything_saveable", "dots_with_no_batch_dims_saveable"])
def test_checkpoint_gradients_agree_with_jax(policy):
    def run(jx, np_):
        chosen = None if policy is None else getattr(jx.checkpoint_policies, policy)
        g = jx.checkpoint(mlp_of(jx, np_), policy=chosen)
        x = np.array([1.0, -0.5, 2.0], np.float32)
        xs = np.stack([x, 2 * x])
        return (g(x), jx.grad(g)(x), jx.jit(jx.grad(g))(x), jx.vmap(jx.grad(g))(xs),
                jx.jvp(g, (x,), (np.ones(3, np.float32),)), jx.hessian(g)(x))
    ours, theirs = both(run)
    _same(ours, theirs)


def test_checkpoint_prints_as_jax_prints_it():
    ours, theirs = both(lambda jx, np_: str(jx.make_jaxpr(
        jx.checkpoint(lambda x: np_.sin(np_.sin(x))))(1.0)))
    assert ours == theirs
    ours, theirs = both(lambda jx, np_: str(jx.make_jaxpr(jx.checkpoint(
        mlp_of(jx, np_), policy=jx.checkpoint_policies.dots_saveable))(np.ones(3, np.float32))))
    assert "policy=DotsSaveable(only_if_no_batch_dims=False)" in ours
    assert "policy=DotsSaveable(only_if_no_batch_dims=False)" in theirs


def _named_of(jx, np_):
    name = jx.ad_checkpoint.checkpoint_name
    return lambda x: np_.sin(name(np_.sin(x), "a")) * np_.cos(name(np_.cos(x), "b"))


NAME_POLICIES = {
    "only_a": lambda P: P.save_only_these_names("a"),
    "any_but_a": lambda P: P.save_any_names_but_these("a"),
    "anything_except_a": lambda P: P.save_anything_except_these_names("a"),
    "a_or_dots": lambda P: P.save_from_both_policies(P.save_only_these_names("a"),
                                                     P.dots_saveable),
    "offload_b": lambda P: P.save_and_offload_only_these_names(
        names_which_can_be_saved=["a"], names_which_can_be_offloaded=["b"],
        offload_src="device", offload_dst="pinned_host"),
    "offload_dots": lambda P: P.offload_dot_with_no_batch_dims("device", "pinned_host"),
}


@pytest.mark.parametrize("policy", NAME_POLICIES)
def test_checkpoint_names_and_their_policies_agree_with_jax(policy):
    def run(jx, np_):
        g = jx.checkpoint(_named_of(jx, np_), policy=NAME_POLICIES[policy](jx.checkpoint_policies))
        xs = np.array([0.5, -1.0, 2.0], np.float32)
        return (g(0.5), jx.grad(g)(0.5), jx.jit(jx.grad(g))(0.5), jx.vmap(jx.grad(g))(xs),
                jx.jvp(g, (0.5,), (1.0,)), jx.hessian(g)(0.5))
    ours, theirs = both(run)
    _same(ours, theirs)


def test_checkpoint_name_prints_as_jax_prints_it():
    def texts(jx, np_):
        f = lambda x: np_.sin(jx.ad_checkpoint.checkpoint_name(x * 2.0, "a"))  # noqa: E731
        policy = jx.checkpoint_policies.save_only_these_names("a")
        return [str(jx.make_jaxpr(f)(1.0)), str(jx.make_jaxpr(jx.grad(f))(1.0)),
                str(jx.make_jaxpr(jx.vmap(f))(np.ones(3, np.float32))),
                str(jx.make_jaxpr(lambda x: jx.jvp(f, (x,), (x,)))(1.0)),
                str(jx.make_jaxpr(jx.checkpoint(f, policy=policy))(1.0))]
    ours, theirs = both(texts)
    assert ours == theirs


def test_checkpoint_under_sharding_equals_unsharded():
    mesh = sj.make_mesh((8,), ("data",))
    x = np.linspace(-3, 3, 16).astype(np.float32)
    xs = sj.device_put(x, sj.NamedSharding(mesh, sj.P("data")))
    loss = sj.jit(sj.grad(sj.checkpoint(lambda x: sjnp.sin(sjnp.sin(x)).sum())))
    np.testing.assert_allclose(loss(xs), loss(x), rtol=1e-6)
    np.testing.assert_allclose(loss(xs), jax.grad(lambda x: jnp.sin(jnp.sin(x)).sum())(x),
                               rtol=1e-5)


# ------------------------------------------------------------------------------------------
# linearize, eval_shape, ShapeDtypeStruct
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fun", ["sin", "mlp", "jit", "checkpoint", "custom_jvp"])
def test_linearize_agrees_with_jax(fun):
    def run(jx, np_):
        f = {"sin": np_.sin, "mlp": mlp_of(jx, np_), "jit": jx.jit(np_.tanh),
             "checkpoint": jx.checkpoint(np_.sin),
             "custom_jvp": lambda x: f_of(jx, np_)(x, 2.0)}[fun]
        x = np.array([1.0, -0.5, 2.0], np.float32)
        y, f_jvp = jx.linearize(f, x)
        t = np.array([0.1, 0.2, 0.3], np.float32)
        return y, f_jvp(t), jx.jit(f_jvp)(t)
    ours, theirs = both(run)
    _same(ours, theirs)


def test_linearize_of_a_scalar_keeps_weak_types_and_has_aux():
    ours, theirs = both(lambda jx, np_: jx.linearize(np_.sin, 1.0)[0])
    _same(ours, theirs)
    ours, theirs = both(lambda jx, np_: jx.linearize(
        lambda x: (np_.sin(x), np_.cos(x)), 1.0, has_aux=True)[2])
    _same(ours, theirs)


def _struct(s):
    return s.shape, np.dtype(s.dtype), s.weak_type


@pytest.mark.parametrize("case", ["scalar", "array", "struct", "tree"])
def test_eval_shape_agrees_with_jax(case):
    def run(jx, np_):
        S = jx.ShapeDtypeStruct
        fun, args = {
            "scalar": (lambda x: x * 2, (1.0,)),
            "array": (lambda x: x.sum(0), (np.ones((2, 3), np.int32),)),
            "struct": (np_.dot, (S((2, 3), np_.float32), S((3,), np_.float32))),
            "tree": (lambda p: {"y": p["w"] @ p["b"], "n": 2.0 * p["b"].sum()},
                     ({"w": S((4, 3), np_.float32), "b": S((3,), np_.float32)},)),
        }[case]
        out = jx.eval_shape(fun, *args)
        return jx.tree_util.tree_map(_struct, out, is_leaf=lambda s: isinstance(s, S))
    ours, theirs = both(run)
    assert ours == theirs


def test_shape_dtype_struct_fields_repr_and_lower():
    ours, theirs = both(lambda jx, np_: jx.ShapeDtypeStruct((2, 3), np_.float32))
    assert repr(ours) == repr(theirs)
    assert (ours.ndim, ours.size, ours.sharding) == (theirs.ndim, theirs.size, theirs.sharding)
    assert ours == sj.ShapeDtypeStruct((2, 3), np.float32) and hash(ours)
    weak = sj.ShapeDtypeStruct((), np.float32, weak_type=True)
    assert repr(weak) == repr(jax.ShapeDtypeStruct((), np.float32, weak_type=True))
    text = sj.jit(lambda x: x + 1).lower(ours).as_text()
    assert "f32[2,3]" in text


# ------------------------------------------------------------------------------------------
# Top-level names
# ------------------------------------------------------------------------------------------


def test_one_process_and_its_devices():
    assert (sj.process_index(), sj.process_count()) == (jax.process_index(),
                                                         jax.process_count())
    assert sj.local_device_count() == jax.local_device_count() == len(sj.local_devices())
    assert sj.device_count() == jax.device_count()
    assert sj.P is sj.sharding.PartitionSpec and jax.P is jax.sharding.PartitionSpec
    assert sj.NamedSharding is sj.sharding.NamedSharding
    assert callable(sj.debug.visualize_array_sharding)
    assert callable(jax.debug.visualize_array_sharding)


def test_ensure_compile_time_eval_named_scope_and_clear_caches():
    def run(jx, np_):
        @jx.jit
        def f(x):
            with jx.ensure_compile_time_eval():
                n = int(np_.sum(np_.arange(4)))
            with jx.named_scope("scaled"):
                return x * n
        out = f(1.5)
        jx.clear_caches()
        return out, f(1.5)
    ours, theirs = both(run)
    _same(ours, theirs)
    with pytest.raises(TypeError):
        with sj.named_scope(3):
            pass
    with pytest.raises(TypeError):
        with jax.named_scope(3):
            pass


def test_eval_shape_keeps_the_sharding_of_sharded_inputs():
    mesh = sj.make_mesh((8,), ("data",))
    struct = sj.ShapeDtypeStruct((16,), np.float32, sharding=sj.NamedSharding(mesh, sj.P("data")))
    out = sj.eval_shape(lambda x: x * 2.0, struct)
    assert out.sharding.spec == sj.P("data") and out.shape == (16,)
    jmesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Explicit,))
    jstruct = jax.ShapeDtypeStruct((16,), np.float32,
                                   sharding=jax.NamedSharding(jmesh, jax.P("data")))
    assert jax.eval_shape(lambda x: x * 2.0, jstruct).sharding.spec == jax.P("data")
