"""Makes a student repository: this one, with the solutions of the chosen stages taken out.

    python tools/make_student_repo.py --stages 2 --out ../jax-from-numpy-students

For each graded task of the chosen stages, every solution region (``# --8<-- [start:task2_3]``
... ``# --8<-- [end:task2_3]``) becomes the task's instructions, as comments, and a
``raise NotImplementedError("Task 2.3 ...")``; the rest of the repository is copied as it is:
the tests (with their task markers), the course, the packaging. Which solutions stay:

- the stages before the first chosen stage keep theirs: a student doing stage 2 builds on a
  working stage 1;
- the chosen stages and every later one lose theirs, so no later solution ships with an
  earlier assignment; the same repository can take the next stage's assignment later.

The repository is a git repository with one commit, so that a student's ``git diff`` shows
their own work. ``tools/assignment.json`` records the chosen stages (what ``tools/grade.py``
grades by default) and each task's tests as collected from this, the reference, repository,
so that a test that no longer imports in a student's work counts as failed rather than
vanishing. This
script, and the tests that check the assignments against the solutions, are for instructors
and are not copied.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from assignments import REPO, STAGE_SOURCES, read_tasks, skeleton
from grade import MANIFEST, collect

INSTRUCTOR_ONLY = ("tools/make_student_repo.py", "tests/course/test_assignments.py")
# What is never copied when the repository is not a git checkout (git's own list otherwise).
_NOT_COPIED = {".git", ".venv", ".venv-ci", ".kernel-cache", ".hypothesis", ".pytest_cache",
               ".ruff_cache", "__pycache__", "site", "build"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", nargs="+", type=int, required=True,
                        help="the stages whose tasks the students do (1 to 4)")
    parser.add_argument("--out", type=Path, required=True, help="a new folder to write")
    parser.add_argument("--keep", nargs="+", default=[], metavar="ID",
                        help="tasks whose solutions stay (the others' prerequisites, say)")
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"{args.out} exists and is not empty: choose a new folder.")
    manifest = make_student_repo(REPO, args.out, args.stages, args.keep)
    print(f"Wrote {args.out}: tasks {', '.join(manifest['tasks']) or 'none'} to do. Grade "
          f"with: python tools/grade.py --json grades.json")
    return 0


def make_student_repo(repo: Path, out: Path, stages: Iterable[int], keep: Iterable[str] = (),
                      tests: dict[str, list[str]] | None = None, git: bool = True) -> dict:
    """Writes the student repository to ``out``, as one git commit unless ``git`` is false;
    returns its manifest. ``tests``, each task's tests, is collected from ``repo`` when not
    given."""
    stages, keep = sorted(set(stages)), set(keep)
    tasks = {t.id: t for t in read_tasks(repo)}
    unknown = keep - set(tasks)
    if unknown or not stages or not set(stages) <= {1, 2, 3, 4}:
        raise ValueError(f"stages {stages} (1 to 4) and tasks to keep {sorted(keep)}: "
                         f"{', '.join(sorted(unknown)) or 'a stage'} is unknown.")
    remove = {t.id for t in tasks.values() if t.graded and t.stage >= stages[0]} - keep
    assigned = [t.id for t in tasks.values() if t.graded and t.stage in stages]
    if tests is None:
        tests = collect(repo, assigned)
    sources = [repo / source for source in STAGE_SOURCES]
    for path in repository_files(repo):
        relative = path.relative_to(repo).as_posix()
        if relative in INSTRUCTOR_ONLY:
            continue
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py" and any(source in path.parents for source in sources):
            text = skeleton(path.read_text(encoding="utf-8"), remove, tasks, relative)
            # Unchanged files keep their time stamp (and Python its compiled copy of them):
            # a repository written again with another task kept recompiles one file.
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
        else:
            shutil.copy2(path, target)
    manifest = {"stages": stages, "tasks": assigned,
                "tests": {task_id: tests.get(task_id, []) for task_id in assigned}}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if git:
        first_commit(out, f"The assignment: stage {', '.join(map(str, stages))}, tasks "
                          f"{', '.join(assigned) or 'none'} to do")
    return manifest


def first_commit(out: Path, message: str) -> None:
    """Makes ``out`` a git repository whose one commit holds every file."""
    author = ["-c", "user.name=JAX from NumPy", "-c", "user.email=course@jax-from-numpy.invalid"]
    for command in (["init", "--quiet"], ["add", "--all"], ["commit", "--quiet", "-m", message]):
        try:
            subprocess.run(["git", *author, *command], cwd=out, check=True, capture_output=True,
                           text=True)
        except FileNotFoundError:
            raise SystemExit(f"{out} is written, but git is not installed, so it is not a git "
                             "repository: install git, or run `git init` there later.") from None
        except subprocess.CalledProcessError as error:
            raise SystemExit(f"git {command[0]} in {out} failed: {error.stderr.strip()}") from None


def repository_files(repo: Path) -> list[Path]:
    """The files of the repository: git's tracked and unignored ones in a checkout, else
    every file outside the tool and build folders."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                cwd=repo, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return sorted(path for path in repo.rglob("*") if path.is_file()
                      and not _NOT_COPIED.intersection(path.relative_to(repo).parts)
                      and not any(p.endswith(".egg-info") for p in path.parts))
    return sorted(repo / name for name in listed.splitlines() if (repo / name).is_file())


if __name__ == "__main__":
    sys.exit(main())
