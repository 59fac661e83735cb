"""The course's code blocks are well formed, so the course cannot drift from the code.

Every ```python block of a page that is an example runs, in order, in one namespace per page:
as the cells of the page's notebook, in ``test_notebooks.py``, which also checks the
``# prints TEXT`` comments against the output. A block is not an example (and is no code cell)
when:

- its body is a snippet include (a ``--8<--`` line): that is library code, tested elsewhere;
- its fence has a title (```python title="..."), which marks a listing, not an example;
- its first line is the comment ``# skip-test``.

Those rules, and the parser that finds the blocks, are in ``tools/make_notebooks.py``. This
file checks that every page with examples has a notebook (so that they run), that their lines
fit in 100 columns, that every snippet include names a file and a section that exist, and that
exercise ids (``task1_3``) are well formed and unique; and it tests the parser.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COURSE = REPO / "course"
sys.path.insert(0, str(REPO / "tools"))

from make_notebooks import (  # noqa: E402
    Block,
    notebook_pages,
    parse_blocks,
    read_nav,
    runnable_blocks,
)

_SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<target>[^"]+)"\s*$')
_EXERCISE = re.compile(r'^\s*!!! example "Task (?P<number>\d+\.\d+) \((?P<id>[^)]*)\): .+"\s*$')


def _pages() -> list[Path]:
    return sorted(COURSE.rglob("*.md"))


def _runnable(page: Path) -> list[Block]:
    return runnable_blocks(page.read_text(encoding="utf-8"))


PAGES_WITH_CODE = [p for p in _pages() if _runnable(p)]


def test_every_page_with_examples_has_a_notebook_that_runs_them() -> None:
    """test_notebooks.py runs the nav's pages that have examples; a page with examples that
    is not in the nav would have none run."""
    notebooks = set(notebook_pages(read_nav()))
    missing = [str(p.relative_to(COURSE)) for p in PAGES_WITH_CODE
               if str(p.relative_to(COURSE)) not in notebooks]
    assert not missing, f"pages with examples that are not in mkdocs.yml's nav: {missing}"


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(COURSE)))
def test_code_lines_fit_in_100_columns(page: Path) -> None:
    long_lines = [f"line {block.line + n}: {len(line)} columns"
                  for block in _runnable(page)
                  for n, line in enumerate(block.body.splitlines()) if len(line) > 100]
    assert not long_lines, f"{page.relative_to(REPO)}: " + "; ".join(long_lines)


def test_course_has_code_to_run() -> None:
    assert len(PAGES_WITH_CODE) >= 5, [str(p) for p in PAGES_WITH_CODE]


def _snippet_includes() -> list[tuple[Path, int, str]]:
    found = []
    for page in _pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            match = _SNIPPET.match(line)
            if match:
                found.append((page, number, match["target"]))
    return found


def _section_exists(path: Path, name: str) -> bool:
    text = path.read_text(encoding="utf-8")
    start = re.search(rf"--8<--\s*\[\s*start\s*:\s*{re.escape(name)}\s*\]", text)
    end = re.search(rf"--8<--\s*\[\s*end\s*:\s*{re.escape(name)}\s*\]", text)
    return bool(start and end and start.start() < end.start())


def test_snippet_includes_name_existing_files_and_sections() -> None:
    """The same check as the site build, without needing mkdocs installed."""
    problems = []
    for page, line, target in _snippet_includes():
        path_text, _, section = target.partition(":")
        path = REPO / path_text
        where = f"{page.relative_to(REPO)}:{line}"
        if not path.is_file():
            problems.append(f"{where}: no file {path_text}")
        elif section and not section.replace(":", "").isdigit():
            if not _section_exists(path, section):
                problems.append(f"{where}: no section [start:{section}]..[end:{section}] "
                                f"in {path_text}")
    assert not problems, "\n".join(problems)


def test_exercise_ids_are_well_formed_and_unique() -> None:
    seen: dict[str, str] = {}
    for page in _pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            if "!!! example" not in line or '"Task ' not in line:
                continue
            m = _EXERCISE.match(line)
            where = f"{page.relative_to(REPO)}:{number}"
            assert m, f"{where}: an exercise title must read 'Task S.N (taskS_N): ...'"
            stage, task = m["number"].split(".")
            assert m["id"] == f"task{stage}_{task}", f"{where}: {m['id']} is not Task {m['number']}"
            assert m["id"] not in seen, f"{where}: {m['id']} is also used at {seen[m['id']]}"
            seen[m["id"]] = where
    index = (COURSE / "index.md").read_text(encoding="utf-8")
    for task_id in seen:
        assert f"`{task_id}`" in index, f"course/index.md does not list {task_id}"


def test_parser_finds_indented_blocks_and_skip_markers() -> None:
    page = (
        "text\n"
        "```python\nx = 1\n```\n"
        '!!! example "Task 9.9 (task9_9): demo"\n'
        "    ```python\n    y = x + 1\n        z = 2\n    ```\n"
        '```python title="listing.py"\nnot run\n```\n'
        "```python\n# skip-test\nnot run\n```\n"
        '```python\n--8<-- "stage1_autodiff/src/stage1_autodiff/core.py:primitive"\n```\n'
        "```bash\nls\n```\n"
    )
    blocks = parse_blocks(page)
    assert [b.language for b in blocks] == ["python"] * 5 + ["bash"]
    assert blocks[0].body == "x = 1\n" and blocks[0].line == 3
    assert blocks[1].body == "y = x + 1\n    z = 2\n"
    assert [b.skip_reason for b in blocks[:5]] == [
        None, None, "titled listing", "marked # skip-test", "snippet include"]
    assert [b.runs for b in blocks] == [True, True, False, False, False, False]
    assert blocks[0].end == 4 and blocks[1].indent == "    " and blocks[1].end == 9
