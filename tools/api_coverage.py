"""How much of JAX's everyday API exists here: the names issue 18 lists, module by module,
looked up in stage 4 (the stage that re-exports all the others) and in JAX itself.

    python tools/api_coverage.py            # the table and the missing names
    python tools/api_coverage.py --quiet    # only the totals

A name counts when it exists; whether it behaves as JAX's is the tests' business
(tests/differential compares values, dtypes, weak types and errors with JAX).
"""

from __future__ import annotations

import argparse
import importlib

# Module path (relative to the top package) -> the names looked up there.
EVERYDAY: dict[str, str] = {
    "numpy": """
        allclose append arccos arcsin arctan arccosh arcsinh arctanh argsort around
        array_equal atleast_3d average bincount column_stack conj copy cosh count_nonzero cross
        cumprod cumsum deg2rad diag diagonal diff dsplit dstack empty empty_like exp2 fliplr
        flipud fmax fmin fmod histogram hsplit hstack hypot imag interp isclose kron log10 log2
        logaddexp logspace median meshgrid nan_to_num nanmax nanmean nanmin nansum nonzero pad
        percentile quantile rad2deg real repeat roll rot90 round searchsorted select sinc sinh
        sort trace tri tril triu trunc unique unravel_index vstack isscalar result_type
        promote_types dtype finfo iinfo issubdtype cbrt heaviside signbit copysign nextafter
        ldexp frexp lcm gcd int8 int16 uint8 uint16 float16 bfloat16
        abs add all any arange argmax argmin array asarray broadcast_to clip concatenate cos
        dot einsum exp expand_dims eye float32 full int32 linspace log log1p matmul max maximum
        mean min minimum ones ones_like outer prod reshape sign sin sqrt square squeeze stack std
        sum swapaxes take take_along_axis tanh transpose var where zeros zeros_like""",
    "numpy.linalg": """norm inv solve det slogdet cholesky qr svd eigh eigvalsh pinv
        matrix_power lstsq trace""",
    "numpy.fft": "fft ifft rfft irfft fftn ifftn",
    "lax": """conv_general_dilated conv reduce_window dynamic_slice dynamic_update_slice
        dynamic_slice_in_dim cumsum cumprod cummax cummin associative_scan reduce top_k clamp
        rsqrt erf erfc lgamma digamma
        add mul sub div neg exp log tanh logistic max min select_n dot_general broadcast_in_dim
        reshape transpose reduce_sum reduce_max convert_element_type scan cond while_loop
        fori_loop map psum pmean all_gather stop_gradient""",
    "": """custom_jvp custom_vjp checkpoint remat linearize eval_shape ShapeDtypeStruct
        local_devices local_device_count process_index process_count NamedSharding P
        ensure_compile_time_eval pure_callback clear_caches named_scope
        grad value_and_grad vjp jvp jit vmap jacfwd jacrev hessian make_jaxpr device_put
        devices device_count make_mesh shard_map typeof block_until_ready""",
    "debug": "visualize_array_sharding print",
    "nn": """silu swish elu celu leaky_relu standardize glu relu6 hard_tanh
        relu sigmoid softmax log_softmax gelu softplus one_hot logsumexp""",
    "random": """choice truncated_normal exponential beta gamma dirichlet multivariate_normal
        laplace logistic poisson key PRNGKey split fold_in normal uniform bernoulli
        categorical randint permutation""",
    "scipy.linalg": "cho_factor cho_solve solve_triangular",
    "ops": "segment_sum segment_max segment_min segment_prod",
    "scipy.special": "logsumexp erf gammaln expit logit",
    "scipy.stats.norm": "logpdf cdf",
}


def lookup(top: str, module: str, name: str) -> bool:
    """Whether ``top.module`` has ``name`` (importing the module as a submodule if needed)."""
    path = f"{top}.{module}" if module else top
    try:
        return hasattr(importlib.import_module(path), name)
    except ImportError:
        return False


def coverage(top: str) -> dict[str, list[str]]:
    """Module -> the everyday names ``top`` lacks there."""
    return {module: [n for n in names.split() if not lookup(top, module, n)]
            for module, names in EVERYDAY.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    total = sum(len(names.split()) for names in EVERYDAY.values())
    for top in ("stage4_sharding", "jax"):
        missing = coverage(top)
        lacking = sum(map(len, missing.values()))
        print(f"{top}: {total - lacking} of {total} names ({100 * (total - lacking) / total:.1f}%)")
        if not args.quiet:
            for module, names in missing.items():
                if names:
                    print(f"  {top}.{module or '<top>'} lacks: {' '.join(names)}")


if __name__ == "__main__":
    main()
