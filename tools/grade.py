"""Grades the assignments: runs each task's tests and writes a score report.

    python tools/grade.py                      # the tasks assigned in this repository
    python tools/grade.py --tasks task1_1 task1_2 --json grades.json
    python tools/grade.py --repo ../student-repo --stages 2

A task's tests are the tests marked with its id (``pytest -m task1_1`` runs them alone). Its
score is the fraction of them that pass, from 0 to 1; the total is the sum of the scores. A
test that fails, errors, is skipped or is missing (its file no longer imports, say) counts as
failed: the list of tests a task should have comes from ``tools/assignment.json``, written
with the student repository from the reference solution, when that file is there.

The tests run in one pytest process, with the repository's packages first on the import path;
the CUDA backend's tests (``tests/stage2_cuda``) run in a second one, under Numba's CUDA
simulator, as CI runs them. This file is also the pytest plugin (``-p grade``) that records
each test's outcome, one JSON line per test, so that a crash loses nothing already run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from assignments import REPO, STAGE_SOURCES, Task, read_tasks

MANIFEST = "tools/assignment.json"
# (folder of tests, extra environment): each suite runs in a pytest process of its own.
SUITES = (("tests", {}), ("tests/stage2_cuda", {"NUMBA_ENABLE_CUDASIM": "1"}))
_TASK_MARKER = re.compile(r"^task\d+_\d+$")


@dataclass(frozen=True)
class TaskScore:
    id: str
    passed: int
    failed: int
    score: float  # passed / (passed + failed), 0 when the task has no tests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository to grade")
    parser.add_argument("--tasks", nargs="+", metavar="ID", help="task ids (default: the "
                        "assigned ones, or every graded task)")
    parser.add_argument("--stages", nargs="+", type=int, help="grade these stages' tasks")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the report here")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    tasks = chosen_tasks(repo, args.tasks, args.stages)
    scores, problems = grade(repo, [t.id for t in tasks], expected_tests(repo))
    print(table(tasks, scores, problems))
    if args.json:
        args.json.write_text(json.dumps(report(scores, problems), indent=2) + "\n")
    return 0


def chosen_tasks(repo: Path, ids: list[str] | None, stages: list[int] | None) -> list[Task]:
    """The graded tasks named, or those of the stages named, or those assigned (the
    manifest's), or else all of them."""
    graded = [t for t in read_tasks(repo) if t.graded]
    known = {t.id for t in graded}
    if ids:
        unknown = sorted(set(ids) - known)
        if unknown:
            raise SystemExit(f"Not graded tasks: {', '.join(unknown)}. Graded tasks: "
                             f"{', '.join(t.id for t in graded)}.")
        return [t for t in graded if t.id in ids]
    if stages is None and (repo / MANIFEST).is_file():
        stages = json.loads((repo / MANIFEST).read_text())["stages"]
    return [t for t in graded if stages is None or t.stage in stages]


def expected_tests(repo: Path) -> dict[str, list[str]] | None:
    """The tests of each task in the reference solution, when the manifest is there."""
    path = repo / MANIFEST
    return json.loads(path.read_text())["tests"] if path.is_file() else None


def grade(repo: Path, ids: list[str], expected: dict[str, list[str]] | None = None,
          env: dict[str, str] | None = None) -> tuple[dict[str, TaskScore], list[str]]:
    """Runs the tests of the tasks ``ids`` in ``repo``; their scores, and the problems met
    (files that did not import, a run that crashed)."""
    outcomes, problems, collected = run_tests(repo, ids, env=env)
    scores = {}
    for task_id in ids:
        tests = expected.get(task_id, []) if expected is not None else collected.get(task_id, [])
        passed = sum(outcomes.get(test) == "passed" for test in tests)
        score = passed / len(tests) if tests else 0.0
        scores[task_id] = TaskScore(task_id, passed, len(tests) - passed, round(score, 4))
    return scores, problems


def collect(repo: Path, ids: list[str],
            env: dict[str, str] | None = None) -> dict[str, list[str]]:
    """The tests of each task, without running them."""
    return run_tests(repo, ids, collect_only=True, env=env)[2]


def run_tests(repo: Path, ids: list[str], collect_only: bool = False,
              env: dict[str, str] | None = None
              ) -> tuple[dict[str, str], list[str], dict[str, list[str]]]:
    """Runs (or collects) the tests marked with the ids: each test's outcome, the problems,
    and each task's tests as collected."""
    outcomes: dict[str, str] = {}
    problems: list[str] = []
    collected: dict[str, list[str]] = {task_id: [] for task_id in ids}
    for folder, extra in SUITES:
        files = _files_marking(repo, folder, ids)
        if not files:
            continue
        lines, crash = _run_suite(repo, files, ids, collect_only, dict(env or {}, **extra))
        if crash:
            problems.append(crash)
        for line in lines:
            if line["kind"] == "item":
                for task_id in line["tasks"]:
                    if task_id in collected and line["test"] not in collected[task_id]:
                        collected[task_id].append(line["test"])
            elif line["kind"] == "outcome":
                # A test reports up to three phases; the first that is not a pass decides.
                if outcomes.get(line["test"], "passed") == "passed":
                    outcomes[line["test"]] = line["outcome"]
            elif line["kind"] == "collect_error":
                problems.append(f"{line['test']} did not import: {line['error']}")
    return outcomes, problems, collected


def _files_marking(repo: Path, folder: str, ids: list[str]) -> list[str]:
    """The test files of a suite that mark a test with one of the ids (``mark.task1_1``),
    without the folders of other suites: pytest then collects only those, not the whole suite
    (most of a grading run's time), and a suite that marks none is not run."""
    pattern = re.compile(r"\bmark\.(" + "|".join(map(re.escape, ids)) + r")\b")
    others = [repo / name for name, _ in SUITES if name != folder and name.startswith(folder + "/")]
    return sorted(str(path.relative_to(repo)) for path in (repo / folder).rglob("test_*.py")
                  if not any(other in path.parents for other in others)
                  and pattern.search(path.read_text(encoding="utf-8")))


def _run_suite(repo: Path, files: list[str], ids: list[str], collect_only: bool,
               extra_env: dict[str, str]) -> tuple[list[dict], str | None]:
    with tempfile.TemporaryDirectory() as tmp:
        lines_path = Path(tmp) / "outcomes.jsonl"
        # One hypothesis seed: a grade is the same each time the same code is graded.
        # One process: no xdist (its start-up alone costs a grading run 0.7 s); no
        # tracebacks, which the report does not show (84 failing tests took 8 s to format).
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:xdist", "-p", "grade", "--tb=no", "--hypothesis-seed=0",
                   "--hypothesis-profile=fail-fast", "--continue-on-collection-errors",
                   "-m", " or ".join(ids), *files]
        if collect_only:
            command.append("--collect-only")
        path = [str(repo / "tools"), *[str(repo / source) for source in STAGE_SOURCES]]
        env = dict(os.environ, **extra_env, GRADE_OUTCOMES=str(lines_path),
                   PYTHONPATH=os.pathsep.join(path + [os.environ.get("PYTHONPATH", "")]))
        result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
        lines = []
        if lines_path.is_file():
            lines = [json.loads(line) for line in lines_path.read_text().splitlines()]
    # pytest's exit codes: 0 all passed, 1 some failed, 5 none selected; others are crashes.
    crash = None
    if result.returncode not in (0, 1, 5):
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        crash = (f"pytest {' '.join(files)} exited with {result.returncode}:\n"
                 + "\n".join(tail))
    return lines, crash


