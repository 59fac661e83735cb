"""The course site builds with ``mkdocs build --strict``: no broken links, no missing pages,
no snippet include that names a missing file or section (the build is the fixture
``built_site`` of conftest.py, which fails on any warning)."""

from __future__ import annotations

from pathlib import Path


def test_mkdocs_build_strict(built_site: Path) -> None:
    assert (built_site / "index.html").is_file()
    assert (built_site / "stage1" / "the-tape" / "index.html").is_file()
