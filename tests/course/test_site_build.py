"""The course site builds with ``mkdocs build --strict``: no broken links, no missing pages,
no snippet include that names a missing file or section."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _missing_tools() -> list[str]:
    needed = ["mkdocs", "material", "pymdownx", "mkdocstrings", "mkdocstrings_handlers"]
    return [name for name in needed if importlib.util.find_spec(name) is None]


@pytest.mark.skipif(bool(_missing_tools()),
                    reason="the site build needs mkdocs, mkdocs-material, pymdown-extensions and "
                           "mkdocstrings[python] (pip install -e '.[dev]')")
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (
        f"mkdocs build --strict failed (exit {result.returncode}):\n"
        f"{result.stdout}\n{result.stderr}")
    assert (tmp_path / "site" / "index.html").is_file()