def table(tasks: list[Task], scores: dict[str, TaskScore], problems: list[str]) -> str:
    """The report as a text table."""
    rows = [("task", "what", "passed", "failed", "score")]
    for task in tasks:
        s = scores[task.id]
        summary = task.summary if len(task.summary) <= 48 else task.summary[:45] + "..."
        rows.append((task.id, summary, str(s.passed), str(s.failed), f"{s.score:.2f}"))
    total = sum(s.score for s in scores.values())
    rows.append(("total", "", str(sum(s.passed for s in scores.values())),
                 str(sum(s.failed for s in scores.values())), f"{total:.2f} / {len(scores)}"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[i].ljust(widths[i]) if i < 2 else row[i].rjust(widths[i]) for i in range(5)]
        lines.append("  ".join(cells).rstrip())
        if n == 0 or n == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    lines += [f"problem: {problem}" for problem in problems]
    return "\n".join(lines)


def report(scores: dict[str, TaskScore], problems: list[str]) -> dict:
    """The report as JSON data."""
    return {
        "tasks": {task_id: {k: v for k, v in asdict(s).items() if k != "id"}
                  for task_id, s in scores.items()},
        "total": {"passed": sum(s.passed for s in scores.values()),
                  "failed": sum(s.failed for s in scores.values()),
                  "score": round(sum(s.score for s in scores.values()), 4),
                  "max_score": len(scores)},
        "problems": problems,
    }


# ------------------------------------------------------------------------------------------
# The pytest plugin: one JSON line per collected task test and per test outcome.
# ------------------------------------------------------------------------------------------


def _record(line: dict) -> None:
    with open(os.environ["GRADE_OUTCOMES"], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def pytest_collection_finish(session) -> None:
    for item in session.items:
        tasks = sorted({m.name for m in item.iter_markers() if _TASK_MARKER.match(m.name)})
        _record({"kind": "item", "test": item.nodeid, "tasks": tasks})


def pytest_collectreport(report) -> None:
    if report.failed:
        error = str(report.longrepr).strip().splitlines()
        _record({"kind": "collect_error", "test": report.nodeid,
                 "error": error[-1] if error else "?"})


def pytest_runtest_logreport(report) -> None:
    outcome = report.outcome if report.when == "call" or report.outcome != "passed" else None
    if outcome is not None:
        _record({"kind": "outcome", "test": report.nodeid, "outcome": outcome})


if __name__ == "__main__":
    sys.exit(main())
