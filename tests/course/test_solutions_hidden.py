"""The course site never shows a graded task's solution.

A chapter that includes code around a solution region (``# --8<-- [start:task1_1]`` ...
``# --8<-- [end:task1_1]``, see ``tools/assignments.py``) shows one marker line in the
region's place, ``# Task 1.1 (task1_1): your code here``: ``course/extensions/hidden_solutions.py``
does that while the site is built. Checked here twice: on the built site (the fixture
``built_site``), every solution line is absent from every page (and from every notebook the
site offers), and every page that includes a region shows its marker; and, without a build,
the line transformation itself.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from assignments import (  # noqa: E402
    find_regions,
    marker,
    read_tasks,
    regions_by_task,
    source_files,
)

# A solution line shorter than this (`return x`, `else:`) says nothing about the solution.
MIN_LENGTH = 20
_INCLUDE = re.compile(r"""^\s*-+8<-+\s+["'](?P<path>[^"':]+)(?::(?P<section>[\w-]+))?["']\s*$""")


def _hook():
    """course/extensions/hidden_solutions.py, imported from its path (it is no package)."""
    pytest.importorskip("pymdownx.snippets")
    pytest.importorskip("mkdocs")
    path = REPO / "course" / "extensions" / "hidden_solutions.py"
    spec = importlib.util.spec_from_file_location("hidden_solutions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------
# The built site
# ------------------------------------------------------------------------------------------


class _Text(HTMLParser):
    """A page's text: tags dropped, entities unescaped, scripts and styles left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._skip = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip = False

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def _page_text(path: Path) -> str:
    """The text a reader sees: an HTML page's, or a notebook's cells, one after the other."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n".join("".join(cell["source"]) for cell in cells)
    parser = _Text()
    parser.feed(path.read_text(encoding="utf-8"))
    return "".join(parser.parts)


def _solution_lines() -> dict[str, set[str]]:
    """For each graded task, the lines of its regions worth looking for: long enough, and
    found nowhere outside the regions in the library's source (those a page may show)."""
    regions = regions_by_task()
    inside: dict[Path, set[int]] = {}
    for found in regions.values():
        for path, region in found:
            inside.setdefault(path, set()).update(range(region.start + 1, region.end))
    outside = set()
    for path in source_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        outside |= {line.strip() for n, line in enumerate(lines) if n not in inside.get(path, ())}
    wanted = {}
    for task in read_tasks():
        if not task.graded:
            continue
        lines = set()
        for path, region in regions[task.id]:
            text = path.read_text(encoding="utf-8").splitlines()
            lines |= {line.strip() for line in text[region.start + 1:region.end]}
        wanted[task.id] = {line for line in lines if len(line) >= MIN_LENGTH
                           and line not in outside}
    return wanted


@pytest.fixture(scope="module")
def page_texts(built_site: Path) -> dict[str, str]:
    """Every HTML page's and notebook's text, by its path in the site."""
    paths = sorted(built_site.rglob("*.html")) + sorted(built_site.rglob("*.ipynb"))
    return {str(path.relative_to(built_site)): _page_text(path) for path in paths}


def test_no_page_shows_a_solution_line(page_texts: dict[str, str]) -> None:
    """No line of a page, code block or prose, is a line of a solution. (Whole lines: prose
    may name a call whose arguments end a solution line, `concat_axis=a, tiled=True)`.)"""
    wanted = _solution_lines()
    assert len(wanted) >= 10 and sum(map(len, wanted.values())) >= 50, wanted
    page_lines = {page: {line.strip() for line in text.splitlines()}
                  for page, text in page_texts.items()}
    shown = [f"{page}: {task}'s solution line {line!r}"
             for task, lines in sorted(wanted.items()) for line in sorted(lines)
             for page, shown_lines in page_lines.items() if line in shown_lines]
    assert not shown, "the site shows solutions:\n" + "\n".join(shown)


def _section_span(lines: list[str], section: str) -> tuple[int, int] | None:
    """The lines of a snippet section, between its markers (as pymdownx.snippets finds it)."""
    start = next((n for n, line in enumerate(lines) if f"[start:{section}]" in line), None)
    if start is None:
        return None
    end = next((n for n in range(start + 1, len(lines)) if f"[end:{section}]" in lines[n]),
               len(lines))
    return start, end


def _included_regions(page: Path) -> set[str]:
    """The tasks whose regions a chapter's snippet includes take in, whole or in part."""
    tasks = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        include = _INCLUDE.match(line)
        if include is None or not include["path"].endswith(".py"):
            continue
        lines = (REPO / include["path"]).read_text(encoding="utf-8").splitlines()
        span = (0, len(lines)) if include["section"] is None else _section_span(
            lines, include["section"])
        regions = find_regions("\n".join(lines), include["path"])
        tasks |= {r.task for r in regions if span and span[0] < r.end and r.start < span[1]}
    return tasks


