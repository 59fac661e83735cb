"""More of ``jax.numpy``'s functions: rows of the differential table (``test_differential_numpy.py``
merges them), each an expression and the kinds of its inputs."""

from __future__ import annotations

from table import Call, call, unary  # noqa: F401

CALLS: dict[str, list[Call]] = {
    # nan_statistics.py
    "nanvar": [call("jnp.nanvar(jnp.where(a > 1, jnp.nan, a))", a="f"),
               call("jnp.nanvar(jnp.where(a > 1, jnp.nan, a), axis=1, ddof=1, keepdims=True)",
                    a="f@3,4"),
               call("jnp.nanvar(a, axis=0, where=b)", a="f@4,3", b="b@4,3"),
               call("jnp.nanvar(a, axis=1)", a="i@2,3")],
    "nanstd": [call("jnp.nanstd(jnp.where(a > 1, jnp.nan, a), axis=0)", a="f@5,2"),
               call("jnp.nanstd(a, ddof=1)", a="i@6")],
    "nanprod": [call("jnp.nanprod(jnp.where(a > 0.5, jnp.nan, a), axis=1)", a="funit@3,4"),
                call("jnp.nanprod(a, initial=2.0, where=b)", a="funit@5", b="b@5"),
                call("jnp.nanprod(a, axis=0, keepdims=True)", a="i@3,2")],
    "nanargmax": [call("jnp.nanargmax(jnp.where(a > 1, jnp.nan, a))", a="f@6"),
                  call("jnp.nanargmax(jnp.where(a > 0, jnp.nan, a), axis=1, keepdims=True)",
                       a="f@3,4"),
                  call("jnp.nanargmax(a, axis=0)", a="i@3,2")],
    "nanargmin": [call("jnp.nanargmin(jnp.where(a > 1, jnp.nan, a), axis=0)", a="f@4,3"),
                  call("jnp.nanargmin(a)", a="i@5")],
    "nanquantile": [call("jnp.nanquantile(jnp.where(a > 1, jnp.nan, a), 0.3)", a="f@7"),
                    call("jnp.nanquantile(jnp.where(a > 1, jnp.nan, a), b, axis=1)",
                         a="f@3,6", b="funit@2"),
                    call("jnp.nanquantile(a, 0.5, axis=(0, 2), keepdims=True)", a="f@2,3,4"),
                    call("jnp.nanquantile(jnp.where(a > 0, jnp.nan, a), 0.6, axis=0, "
                         "method='nearest')", a="f@5,3"),
                    call("jnp.nanquantile(a, 0.25, method='lower')", a="i@6"),
                    call("jnp.nanquantile(a, 0.75, axis=-1, method='higher')", a="f@2,5")],
    "nanpercentile": [call("jnp.nanpercentile(jnp.where(a > 1, jnp.nan, a), 40.0)", a="f@6"),
                      call("jnp.nanpercentile(a, 50, axis=0, method='midpoint')", a="i@4,2")],
    "nanmedian": [call("jnp.nanmedian(jnp.where(a > 1, jnp.nan, a))", a="f@6"),
                  call("jnp.nanmedian(jnp.where(a > 0.5, jnp.nan, a), axis=1, keepdims=True)",
                       a="f@3,5"),
                  call("jnp.nanmedian(a)", a="i@4")],
    # covariance.py
    # (of real numbers: jnp.max of complex ones fails in reductions.py, for now)
    "ptp": [call("jnp.ptp(a)", a="i"), call("jnp.ptp(jnp.abs(a), axis=1)", a="f@3,4"),
            call("jnp.ptp(a, axis=0, keepdims=True)", a="i@3,2")],
    "cov": [call("jnp.cov(a)", a="f@3,5"), call("jnp.cov(a, b, rowvar=False)", a="f@6,2",
                                                 b="f@6,1"),
            call("jnp.cov(a, bias=True)", a="f@5"), call("jnp.cov(a, ddof=2)", a="i@2,6"),
            call("jnp.cov(a, fweights=b, aweights=c)", a="f@2,5", b="ipos@5", c="fpos@5"),
            call("jnp.cov(a, aweights=b, ddof=0)", a="f@3,4", b="fpos@4")],
    "corrcoef": [call("jnp.corrcoef(a)", a="f@3,5"), call("jnp.corrcoef(a, b)", a="f@4",
                                                           b="f@4"),
                 call("jnp.corrcoef(a, rowvar=False)", a="i@5,2"), call("jnp.corrcoef(a)",
                                                                       a="f@4")],
    # rounding.py
    "rint": unary("rint", "f", "i", "pyf") + [call("jnp.rint(a * 2.0 + 0.5)", a="f")],
    "modf": unary("modf", "f", "i", "pyf"),
    "spacing": unary("spacing", "f", "i", "pyf") + [call("jnp.spacing(a * 0.0)", a="f")],
    # type_queries.py
    "iscomplexobj": [call("jnp.iscomplexobj(a)", a="f"), call("jnp.iscomplexobj(a * 1j)", a="f"),
                     call("jnp.iscomplexobj(a)", a="pyi")],
    "isrealobj": [call("jnp.isrealobj(a)", a="f"), call("jnp.isrealobj(a + 0j)", a="i")],
    "iscomplex": [call("jnp.iscomplex(a)", a="f"),
                  call("jnp.iscomplex(a + 1j * (b > 0))", a="f", b="f"),
                  call("jnp.iscomplex(a)", a="i")],
    "isreal": [call("jnp.isreal(a)", a="f"), call("jnp.isreal(a + 1j * (b > 0))", a="f", b="f"),
               call("jnp.isreal(a)", a="pyf")],
    "isdtype": [call("jnp.isdtype(a.dtype, 'real floating')", a="f"),
                call("jnp.isdtype(a.dtype, ('bool', 'integral'))", a="i"),
                call("jnp.isdtype(jnp.uint8, 'signed integer')"),
                call("jnp.isdtype(jnp.complex64, ('numeric', jnp.float32))"),
                call("jnp.isdtype(jnp.bfloat16, 'real floating')"),
                call("jnp.isdtype(jnp.int32, jnp.int32)"),
                call("jnp.isdtype(jnp.float32, 'float')")],
    "can_cast": [call("jnp.can_cast(a.dtype, jnp.float32)", a="i"),
                 call("jnp.can_cast(jnp.float32, jnp.int32)"),
                 call("jnp.can_cast(jnp.int64, jnp.int8, casting='same_kind')")],
    "broadcast_shapes": [call("jnp.broadcast_shapes((3, 1), (4,))"),
                         call("jnp.broadcast_shapes(a.shape, (2, 1, 1))", a="f@3,1"),
                         call("jnp.broadcast_shapes()"), call("jnp.broadcast_shapes(3, (2, 1))")],
    # index_tricks.py
    "indices": [call("jnp.indices((2, 3))"), call("jnp.indices((3, 2), sparse=True)"),
                call("jnp.indices((2, 2), dtype=jnp.float32)"), call("jnp.indices(())")],
    "ix_": [call("a[jnp.ix_(jnp.array([0, 2]), jnp.array([1, 0, 1]))]", a="f@3,4"),
            call("jnp.ix_(a, jnp.array([], jnp.int32))", a="i@3")],
    "diag_indices": [call("jnp.diag_indices(3)"), call("jnp.diag_indices(2, 3)")],
    "diag_indices_from": [call("a[jnp.diag_indices_from(a)]", a="f@3,3")],
    "tril_indices_from": [call("a[jnp.tril_indices_from(a)]", a="f@3,3"),
                          call("jnp.tril_indices_from(a, k=-1)", a="i@3,4")],
    "triu_indices_from": [call("a[jnp.triu_indices_from(a, 1)]", a="f@4,3")],
    "mgrid": [call("jnp.mgrid[0:3, 1:5:2]"), call("jnp.mgrid[0:1:4j]"),
              call("jnp.mgrid[0:2, 0.0:1.0:0.5]"), call("jnp.mgrid[-1:1:3j, 0:2]")],
    "ogrid": [call("jnp.ogrid[0:3, 1:5:2]"), call("jnp.ogrid[0:4]"),
              call("jnp.ogrid[0:1:3j, 0:2]")],
    "s_": [call("a[jnp.s_[1:, ::2]]", a="f@3,4")],
    "index_exp": [call("a[jnp.index_exp[:2]]", a="f@3,4")],
}

