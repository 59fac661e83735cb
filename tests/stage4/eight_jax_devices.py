"""For the test modules that compare with JAX on a mesh of 8: JAX's CPU backend with 8 devices,
chosen before it starts (a test module imports this while pytest collects, before any test
runs), or the module skipped."""

import pytest


def jax_with_eight_cpu_devices():
    """JAX, set to 8 CPU devices; skips the calling module when JAX already started with
    fewer (another module started it first)."""
    real = pytest.importorskip("jax")
    try:
        real.config.update("jax_num_cpu_devices", 8)
    except RuntimeError:  # another module started JAX first: use the devices it has
        pass
    if len(real.devices("cpu")) < 8:
        pytest.skip("JAX started with fewer than 8 CPU devices", allow_module_level=True)
    return real