def _html_of(page: Path) -> str:
    """Where mkdocs writes a chapter: stage1/the-tape.md -> stage1/the-tape/index.html."""
    relative = page.relative_to(REPO / "course").with_suffix("")
    if relative.name == "index":
        return str(relative) + ".html"
    return str(relative / "index.html")


def test_pages_that_include_a_region_show_its_marker(page_texts: dict[str, str]) -> None:
    expected = {_html_of(page): _included_regions(page)
                for page in sorted((REPO / "course").rglob("*.md"))}
    expected = {html: tasks for html, tasks in expected.items() if tasks}
    # The tape shows _backward_pass, all of whose body is Task 1.1.
    assert "task1_1" in expected.get("stage1/the-tape/index.html", set()), expected
    assert len(expected) >= 5, f"only these pages include a region: {expected}"
    missing = [f"{html}: no line {marker(task)[2:]!r}"
               for html, tasks in sorted(expected.items()) for task in sorted(tasks)
               if marker(task)[2:] not in page_texts.get(html, "")]
    assert not missing, "a page includes a region but does not show its marker:\n" + "\n".join(
        missing)


# ------------------------------------------------------------------------------------------
# The transformation, without a build
# ------------------------------------------------------------------------------------------

_SOURCE = """\
def grad(f):
    # --8<-- [start:body]
    def g(x):
        \"\"\"The docstring stays.\"\"\"
        # --8<-- [start:task3_12]
        ct = backward(f, x)
        return ct
        # --8<-- [end:task3_12]
    return g
    # --8<-- [end:body]
"""


def test_the_docstring_examples_of_marker_and_hide_solutions_run() -> None:
    import assignments

    results = doctest.testmod(assignments)
    assert results.attempted >= 2 and results.failed == 0, results


def test_marker_names_the_task_by_number_and_id() -> None:
    assert marker("task1_1") == "# Task 1.1 (task1_1): your code here"
    assert marker("task2_10") == "# Task 2.10 (task2_10): your code here"


def test_a_region_becomes_one_marker_line_at_its_indentation() -> None:
    hook = _hook()
    shown = hook.hide_solutions(_SOURCE.split("\n"), "grad.py")
    assert shown == [
        "def grad(f):",
        "    # --8<-- [start:body]",
        "    def g(x):",
        '        """The docstring stays."""',
        "        # Task 3.12 (task3_12): your code here",
        "    return g",
        "    # --8<-- [end:body]",
        "",
    ]
    assert hook.hide_solutions(["x = 1"], "plain.py") == ["x = 1"]


@pytest.mark.parametrize("include, expected", [
    ('--8<-- "grad.py"', ["def grad(f):", "    def g(x):"]),  # the whole file
    ('--8<-- "grad.py:body"', ["def g(x):"]),  # a section, dedented
])
def test_snippet_includes_show_the_marker(tmp_path: Path, include: str,
                                          expected: list[str]) -> None:
    hook = _hook()
    import markdown

    (tmp_path / "grad.py").write_text(_SOURCE, encoding="utf-8")
    extension = hook.HiddenSolutionsExtension(base_path=[str(tmp_path)], check_paths=True,
                                              dedent_subsections=True)
    md = markdown.Markdown(extensions=[extension])
    lines = md.preprocessors["snippet"].run([include])
    assert lines[:len(expected)] == expected
    assert any(line.strip() == "# Task 3.12 (task3_12): your code here" for line in lines)
    assert not any("backward" in line or "task3_12]" in line for line in lines), lines


def test_a_region_without_its_end_is_an_error_naming_the_file(tmp_path: Path) -> None:
    hook = _hook()
    import markdown

    broken = _SOURCE.replace("        # --8<-- [end:task3_12]\n", "")
    with pytest.raises(ValueError, match=r"grad\.py: region task3_12 has no end marker"):
        hook.hide_solutions(broken.split("\n"), "grad.py")
    (tmp_path / "broken.py").write_text(broken, encoding="utf-8")
    extension = hook.HiddenSolutionsExtension(base_path=[str(tmp_path)], check_paths=True)
    md = markdown.Markdown(extensions=[extension])
    with pytest.raises(ValueError, match=r"broken\.py: region task3_12 has no end marker"):
        md.preprocessors["snippet"].run(['--8<-- "broken.py:body"'])
