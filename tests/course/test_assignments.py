"""The assignments (course/index.md, "Assignments") against the reference solution.

Fast checks: the tasks table, the chapters' boxes, the solution regions in the source, the
pytest markers and the skeletons agree with each other. Then the round trip, in student
repositories made by ``tools/make_student_repo.py`` and graded by ``tools/grade.py``:

- the skeleton of every stage imports;
- for each stage, with its first ``k`` tasks restored (``--keep``) and the others still
  skeletons, every test of task ``k`` passes and no test of task ``k + 1`` does. So each
  task's tests fail on the skeleton and pass with its solution, and no task needs a later
  task of its stage (a student can do them in order).

This file is for instructors: it is not copied into student repositories.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from assignments import (  # noqa: E402
    STAGE_SOURCES,
    find_regions,
    read_tasks,
    regions_by_task,
    skeleton,
    source_files,
)
from grade import collect, grade  # noqa: E402
from make_student_repo import INSTRUCTOR_ONLY, make_student_repo  # noqa: E402

TASKS = read_tasks()
GRADED = [t for t in TASKS if t.graded]
BY_ID = {t.id: t for t in TASKS}


# ------------------------------------------------------------------------------------------
# The descriptions agree
# ------------------------------------------------------------------------------------------


def test_graded_tasks_have_regions_and_markers_and_projects_have_neither():
    regions = regions_by_task()
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    markers = {line.split(":")[0] for line in config["tool"]["pytest"]["ini_options"]["markers"]}
    for task in TASKS:
        assert (task.id in regions) == task.graded, f"{task.id} is {task.kind}"
        assert (task.id in markers) == task.graded, f"{task.id} is {task.kind}"
        assert task.instructions, f"{task.id}: its box has no 'What you write.'"
    assert set(regions) <= {t.id for t in GRADED}
    assert 18 <= len(GRADED) <= 24  # about 20 graded tasks, each an evening's work


def test_every_stage_index_lists_the_stages_tasks():
    for stage in (1, 2, 3, 4):
        index = (REPO / f"course/stage{stage}/index.md").read_text(encoding="utf-8")
        listed = re.findall(r"^\| `(task\d+_\d+)` \|.*\]\(([^)]+)\)", index, flags=re.M)
        expected = [(t.id, t.page.removeprefix(f"course/stage{stage}/"))
                    for t in TASKS if t.stage == stage]
        assert listed == expected, f"course/stage{stage}/index.md"


def test_no_exercise_box_includes_code_from_the_source():
    """A box shows what to write, never the answer: no snippet include inside one."""
    for task in TASKS:
        assert "--8<--" not in task.instructions, task.id
        page = (REPO / task.page.split("#")[0]).read_text(encoding="utf-8")
        box = page.split(f"({task.id}): ", 1)[1].split("\n\n## ", 1)[0]
        box = "\n".join(line for line in box.splitlines()
                        if line.startswith("    ") or not line.strip())
        assert "--8<--" not in box, f"{task.page}: the box of {task.id} includes source"


def test_regions_are_well_formed():
    with pytest.raises(ValueError, match="module level"):
        find_regions("# --8<-- [start:task1_1]\nx = 1\n# --8<-- [end:task1_1]\n")
    with pytest.raises(ValueError, match="no end marker"):
        find_regions("def f():\n    # --8<-- [start:task1_1]\n    return 1\n")
    with pytest.raises(ValueError, match="do not nest"):
        find_regions("def f():\n    # --8<-- [start:task1_1]\n    # --8<-- [start:task1_2]\n")
    for path in source_files():
        find_regions(path.read_text(encoding="utf-8"), str(path))


def _outside_regions(text: str, regions: list) -> list[str]:
    """The lines of ``text`` outside its regions (each region's markers included)."""
    inside = {n for r in regions for n in range(r.start + 1, r.end)}
    return [line for n, line in enumerate(text.splitlines()) if n not in inside]


def test_a_skeleton_keeps_everything_but_the_regions_and_compiles():
    remove = {t.id for t in GRADED}
    for path in source_files():
        text = path.read_text(encoding="utf-8")
        regions = find_regions(text)
        if not regions:
            continue
        student = skeleton(text, remove, BY_ID, str(path))
        ast.parse(student, str(path))
        kept = _outside_regions(text, regions)
        # Compared line by line outside the regions (the student's stubs are regions too): a
        # kept line that reads like a stub's (`raise NotImplementedError(`) cannot blur it.
        assert _outside_regions(student, find_regions(student)) == kept, path
        for region in regions:
            task = BY_ID[region.task]
            assert "raise NotImplementedError(" in student
            assert f"Task {task.number} ({task.id})" in student
        assert len(find_regions(student)) == len(regions)  # the student's code is a region too


def test_the_round_trip_test_runs_in_ci():
    """The round trip below is marked slow, which CI still runs: CI runs every test."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    # the whole suite, with no marker chosen (one worker per core: -n auto)
    assert re.search(r"^python -m pytest( -n auto)?$", ci, flags=re.M), \
        "CI must run the slow tests too"


# ------------------------------------------------------------------------------------------
# The round trip
# ------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    """The test process's environment: the kernel cache the suite shares (conftest.py)."""
    return {"JAX_FROM_NUMPY_CACHE_DIR": os.environ["JAX_FROM_NUMPY_CACHE_DIR"]}


@pytest.fixture(scope="module")
def expected_tests() -> dict[str, list[str]]:
    """Each graded task's tests, collected from the reference solution."""
    tests = collect(REPO, [t.id for t in GRADED], env=_env())
    empty = [task_id for task_id, ids in tests.items() if not ids]
    assert not empty, f"graded tasks without tests: {empty}"
    return tests


@pytest.fixture(scope="module")
def skeleton_repo(tmp_path_factory, expected_tests) -> Path:
    """A student repository with every stage's solutions taken out."""
    out = tmp_path_factory.mktemp("assignments") / "students"
    manifest = make_student_repo(REPO, out, [1], tests=expected_tests)
    assert manifest["tasks"] == [t.id for t in GRADED if t.stage == 1]
    return out


@pytest.mark.slow
def test_the_skeleton_of_every_stage_imports(skeleton_repo):
    out = skeleton_repo
    for name in INSTRUCTOR_ONLY:
        assert not (out / name).exists()
    assert (out / "tools" / "grade.py").is_file() and (out / "course" / "index.md").is_file()
    # a git repository of one commit, holding everything: a student's git diff is their work
    log = subprocess.run(["git", "log", "--format=%s"], cwd=out, capture_output=True, text=True)
    assert log.returncode == 0 and len(log.stdout.splitlines()) == 1, log.stderr
    assert log.stdout.startswith("The assignment: stage 1, tasks task1_1")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=out, capture_output=True,
                            text=True)
    assert status.stdout == ""
    path = os.pathsep.join(str(out / source) for source in STAGE_SOURCES)
    script = ("import stage1_autodiff, stage2_jit, stage3_vmap, stage4_sharding, "
              "stage2_jit.codegen_cuda; print(stage4_sharding.__file__)")
    result = subprocess.run([sys.executable, "-c", script], cwd=out, capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(str(out))


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("setuptools.command.bdist_wheel") is None,
                    reason="an offline editable install needs setuptools 70.1 or later")
