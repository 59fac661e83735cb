"""Every ```python block of the course runs, so the course cannot drift from the code.

The blocks of one page run in order, in one namespace (a fresh module per page), so a later
block can use what an earlier one defined. A block is not run when:

- its body is a snippet include (a ``--8<--`` line): that is library code, tested elsewhere;
- its fence has a title (```python title="..."), which marks a listing, not an example;
- its first line is the comment ``# skip-test``.

Where a comment ``# prints TEXT`` ends a line (or stands on a line of its own), the block's
output must contain the line TEXT, and those lines must come in the order of the comments.

Besides running the blocks, this file checks that every snippet include names a file and a
section that exist, and that exercise ids (``task1_3``) are well formed and unique.
"""

from __future__ import annotations

import contextlib
import gc
import io
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from stage1_autodiff.config import config

from stage2_jit import tiers

REPO = Path(__file__).resolve().parents[2]
COURSE = REPO / "course"

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
_PRINTS = re.compile(r"#\s*prints\s+(?P<text>.+?)\s*$")
_SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<target>[^"]+)"\s*$')
_EXERCISE = re.compile(r'^\s*!!! example "Task (?P<number>\d+\.\d+) \((?P<id>[^)]*)\): .+"\s*$')


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, fence info, body and first body line (1-based)."""

    language: str
    info: str
    body: str
    line: int

    @property
    def is_snippet_include(self) -> bool:
        lines = [line for line in self.body.splitlines() if line.strip()]
        return bool(lines) and all(_SNIPPET.match(line) for line in lines)

    @property
    def skip_reason(self) -> str | None:
        if self.is_snippet_include:
            return "snippet include"
        if "title=" in self.info:
            return "titled listing"
        if self.body.lstrip().startswith("# skip-test"):
            return "marked # skip-test"
        return None


def _dedent(line: str, indent: str) -> str:
    return line[len(indent):] if line.startswith(indent) else line.lstrip()


def parse_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page, including ones indented in admonitions."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        closing = re.compile(rf"^{re.escape(indent)}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body, j = [], i + 1
        while j < len(lines) and not closing.match(lines[j]):
            body.append(_dedent(lines[j], indent))
            j += 1
        language = info.split()[0].lstrip(".").lower() if info else ""
        blocks.append(Block(language, info, "\n".join(body) + "\n", i + 2))
        i = j + 1
    return blocks


def _pages() -> list[Path]:
    return sorted(COURSE.rglob("*.md"))


def _runnable(page: Path) -> list[Block]:
    blocks = parse_blocks(page.read_text(encoding="utf-8"))
    return [b for b in blocks if b.language == "python" and b.skip_reason is None]


PAGES_WITH_CODE = [p for p in _pages() if _runnable(p)]


def _check_printed(page: Path, number: int, block: Block, output: str) -> None:
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
                f"{page.relative_to(REPO)}, block {number} (line {block.line + offset}): "
                f"expected a printed line {text!r} (after the ones before it), but the block "
                f"printed:\n{output}", pytrace=False)
        position = found[0] + 1


def _run(source: str, filename: str, module: types.ModuleType, output: io.StringIO) -> str | None:
    """Runs one block in the page's module; returns the traceback text if it raised."""
    try:
        code = compile(source, filename, "exec")
        with contextlib.redirect_stdout(output):
            exec(code, module.__dict__)
    except Exception as error:
        # Leave out this function's own frame: the traceback starts in the Markdown file.
        frames = error.__traceback__.tb_next if error.__traceback__ else None
        return "".join(traceback.format_exception(type(error), error, frames))
    return None


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(COURSE)))
def test_page_code_blocks_run(page: Path) -> None:
    # What earlier pages (and tests) left in reference cycles is freed first, as in a reader's
    # fresh session: a page that counts a device's bytes must not see it freed midway.
    gc.collect()
    module = types.ModuleType(f"course_page_{page.stem.replace('-', '_')}")
    module.__file__ = str(page)
    sys.modules[module.__name__] = module  # dataclasses and pickling look modules up here
    settings = dict(config._values)  # a page may change options: the next page sees none
    try:
        for number, block in enumerate(_runnable(page), start=1):
            # Blank lines in front make traceback line numbers those of the Markdown file.
            source = "\n" * (block.line - 1) + block.body
            output = io.StringIO()
            error = _run(source, str(page), module, output)
            if error is not None:
                pytest.fail(
                    f"{page.relative_to(REPO)}, block {number} (starting at line {block.line}) "
                    f"raised:\n{error}\nIt printed:\n{output.getvalue()}", pytrace=False)
            _check_printed(page, number, block, output.getvalue())
    finally:
        del sys.modules[module.__name__]
        tiers.wait()  # a page's kernels compiling in the background
        for name, value in settings.items():
            if config._values[name] != value:
                config.update(name, value)


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
