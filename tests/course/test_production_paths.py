"""The JAX source paths the course names exist in the JAX release the course is pinned to.

The pages that point into JAX's source (each chapter's "Reading JAX's source", and the notes on
other pages) name files and folders such as `jax/_src/interpreters/batching.py`. Those are
JAX's layout in one release: the one the `oracle` extra of pyproject.toml pins, which the
differential tests compare the library with. Every backticked `jax/...` path outside code
blocks must be a file or a folder of that release's installed `jax` package, so that a path
that moves when the pin moves fails here instead of sending a reader to a file that is gone.

XLA's paths (`xla/...`) and the C++ of jaxlib (`jaxlib/...`) are not in the installed wheels
as sources, so they are not checked here; the reading pages say how they were checked.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
from markdown_lines import outside_fences

REPO = Path(__file__).resolve().parents[2]
COURSE = REPO / "course"

_CODE_SPAN = re.compile(r"(`+)(?P<code>.+?)\1")
_JAX_PATH = re.compile(r"^jax/[\w./-]*")  # a span may go on: `jax/_src/core.py:Tracer`


def pinned_jax() -> str:
    """The JAX version of the `oracle` extra (`jax==0.10.2`), the one the course names."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [r for r in project["optional-dependencies"]["oracle"] if r.startswith("jax==")]
    assert len(pins) == 1, "pyproject.toml: the oracle extra should pin jax once (jax==X.Y.Z)"
    return pins[0].removeprefix("jax==")


def jax_paths(text: str) -> list[tuple[int, str]]:
    """The `jax/...` paths of a page's code spans outside fenced blocks, with their lines."""
    found = []
    for number, line in outside_fences(text):
        for span in _CODE_SPAN.finditer(line):
            path = _JAX_PATH.match(span["code"].strip())
            if path:
                found.append((number, path[0].rstrip(".")))
    return found


PAGES = sorted(page for page in COURSE.rglob("*.md") if jax_paths(page.read_text("utf-8")))


@pytest.fixture(scope="module")
def jax_site_packages() -> Path:
    """The folder that holds the installed `jax` package, if it is the pinned release."""
    spec = importlib.util.find_spec("jax")
    if spec is None or spec.origin is None:
        pytest.skip("jax is not installed, so the course's JAX paths cannot be checked "
                    "(pip install -e '.[oracle]')")
    wanted, installed = pinned_jax(), importlib.metadata.version("jax")
    if installed != wanted:
        pytest.skip(f"jax {installed} is installed, but the course names the files of jax "
                    f"{wanted}, the release pyproject.toml's oracle extra pins "
                    f"(pip install -e '.[oracle]')")
    return Path(spec.origin).parent.parent


def test_the_scanner_reads_spans_in_prose_and_boxes_but_not_code_blocks():
    text = ("See `jax/_src/core.py` and `jax/_src/lax/`.\n"
            "```python\nprint('`jax/_src/in_a_block.py`')\n```\n"
            "!!! note\n    In `jax/_src/api.py:vmap`, not `jax.numpy` nor `jaxlib/pjit.cc`.\n")
    assert jax_paths(text) == [(1, "jax/_src/core.py"), (1, "jax/_src/lax/"),
                               (6, "jax/_src/api.py")]


def test_the_course_names_jax_paths():
    """The scanner finds the reading pages' paths (a scanner that finds nothing checks
    nothing)."""
    names = {page.name for page in PAGES}
    assert "reading-the-production-code.md" in names
    assert sum(len(jax_paths(page.read_text("utf-8"))) for page in PAGES) > 50


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(COURSE)))
def test_every_jax_path_is_in_the_pinned_release(page: Path, jax_site_packages: Path):
    missing = []
    for line, path in jax_paths(page.read_text("utf-8")):
        target = jax_site_packages / path
        exists = target.is_dir() if path.endswith("/") else target.exists()
        if not exists:
            kind = "folder" if path.endswith("/") else "file or folder"
            missing.append(f"{page.relative_to(REPO)}:{line}: `{path}` is not a {kind} of "
                           f"jax {pinned_jax()}")
    assert not missing, "\n".join(missing)


def test_the_reading_pages_say_which_release_their_paths_are_from():
    for page in sorted(COURSE.glob("stage*/reading-the-production-code.md")):
        text = page.read_text("utf-8")
        assert pinned_jax() in text, (
            f"{page.relative_to(REPO)} should say that its paths are those of JAX "
            f"{pinned_jax()}, the release pyproject.toml pins")
