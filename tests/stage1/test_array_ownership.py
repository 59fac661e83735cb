"""An array owns its buffer: NumPy data is copied in, NumPy sees the buffer read-only, and a
copy is a new array. Stage 1's placement rule (``device=``, ``out_sharding=``) when no later
stage has registered its own. (tests/differential/test_array_ownership_against_jax.py compares
all of this with JAX, through stage 4.)"""

import numpy as np
import pytest
import stage1_autodiff.numpy as jnp
from stage1_autodiff.core import CPU_DEVICE, SingleDeviceSharding, get_aval

import stage1_autodiff as jax
from stage1_autodiff import extension


@pytest.mark.parametrize("make", [jnp.asarray, jnp.array, lambda a: jnp.asarray(a, "float32"),
                                  lambda a: jnp.sin(a), lambda a: jnp.reshape(a, (2, 3)),
                                  lambda a: jnp.broadcast_to(a, (2, 6)),
                                  lambda a: jnp.asarray(a[::2])])
def test_an_array_does_not_change_when_the_numpy_array_it_came_from_does(make):
    a = np.arange(6, dtype=np.float32)
    expected = np.asarray(make(a.copy())).copy()
    out = make(a)
    a[:] = -1
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_numpy_sees_an_array_read_only_and_a_copy_is_numpys():
    x = jnp.arange(3.0)
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(x)[0] = 5.0
    copied = np.array(x)
    copied[0] = 5.0
    assert np.asarray(x).tolist() == [0.0, 1.0, 2.0]
    assert np.asarray(x, dtype=np.float64).flags.writeable  # a conversion is a new array


def test_the_type_of_numpy_data_is_read_without_a_copy():
    a = np.ones((1000, 1000))  # float64: canonicalized as asarray would
    assert get_aval(a) == jnp.asarray(a).aval


def test_a_copy_is_a_new_array_and_asarray_is_not():
    x = jnp.arange(3.0)
    assert jnp.asarray(x) is x and jnp.array(x, copy=False) is x
    for copied in (jnp.array(x), jnp.copy(x), x.copy(), jnp.asarray(x, copy=True)):
        assert copied is not x
        assert copied.aval == x.aval and np.asarray(copied).tolist() == [0.0, 1.0, 2.0]


def test_a_copy_is_the_identity_to_differentiate():
    assert float(jax.grad(lambda v: jnp.copy(v) * v)(3.0)) == 6.0
    assert jax.jvp(jnp.copy, (2.0,), (5.0,))[1] == 5.0


@pytest.fixture
def stage1_placement(monkeypatch):
    """Stage 1's own rule, whichever stages this test process has imported."""
    monkeypatch.setattr(extension, "_placement", [])


def test_stage1_has_one_device_the_host(stage1_placement):
    for device in (CPU_DEVICE, SingleDeviceSharding(CPU_DEVICE), jnp.ones(2).sharding):
        np.testing.assert_array_equal(jnp.zeros(2, device=device), np.zeros(2))
    with pytest.raises(ValueError, match="device='cpu' is not a device of stage 1"):
        jnp.zeros(2, device="cpu")
    with pytest.raises(ValueError, match="stage 4"):
        jnp.ones(2, out_sharding=object())


def test_device_and_out_sharding_together_and_an_order_are_clear_errors():
    with pytest.raises(ValueError, match="Only one of device= and out_sharding="):
        jnp.full(2, 1.0, device=CPU_DEVICE, out_sharding=object())
    with pytest.raises(NotImplementedError, match="only order='K'"):
        jnp.asarray([1, 2], order="C")
