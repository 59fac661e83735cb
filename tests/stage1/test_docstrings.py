"""Every example in the package's docstrings runs and prints what it says."""

import doctest
import importlib
import pkgutil

import pytest

import stage1_autodiff

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(stage1_autodiff.__path__, prefix="stage1_autodiff.")
)


@pytest.mark.parametrize("name", ["stage1_autodiff", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