def test_a_stage_of_the_skeleton_installs_with_pip(skeleton_repo, tmp_path):
    """``pip install -e`` of the skeleton's stage 1, into a prefix of its own, then imported
    from there. NB: ``--ignore-installed``, or pip would first uninstall the test
    environment's own stage1_autodiff (``--prefix`` does not stop it), breaking every later
    test that starts a Python process."""
    prefix = tmp_path / "prefix"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
               "--no-build-isolation", "--no-index", "--ignore-installed",
               "--prefix", str(prefix), "-e",
               str(skeleton_repo / "stage1_autodiff")]
    result = subprocess.run(install, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (site_packages,) = prefix.glob("lib/python3*/site-packages")
    # -S, then the prefix's site dir before the others: its editable path comes first.
    script = (f"import site; site.addsitedir({str(site_packages)!r}); site.main(); "
              "import stage1_autodiff; print(stage1_autodiff.__file__)")
    result = subprocess.run([sys.executable, "-S", "-c", script], cwd=tmp_path,
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(str(skeleton_repo))


def _prefix_runs(tmp_path: Path, expected: dict[str, list[str]]) -> list[str]:
    """For each stage and each k: a repository with the stage's first k tasks restored, the
    grade of tasks k (must be all passed) and k + 1 (must be none passed). The problems.
    A stage's repositories are one folder written again for each k, so that Python compiles
    only the files that changed; the stages run side by side."""
    def run(stage: int) -> list[str]:
        ids, found = [t.id for t in GRADED if t.stage == stage], []
        out = tmp_path / f"stage{stage}"
        for k in range(len(ids) + 1):
            make_student_repo(REPO, out, [stage], keep=ids[:k], tests=expected, git=False)
            done, next_one = ids[max(k - 1, 0):k], ids[k:k + 1]
            scores, problems = grade(out, done + next_one, expected, env=_env())
            where = f"stage {stage} with {k} tasks done"
            found += [f"{where}: {problem}" for problem in problems]
            found += [f"{where}: {task_id} passed {scores[task_id].passed} of "
                      f"{len(expected[task_id])} tests with its solution"
                      for task_id in done if scores[task_id].failed]
            found += [f"{where}: {task_id} passed {scores[task_id].passed} tests without "
                      f"its solution" for task_id in next_one if scores[task_id].passed]
        return found

    with ThreadPoolExecutor(max_workers=2) as pool:  # CI has two cores
        return [problem for found in pool.map(run, (2, 1, 3, 4)) for problem in found]


@pytest.mark.slow
def test_each_task_fails_without_its_solution_and_passes_with_it_alone(tmp_path,
                                                                       expected_tests):
    problems = _prefix_runs(tmp_path, expected_tests)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_the_tour_of_a_student_repository_lists_the_tasks_that_remain(skeleton_repo):
    path = os.pathsep.join(str(skeleton_repo / source) for source in STAGE_SOURCES)
    result = subprocess.run([sys.executable, "tour.py"], cwd=skeleton_repo, capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=path), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "The tour stops here: Task 1.1 (task1_1)" in result.stdout
    remaining = re.findall(r"^  Task \d+\.\d+ \((task\d+_\d+)\)", result.stdout, flags=re.M)
    assert remaining == [t.id for t in GRADED]  # every stage's tasks, in the course's order


@pytest.mark.slow
def test_a_student_repositorys_tests_refuse_to_run_against_another_copy(skeleton_repo):
    """Here the environment's stages are this, the reference, repository's: run from the
    student repository, its tests must stop rather than pass on the reference code."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-m", "task1_6"], cwd=skeleton_repo, capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode != 0
    assert f"These tests check the repository {skeleton_repo}" in result.stderr + result.stdout


@pytest.mark.slow
def test_the_instructors_workflow_from_the_command_line(tmp_path):
    """course/index.md's workflow, as an instructor types it: generate a student repository,
    then grade it (stage 4: the quickest to grade)."""
    out = tmp_path / "students"
    made = subprocess.run([sys.executable, "tools/make_student_repo.py", "--stages", "4",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, **_env()), timeout=300)
    assert made.returncode == 0, made.stderr
    stage4 = [t.id for t in GRADED if t.stage == 4]
    assert f"tasks {', '.join(stage4)} to do" in made.stdout
    graded = subprocess.run([sys.executable, "tools/grade.py", "--json", "grades.json"],
                            cwd=out, capture_output=True, text=True,
                            env=dict(os.environ, **_env()), timeout=300)
    assert graded.returncode == 0, graded.stderr
    report = json.loads((out / "grades.json").read_text())
    assert sorted(report["tasks"]) == sorted(stage4)
    assert report["total"]["score"] == 0 and report["total"]["passed"] == 0
    assert report["total"]["failed"] > 0 and not report["problems"]
