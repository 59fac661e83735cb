"""Every generated kernel compiles to PTX for compute capability 9.0 (an H100/H200), and a
float32 program's PTX has no float64 instruction: the law behind typed constants and
libdevice's float32 math. No GPU is needed, only the CUDA compiler libraries (NVVM, NVRTC).

Run in its own process, with the simulator off (it compiles nothing):
    pip install -e "./stage2_jit[cuda]"
    python -m pytest tests/stage2_cuda/test_ptx.py
Without numba-cuda, without the compiler libraries, or under the simulator, it is skipped.
"""

import importlib.util
import re

import numpy as np
import pytest


def _probe(x):  # the smallest kernel, compiled to see whether compiling works here
    x[0] = 1.0


def ptx_unavailable_reason() -> str | None:
    """Why kernels cannot be compiled to PTX in this process, or None when they can."""
    if importlib.util.find_spec("numba_cuda") is None:
        return "numba-cuda is not installed: pip install -e './stage2_jit[cuda]'"
    from numba import config
    if config.ENABLE_CUDASIM:
        return "the CUDA simulator compiles nothing: run without NUMBA_ENABLE_CUDASIM=1"
    from numba import cuda, types
    try:
        cuda.compile_ptx(_probe, (types.float32[::1],), cc=(9, 0))
    except Exception as e:  # NVVM or NVRTC missing, or failing to load
        why = f"{type(e).__name__}: {str(e).strip()}"
        return (f"kernels cannot be compiled to PTX here ({why}); the CUDA compiler libraries "
                f"come with pip install -e './stage2_jit[cuda]'")
    return None


if (reason := ptx_unavailable_reason()) is not None:
    pytest.skip(reason, allow_module_level=True)

import stage2_jit.numpy as jnp  # noqa: E402
from stage2_jit.codegen_cuda import generate_source, kernels_ptx  # noqa: E402

import stage2_jit as jax  # noqa: E402

F64_INSTRUCTION = re.compile(r"\.f64\b")  # add.f64, cvt.f64.f32, ld.global.f64, ...

x23 = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
y3 = np.array([0.5, -1.0, 3.0], np.float32)

PROGRAMS = [
    ("fused", lambda x, y: x * x + x * 2.0),
    ("transcendental", lambda x, y: jnp.exp(x) + jnp.tanh(y) + jnp.sqrt(jnp.abs(x))),
    ("logistic_where", lambda x, y: jnp.where(x > y, jax.nn.sigmoid(x), jnp.maximum(x, y))),
    ("broadcast", lambda x, y: (x.T + y[:, None]) * 0.5),
    ("softmax", lambda x, y: jax.nn.softmax(x * y, axis=-1)),
    ("sum", lambda x, y: jnp.sum(x * x) + jnp.mean(x, axis=0)),
    ("matmul", lambda x, y: (x.T @ x) @ jnp.outer(y, y)),
    ("batched_matmul", lambda x, y: jnp.matmul(x[None], x.T[None])),
    ("contraction", lambda x, y: jnp.einsum("ij,ij->i", x, x)),
    ("gather_scatter", lambda x, y: x[:, jnp.array([2, 0])].at[0].max(y[:2])),
    ("fill_clip_cast_divide", lambda x, y: (
        (jnp.take(x, jnp.array([1, 9]), axis=1) * 1e10).astype(jnp.int32)
        + x.at[:, jnp.array([7])].add(1.0, mode="clip")[:, :2].astype(jnp.uint32)
        + jnp.arange(2) // (jnp.arange(2) - 1) + jnp.arange(2) % jnp.zeros(2, jnp.int32))),
    ("argmax_pad_concat", lambda x, y: jnp.concatenate(
        [jnp.argmax(x, axis=1).astype(jnp.float32), jax.lax.pad(y, 0.0, ((1, 1, 1),))])),
    ("random", lambda x, y: jax.random.normal(jax.random.key(1), (2, 3)) + x),
    ("loops", lambda x, y: jax.lax.scan(lambda c, r: (jnp.tanh(c + r), c.sum()), y, x)[0]
     + jax.lax.cond(y.sum() > 0, jnp.tanh, lambda v: v * 2.0, y)),
    ("bitcast_erf_inv", lambda x, y: jax.lax.bitcast_convert_type(
        jax.lax.bitcast_convert_type(x, jnp.int32) >> 1, jnp.float32) + jax.lax.erf_inv(y / 4)),
    ("int_power_sign", lambda x, y: jnp.sign(x) + jnp.power(
        (x * 3).astype(jnp.int32), (y * 2).astype(jnp.int32)).astype(jnp.float32)),
]


def ptx_of(f, *args) -> dict[str, str]:
    """The PTX of every kernel the CUDA backend generates for ``f`` on ``args``."""
    source, writer, _ = generate_source(jax.make_jaxpr(f)(*args))
    return kernels_ptx(source, writer, cc=(9, 0))


@pytest.mark.parametrize("name, f", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_float32_ptx_has_no_float64(name, f):
    ptx = ptx_of(f, x23, y3)
    assert ptx, "no kernel was generated"
    for kernel, text in ptx.items():
        assert ".target sm_90" in text
        lines = [line.strip() for line in text.splitlines() if F64_INSTRUCTION.search(line)]
        assert not lines, f"{name}: {kernel} computes in float64:\n" + "\n".join(lines[:10])


@pytest.fixture
def x64():
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.mark.parametrize("name, f", PROGRAMS[:2], ids=[p[0] for p in PROGRAMS[:2]])
def test_float64_ptx_has_float64(name, f, x64):
    # The check above can fail: the same programs on float64 inputs do compute in float64.
    ptx = ptx_of(f, x23.astype(np.float64), y3.astype(np.float64))
    assert all(F64_INSTRUCTION.search(text) for text in ptx.values())
