"""The course's assignments: the tasks, their solution regions in the source, their skeletons.

A task is described once, in the course, and found in the source by its id:

- ``course/index.md``, section "Assignments", has one table row per task: its id
  (``task2_3``), what to do, the page of its exercise box, and whether it is ``graded`` (it has
  a solution region and tests marked with its id) or a ``project`` (open-ended or GPU work,
  judged by a person);
- the exercise box on that page, ``!!! example "Task 2.3 (task2_3): Write jit's cache key"``,
  has the title and, under **What you write.**, the instructions;
- in the source, each solution region is a snippet section named after the task::

      def dce(jaxpr):
          \"\"\"The docstring stays.\"\"\"
          # --8<-- [start:task2_4]
          live = ...
          return Jaxpr(...)
          # --8<-- [end:task2_4]

  ``grep -rn "start:task"`` lists them. They are snippet markers, and the site's snippet
  extension (course/extensions/hidden_solutions.py) shows each region as one line,
  ``# Task 2.4 (task2_4): your code here``: a chapter that shows a function shows the code
  around a task, never its solution. A task may have several regions (its rules spread over
  one file, say); a region is always inside a function, so a skeleton still imports;
- the tests that check a task carry its pytest marker, ``@pytest.mark.task2_4``, registered in
  ``pyproject.toml``, so ``pytest -m task2_4`` runs them.

``tools/make_student_repo.py`` replaces the regions with ``raise NotImplementedError(...)`` and
the instructions; ``tools/grade.py`` runs the marked tests and scores them. The tools use the
standard library alone (grading runs pytest, as the tests do), and run from the repository's
root without being installed.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGE_SOURCES = ("stage1_autodiff/src", "stage2_jit/src", "stage3_vmap/src",
                 "stage4_sharding/src")

_ROW = re.compile(r"^\| `(?P<id>task(?P<stage>\d+)_(?P<number>\d+))` \| (?P<summary>.+?) "
                  r"\| \[[^\]]+\]\((?P<page>[^)#]+)(?P<anchor>#[^)]*)?\) \| (?P<kind>\w+) \|$")
_BOX = re.compile(r'^!!! example "Task (?P<number>\d+\.\d+) \((?P<id>task\d+_\d+)\): '
                  r'(?P<title>.+)"\s*$')
_START = re.compile(r"^(?P<indent>[ \t]*)# --8<-- \[start:(?P<id>task\d+_\d+)\]\s*$")
_END = re.compile(r"^(?P<indent>[ \t]*)# --8<-- \[end:(?P<id>task\d+_\d+)\]\s*$")
_SECTION = re.compile(r"^\*\*[^*]+\.\*\*")  # a paragraph that opens with **Read first.** etc.
_ITEM = re.compile(r"^(?P<marker>\s*(?:[-*]|\d+\.) )")


@dataclass(frozen=True)
class Task:
    """One row of the assignments table, with its exercise box."""

    id: str  # task2_3
    stage: int
    number: str  # "2.3", as the course prints it
    summary: str  # the table's short description
    page: str  # relative to the repository: course/stage2/jit-and-caching.md#exercise
    kind: str  # "graded" or "project"
    title: str  # the box's title, after the id
    instructions: str  # the box's "What you write." paragraphs, as Markdown

    @property
    def graded(self) -> bool:
        return self.kind == "graded"


@dataclass(frozen=True)
class Region:
    """One solution region: the marker lines are ``start`` and ``end`` (0-based)."""

    task: str
    start: int
    end: int
    indent: str


def read_tasks(repo: Path = REPO) -> list[Task]:
    """Every task of the assignments table of ``course/index.md``, in table order."""
    index = (repo / "course" / "index.md").read_text(encoding="utf-8")
    section = index.split("\n## Assignments", 1)[1].split("\n## ", 1)[0]
    tasks = []
    for line in section.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        if row["kind"] not in ("graded", "project"):
            raise ValueError(f"course/index.md: {row['id']} is {row['kind']!r}; a task is "
                             "'graded' or 'project'.")
        page = f"course/{row['page']}"
        title, instructions = _read_box(repo / page, row["id"])
        tasks.append(Task(row["id"], int(row["stage"]), f"{row['stage']}.{row['number']}",
                          row["summary"], page + (row["anchor"] or ""), row["kind"], title,
                          instructions))
    if not tasks:
        raise ValueError("course/index.md: no task rows in the section 'Assignments'.")
    return tasks


def _read_box(page: Path, task_id: str) -> tuple[str, str]:
    """The title of the task's exercise box and its "What you write." paragraphs."""
    lines = page.read_text(encoding="utf-8").splitlines()
    boxes = [(n, _BOX.match(line)) for n, line in enumerate(lines)]
    found = [(n, box) for n, box in boxes if box and box["id"] == task_id]
    if not found:
        raise ValueError(f"{page}: no exercise box for {task_id}.")
    start, box = found[0]
    body = []
    for line in lines[start + 1:]:
        if line.strip() and not line.startswith("    "):
            break  # the box ends at the first line that is not indented
        body.append(line[4:])
    text = "\n".join(body).strip()
    # The instructions: from "What you write." to the next paragraph of the same kind.
    paragraphs = text.split("\n\n")
    wanted = []
    for paragraph in paragraphs:
        if _SECTION.match(paragraph) and wanted:
            break
        if paragraph.startswith("**What you write.**") or wanted:
            wanted.append(paragraph)
    instructions = "\n\n".join(wanted).removeprefix("**What you write.**").strip()
    return box["title"], instructions


