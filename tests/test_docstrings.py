"""Every example in every stage's docstrings runs and prints what it says."""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

STAGES = ["stage1_autodiff", "stage2_jit", "stage3_vmap", "stage4_sharding"]


def _modules() -> list[str]:
    names = []
    for stage in STAGES:
        if importlib.util.find_spec(stage) is None:
            continue
        package = importlib.import_module(stage)
        names.append(stage)
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"{stage}.")]
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
