"""The API reference (course/reference/api/) documents every name each package adds.

Each package's ``__init__.py`` is its public API: the names it imports from its own modules
(``from .jit import jit``) are what the stage adds; the names it imports from the stage before
are re-exports, documented there. Each added name must have a ``::: package.name`` or
``::: package.module.name`` directive on its stage's page, or be in a module documented whole
(``::: package.module`` without a ``members:`` list), so a new public function cannot be left
out of the reference. (The build itself, ``mkdocs build --strict``, fails on a directive
that names nothing.)
"""

from __future__ import annotations

import ast
import doctest
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
API = REPO / "course" / "reference" / "api"
STAGES = ["stage1_autodiff", "stage2_jit", "stage3_vmap", "stage4_sharding"]
# A directive and its indented options.
_DIRECTIVE = re.compile(r"^:::\s+(?P<identifier>[\w.]+)\s*\n(?P<options>(?:[ \t]+.*\n)*)",
                        re.MULTILINE)


def added_names(package: str) -> dict[str, str]:
    """The public names ``package/__init__.py`` imports from its own modules, each with the
    module it comes from (modules themselves are namespaces, not names)."""
    init = REPO / package / "src" / package / "__init__.py"
    names = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                name = alias.asname or alias.name
                if not name.startswith("_"):
                    names[name] = node.module
    return names


def documented(package: str) -> set[str]:
    """The identifiers of the page's directives; for a module documented whole, also
    ``module.*``."""
    page = API / f"{package.split('_')[0]}.md"
    found = set()
    for directive in _DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
        found.add(directive["identifier"])
        if "members:" not in directive["options"]:
            found.add(directive["identifier"] + ".*")
    return found


@pytest.mark.parametrize("package", STAGES)
def test_every_added_name_is_documented(package: str) -> None:
    names = added_names(package)
    assert names, f"found no public names in {package}/__init__.py"
    directives = documented(package)
    missing = [name for name, module in names.items()
               if f"{package}.{name}" not in directives
               and f"{package}.{module}.{name}" not in directives
               and f"{package}.{module}.*" not in directives]
    assert not missing, (
        f"course/reference/api/{package.split('_')[0]}.md has no '::: {package}.NAME' for: "
        f"{', '.join(missing)}")


@pytest.mark.skipif(importlib.util.find_spec("griffe") is None,
                    reason="needs griffe (pip install -e '.[dev]')")
def test_griffe_extension_reads_example_sections_as_doctests() -> None:
    """course/extensions/griffe_examples.py: its own docstring example runs."""
    path = REPO / "course" / "extensions" / "griffe_examples.py"
    spec = importlib.util.spec_from_file_location("griffe_examples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = doctest.testmod(module)
    assert result.attempted >= 1 and result.failed == 0, result