NN_CALLS: dict[str, list[Call]] = {
}

# Calls JAX refuses: ours must raise too, an error of the same broad class.
ERROR_CALLS: list[Call] = [
    call("jnp.nanquantile(a, 0.5, method='median')", a="f@3"),
    call("jnp.nanquantile(a * 1j, 0.5)", a="f@3"),
    call("jnp.nanquantile(a, b)", a="f@3", b="funit@2,2"),
    call("jnp.nanvar(a, out=a)", a="f@3"),
    call("jnp.cov(a)", a="f@2,2,2"), call("jnp.cov(a, fweights=b)", a="f@2,3", b="fpos@3"),
    call("jnp.cov(a, aweights=b)", a="f@2,3", b="fpos@4"),
    call("jnp.cov(a, dtype=jnp.int32)", a="f@3"),
    call("jnp.spacing(a * 1j)", a="f@3"),
    call("jnp.isdtype(jnp.float32, 'real')"), call("jnp.isdtype(jnp.float32, 3)"),
    call("jnp.broadcast_shapes((2, 3), (4,))"),
    call("jnp.ix_(a)", a="f@2,2"), call("jnp.ix_(a)", a="b@2"),
    call("jnp.diag_indices(-1)"), call("jnp.diag_indices_from(a)", a="f@2,3"),
    call("jnp.tril_indices_from(a)", a="f@3"),
]
