"""More of ``jax.nn``'s functions: rows of the differential table (``test_differential_numpy.py``
merges them), each an expression and the kinds of its inputs."""

from __future__ import annotations

from table import Call, call  # noqa: F401

CALLS: dict[str, list[Call]] = {
}

NN_CALLS: dict[str, list[Call]] = {
    "tanh": [call("jax.nn.tanh(a)", a="f"), call("jax.nn.tanh(a)", a="i")],
    "identity": [call("jax.nn.identity(a)", a="f"), call("jax.nn.identity(a)", a="pyf"),
                 call("jax.nn.identity(a)", a="i")],
    "mish": [call("jax.nn.mish(a)", a="f"), call("jax.nn.mish(a)", a="pyf"),
             call("jax.nn.mish(a)", a="i")],
    "squareplus": [call("jax.nn.squareplus(a)", a="f"), call("jax.nn.squareplus(a, 0.5)", a="i"),
                   call("jax.nn.squareplus(a, b)", a="f", b="fpos"),
                   call("jax.nn.squareplus(a)", a="pyf")],
    "sparse_plus": [call("jax.nn.sparse_plus(a)", a="f"), call("jax.nn.sparse_plus(a)", a="pyf"),
                    call("jax.nn.sparse_plus(a)", a="i")],
    "sparse_sigmoid": [call("jax.nn.sparse_sigmoid(a)", a="f"),
                       call("jax.nn.sparse_sigmoid(a)", a="pyf"),
                       call("jax.nn.sparse_sigmoid(a)", a="i")],
    "log1mexp": [call("jax.nn.log1mexp(a)", a="fpos"), call("jax.nn.log1mexp(a)", a="pyf"),
                 call("jax.nn.log1mexp(a)", a="ipos")],
    "logmeanexp": [call("jax.nn.logmeanexp(a)", a="f"),
                   call("jax.nn.logmeanexp(a, axis=1, keepdims=True)", a="f@2,3"),
                   call("jax.nn.logmeanexp(a, axis=(0, 2))", a="f@2,3,4"),
                   call("jax.nn.logmeanexp(a, axis=0, where=b > 0)", a="f@3,2", b="f@3,2"),
                   call("jax.nn.logmeanexp(a)", a="i"), call("jax.nn.logmeanexp(a)", a="pyf")],
    "dot_product_attention": [
        call("jax.nn.dot_product_attention(a, b, c)", a="f@2,3,2,4", b="f@2,5,2,4",
             c="f@2,5,2,4"),
        call("jax.nn.dot_product_attention(a, b, c)", a="f@3,4,8", b="f@5,2,8", c="f@5,2,8"),
        call("jax.nn.dot_product_attention(a, b, b, bias=c, is_causal=True)", a="f@1,4,2,3",
             b="f@1,4,1,3", c="f@1,2,4,4"),
        call("jax.nn.dot_product_attention(a, b, b, mask=c > 0, scale=0.5)", a="f@2,3,2,4",
             b="f@2,3,2,4", c="f@1,1,3,3"),
        call("jax.nn.dot_product_attention(a, b, c, local_window_size=1, "
             "query_seq_lengths=jnp.array([2, 3], jnp.int32), "
             "key_value_seq_lengths=jnp.array([4, 1], jnp.int32))",
             a="f@2,3,2,4", b="f@2,4,2,4", c="f@2,4,2,4"),
        call("jax.nn.dot_product_attention(a, b, c, is_causal=True, local_window_size=(2, 0),"
             " return_residual=True, implementation='xla')",
             a="f@1,5,4,2", b="f@1,5,2,2", c="f@1,5,2,2"),
    ],
}

# Calls JAX refuses: ours must raise too, an error of the same broad class.
ERROR_CALLS: list[Call] = [
    call("jax.nn.dot_product_attention(a, a, a, implementation='cudnn')", a="f@1,2,1,4"),
    call("jax.nn.dot_product_attention(a, a, a, implementation='flash')", a="f@1,2,1,4"),
    call("jax.nn.dot_product_attention(a, b, b)", a="f@1,2,3,4", b="f@1,2,2,4"),
    call("jax.nn.dot_product_attention(a, b, b)", a="f@1,2,2,4", b="f@1,2,2,3"),
    call("jax.nn.dot_product_attention(a, a, b)", a="f@1,2,2,4", b="f@1,3,2,4"),
    call("jax.nn.dot_product_attention(a, a, a, mask=a)", a="f@1,2,2,4"),
    call("jax.nn.dot_product_attention(a, a, a, query_seq_lengths=jnp.array([1.0]))",
         a="f@1,2,2,4"),
    call("jax.nn.dot_product_attention(a, a, a, bias=b)", a="f@1,2,2,4", b="f@1,1,2,2,2"),
]
