"""The measure of issue 18 (``tools/api_coverage.py``) lists JAX's own names: each must exist in
JAX 0.10.2, or the percentage it prints would count names JAX does not have."""

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
import api_coverage  # noqa: E402


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="JAX (the oracle) is not installed")
def test_every_name_the_measure_counts_is_one_of_jaxs():
    assert {m: n for m, n in api_coverage.coverage("jax").items() if n} == {}


def test_the_measure_finds_what_stage_4_has_and_lacks():
    assert api_coverage.lookup("stage4_sharding", "numpy", "tanh")
    assert not api_coverage.lookup("stage4_sharding", "numpy", "no_such_function")
    assert not api_coverage.lookup("stage4_sharding", "no_such_module", "tanh")
