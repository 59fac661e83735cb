"""Fixtures of the course's tests: the site, built once per test process."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SITE_TOOLS = ["mkdocs", "material", "pymdownx", "mkdocstrings", "mkdocstrings_handlers"]


def missing_site_tools() -> list[str]:
    """The packages of the site build that are not installed."""
    return [name for name in SITE_TOOLS if importlib.util.find_spec(name) is None]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The course site, built with ``mkdocs build --strict`` into a temporary folder; the
    tests that read it share one build (it takes about a minute)."""
    if missing_site_tools():
        pytest.skip("the site build needs mkdocs, mkdocs-material, pymdown-extensions and "
                    "mkdocstrings[python] (pip install -e '.[dev]')")
    site = tmp_path_factory.mktemp("course") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (
        f"mkdocs build --strict failed (exit {result.returncode}):\n"
        f"{result.stdout}\n{result.stderr}")
    return site
