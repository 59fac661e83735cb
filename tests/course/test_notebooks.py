"""Every chapter runs as a notebook, and its printed values are the ones the page shows.

``tools/make_notebooks.py`` turns each page of the nav that has code to run into a notebook;
here each notebook runs in a Jupyter kernel of its own (this interpreter's, with the suite's
environment), from the first cell to the last. This is where the course's examples run: a
page's blocks run in order in one namespace, as its notebook's cells, in a fresh process, so no
page sees what an earlier page changed (``config`` options, devices' memory).

Where a comment ``# prints TEXT`` ends a line (or stands on a line of its own), the cell's
printed output must contain the line TEXT, and those lines must come in the order of the
comments. Which blocks run (the code cells) is decided in ``tools/make_notebooks.py``;
``test_code_blocks.py`` checks the blocks without running them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COURSE = REPO / "course"
sys.path.insert(0, str(REPO / "tools"))

import nbformat  # noqa: E402
from assignments import find_regions, marker  # noqa: E402
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402
from make_notebooks import (  # noqa: E402
    Block,
    included_source,
    notebook,
    notebook_json,
    notebook_pages,
    read_nav,
    runnable_blocks,
)
from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellExecutionError  # noqa: E402

KERNEL = "jax-from-numpy-tests"
NOTEBOOK_PAGES = notebook_pages(read_nav())
# What the kernel needs from tests/conftest.py: the suite's kernel cache, and no tiers.
KERNEL_ENV = ("JAX_FROM_NUMPY_CACHE_DIR", "JAX_FROM_NUMPY_TIERED")

_PRINTS = re.compile(r"#\s*prints\s+(?P<text>.+?)\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<target>[^"]+)"\s*$')


@pytest.fixture(scope="session")
def kernel_specs(tmp_path_factory) -> KernelSpecManager:
    """A kernel spec for this interpreter, in a temporary folder: the notebooks run on the
    packages under test, whatever kernels the user has installed."""
    folder = tmp_path_factory.mktemp("kernels")
    (folder / KERNEL).mkdir()
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "jax-from-numpy tests",
        "language": "python",
        "env": {name: os.environ[name] for name in KERNEL_ENV if name in os.environ},
    }
    (folder / KERNEL / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    return KernelSpecManager(kernel_dirs=[str(folder)])


def _stdout(cell: nbformat.NotebookNode) -> str:
    return "".join(output.text for output in cell.outputs
                   if output.output_type == "stream" and output.name == "stdout")


def _check_printed(page: str, number: int, block: Block, output: str) -> None:
    expected = []
    for offset, line in enumerate(block.body.splitlines()):
        match = _PRINTS.search(line)
        if match:
            expected.append((offset, match["text"]))
    printed = [line.strip() for line in output.splitlines()]
    position = 0
    for offset, text in expected:
        found = [i for i in range(position, len(printed)) if printed[i] == text.strip()]
        if not found:
            pytest.fail(
                f"course/{page}, block {number} (line {block.line + offset}): expected a "
                f"printed line {text!r} (after the ones before it), but the block printed:\n"
                f"{output}", pytrace=False)
        position = found[0] + 1


def _error(cell: nbformat.NotebookNode) -> str | None:
    for output in cell.outputs:
        if output.output_type == "error":
            return _ANSI.sub("", "\n".join(output.traceback))
    return None


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_notebook_runs_and_prints_what_the_page_shows(
        page: str, kernel_specs: KernelSpecManager) -> None:
    nb = notebook(page, NOTEBOOK_PAGES)
    blocks = runnable_blocks((COURSE / page).read_text(encoding="utf-8"))
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.source for cell in cells] == [block.body.rstrip() for block in blocks], (
        f"course/{page}: the notebook's code cells are not the page's blocks to run")
    kernel = AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=kernel_specs)
    client = NotebookClient(nb, km=kernel, timeout=600, startup_timeout=120,
                            resources={"metadata": {"path": str(REPO)}})
    try:
        # cleanup_kc: shut the kernel down afterwards, which nbclient leaves running when it
        # is given the manager (each would hold its process, 100-300 MB, to the suite's end)
        client.execute(cleanup_kc=True)
    except CellExecutionError:
        pass  # the failing cell holds the error, reported below with its line in the page
    for number, (cell, block) in enumerate(zip(cells, blocks), start=1):
        error = _error(cell)
        if error is not None:
            pytest.fail(f"course/{page}, block {number} (starting at line {block.line}) "
                        f"raised:\n{error}\nIt printed:\n{_stdout(cell)}", pytrace=False)
        _check_printed(page, number, block, _stdout(cell))


def test_every_nav_page_with_code_is_a_notebook() -> None:
    assert len(NOTEBOOK_PAGES) >= 5, NOTEBOOK_PAGES
    assert "stage1/the-tape.md" in NOTEBOOK_PAGES
    assert "reference/glossary.md" not in NOTEBOOK_PAGES  # nothing to run there


def test_notebooks_are_the_same_byte_for_byte_each_time() -> None:
    page = "stage1/the-tape.md"
    first = notebook_json(page, NOTEBOOK_PAGES)
    assert first == notebook_json(page, NOTEBOOK_PAGES)
    nbformat.validate(nbformat.reads(first, as_version=4))


def test_material_syntax_becomes_markdown_jupyter_shows(tmp_path: Path) -> None:
    include = '--8<-- "stage1_autodiff/src/stage1_autodiff/core.py:primitive"'
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "plot.png").write_bytes(b"\x89PNG")
    (tmp_path / "stage9").mkdir()
    (tmp_path / "stage9" / "page.md").write_text(
        "# A page\n\n"
        "Read [the tape](../stage1/the-tape.md#exercise) and [the glossary](../glossary.md).\n\n"
        "![a plot](../assets/plot.png)\n\n"
        f"```python\n{include}\n```\n\n"
        '!!! example "Task 9.1 (task9_1): demo"\n'
        "    Write it.\n\n"
        "    ```python\n    x = 1\n    print(x)  # prints 1\n    ```\n\n"
        "    Then check.\n\n"
        "!!! note\n    A note.\n\n"
        '=== "Tab"\n\n'
        '    ```python title="listing.py"\n    not run\n    ```\n\n'
        "After.\n", encoding="utf-8")
    nb = notebook("stage9/page.md", ["stage9/page.md", "stage1/the-tape.md"], docs=tmp_path)
    kinds = [cell.cell_type for cell in nb.cells]
    assert kinds == ["markdown", "code", "markdown"], kinds
    before, code, after = (cell.source for cell in nb.cells)
    assert code == "x = 1\nprint(x)  # prints 1"
    assert "[the tape](../stage1/the-tape.ipynb#exercise)" in before
    assert "the glossary (`course/glossary.md`)" in before
    assert "![a plot](attachment:plot.png)" in before
    assert nb.cells[0].attachments == {"plot.png": {"image/png": "iVBORw=="}}
    assert included_source(include.split('"')[1]) in before and "--8<--" not in before
    assert before.endswith("> **Task 9.1 (task9_1): demo**\n>\n> Write it.")
    assert after.startswith("> Then check.\n\n> **Note**\n>\n> A note.\n\n**Tab**\n\n")
    assert after.endswith("*listing.py*\n```python\nnot run\n```\n\nAfter.")


def _includes() -> list[tuple[str, str]]:
    found = []
    for page in sorted(COURSE.rglob("*.md")):
        for line in page.read_text(encoding="utf-8").splitlines():
            match = _SNIPPET.match(line)
            if match:
                found.append((str(page.relative_to(COURSE)), match["target"]))
    return found


def test_listings_show_no_solution() -> None:
    """A listing that takes in a task's solution region shows the task's marker line, and no
    line of the solution (one found nowhere else in the file)."""
    checked = 0
    for page, target in _includes():
        path, _, section = target.partition(":")
        lines = (REPO / path).read_text(encoding="utf-8").splitlines()
        regions = find_regions("\n".join(lines), path)
        inside = {n for region in regions for n in range(region.start + 1, region.end)}
        outside = {line.strip() for n, line in enumerate(lines) if n not in inside}
        shown = {line.strip() for line in included_source(target).splitlines()}
        start = next((n for n, line in enumerate(lines) if f"[start:{section}]" in line), 0)
        end = next((n for n, line in enumerate(lines) if f"[end:{section}]" in line), 0)
        for region in regions:
            if start < region.start < end:
                solution = {lines[n].strip() for n in range(region.start + 1, region.end)}
                assert marker(region.task) in shown, f"course/{page}: {target}"
                assert not (solution - outside) & shown, f"course/{page}: {target}"
                checked += 1
    assert checked >= 3, "no listing of the course takes in a solution region any more?"


def test_the_site_links_each_chapter_to_its_notebook(built_site: Path) -> None:
    page = (built_site / "stage1" / "the-tape" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../notebooks/stage1/the-tape.ipynb">Run this page as a notebook' in page
    nb = nbformat.read(built_site / "notebooks" / "stage1" / "the-tape.ipynb", as_version=4)
    nbformat.validate(nb)
    assert [cell.source for cell in nb.cells if cell.cell_type == "code"] == [
        cell.source for cell in notebook("stage1/the-tape.md", NOTEBOOK_PAGES).cells
        if cell.cell_type == "code"]
    glossary = (built_site / "reference" / "glossary" / "index.html").read_text(encoding="utf-8")
    assert "Run this page as a notebook" not in glossary