def find_regions(text: str, where: str = "<text>") -> list[Region]:
    """The solution regions of one source file, checked: paired markers, one indentation,
    no nesting, never at module level."""
    regions, open_start = [], None
    for n, line in enumerate(text.splitlines()):
        start, end = _START.match(line), _END.match(line)
        if start:
            if open_start is not None:
                raise ValueError(f"{where}:{n + 1}: region {start['id']} starts inside "
                                 f"region {open_start['id']}; regions do not nest.")
            if not start["indent"]:
                raise ValueError(f"{where}:{n + 1}: region {start['id']} is at module level; "
                                 "put it inside a function, so that a skeleton imports.")
            open_start, open_line = start, n
        elif end:
            if open_start is None or end["id"] != open_start["id"]:
                raise ValueError(f"{where}:{n + 1}: [end:{end['id']}] without its start.")
            if end["indent"] != open_start["indent"]:
                raise ValueError(f"{where}:{n + 1}: the markers of {end['id']} are indented "
                                 "differently.")
            regions.append(Region(end["id"], open_line, n, end["indent"]))
            open_start = None
    if open_start is not None:
        raise ValueError(f"{where}: region {open_start['id']} has no end marker.")
    return regions


def marker(task: str) -> str:
    """The line shown in place of a region of ``task`` (without its indentation), on the
    site and in the notebooks.

    Example:
        >>> marker("task2_10")
        '# Task 2.10 (task2_10): your code here'
    """
    stage, number = task.removeprefix("task").split("_")
    return f"# Task {stage}.{number} ({task}): your code here"


def hide_solutions(lines: list[str], where: str) -> list[str]:
    """``lines`` (one file, without line endings) as the course shows them: each solution
    region, its two marker lines included, one ``marker`` line at the region's indentation.
    ``where`` names the file in errors (a region without its end, say).

    Example:
        >>> hide_solutions(["def f(x):", "    # --8<-- [start:task1_1]", "    return x",
        ...                 "    # --8<-- [end:task1_1]"], "f.py")
        ['def f(x):', '    # Task 1.1 (task1_1): your code here']
    """
    shown, position = [], 0
    for region in find_regions("\n".join(lines), where):
        shown.extend(lines[position:region.start])
        shown.append(region.indent + marker(region.task))
        position = region.end + 1
    return shown + lines[position:]


def source_files(repo: Path = REPO) -> list[Path]:
    """The library's Python files, where solution regions may be."""
    return sorted(path for source in STAGE_SOURCES for path in (repo / source).rglob("*.py"))


def regions_by_task(repo: Path = REPO) -> dict[str, list[tuple[Path, Region]]]:
    """Every region of the library, by task id."""
    found: dict[str, list[tuple[Path, Region]]] = {}
    for path in source_files(repo):
        text = path.read_text(encoding="utf-8")
        for region in find_regions(text, str(path.relative_to(repo))):
            found.setdefault(region.task, []).append((path, region))
    return found


def skeleton(text: str, remove: set[str], tasks: dict[str, Task], where: str = "<text>") -> str:
    """``text`` with the regions of the tasks in ``remove`` replaced by their instructions
    (as comments) and a ``raise NotImplementedError``; the marker lines stay, so that the
    student's code is a region too."""
    lines = text.splitlines(keepends=True)
    out, position, explained = [], 0, set()
    for region in find_regions(text, where):
        if region.task not in remove:
            continue
        out.extend(lines[position:region.start + 1])
        task = tasks[region.task]
        out.extend(_stub(task, region.indent, first=task.id not in explained))
        explained.add(task.id)
        position = region.end
    out.extend(lines[position:])
    return "".join(out)


def _stub(task: Task, indent: str, first: bool) -> list[str]:
    """The lines that stand in for a region: the task's instructions, then the raise."""
    if first:
        comment = [f"Task {task.number} ({task.id}): {task.title}", ""]
        comment += _plain_lines(task.instructions, 100 - len(indent) - 2)
        comment += ["", f"More, with a check to run: {task.page}"]
    else:
        comment = [f"Task {task.number} ({task.id}), continued: see its first region above."]
    message = f"Task {task.number} ({task.id}): {task.summary}. See {task.page}"
    lines = [f"{indent}# {line}".rstrip() + "\n" for line in comment]
    raise_line = f"{indent}raise NotImplementedError({message!r})\n"
    if len(raise_line) > 101:  # 100 columns and the newline: the message on a line of its own
        raise_line = f"{indent}raise NotImplementedError(\n{indent}    {message!r})\n"
    return lines + [raise_line]


def _plain_lines(markdown: str, width: int) -> list[str]:
    """Markdown paragraphs and lists, rewrapped to ``width`` columns for a comment."""
    lines: list[str] = []
    for paragraph in markdown.split("\n\n"):
        items: list[str] = []
        for line in paragraph.splitlines():
            if _ITEM.match(line) or not items:
                items.append(line.rstrip())
            else:
                items[-1] += " " + line.strip()
        if lines:
            lines.append("")
        for item in items:
            marker = _ITEM.match(item)
            hanging = " " * len(marker["marker"]) if marker else ""
            lines += textwrap.wrap(item, width, subsequent_indent=hanging,
                                   break_on_hyphens=False) or [""]
    return lines
