"""Settings for the whole test suite, and the check that it tests this repository."""

import importlib.util
import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings

REPO = Path(__file__).resolve().parent.parent
STAGES = ("stage1_autodiff", "stage2_jit", "stage3_vmap", "stage4_sharding")

# Compiled kernels go to a cache folder of the checkout (ignored by git), not the user's
# ~/.cache: the suite neither reads kernels from nor leaves them in a shared place, and a
# second local run reuses the first one's kernels (CI, from a clean checkout, compiles all).
os.environ.setdefault("JAX_FROM_NUMPY_CACHE_DIR", str(REPO / ".kernel-cache"))

# A new program's first calls may run on the interpreter while its kernel compiles
# (stage2_jit/tiers.py). The suite tests the kernels, so it compiles before the first call;
# tests/stage2/test_tiers.py turns tiers on.
os.environ.setdefault("JAX_FROM_NUMPY_TIERED", "0")

# Hypothesis: 25 examples a test. "fail-fast" reports the first failing example as it is,
# without shrinking it: a task's stub fails every example, and shrinking each of them took
# most of a skeleton's grading time (218 s for stage 1, against a few seconds). A student
# repository (it has tools/assignment.json) and tools/grade.py use it; choose a profile with
# `pytest --hypothesis-profile=ci` or `--hypothesis-profile=fail-fast`.
settings.register_profile("ci", max_examples=25, deadline=None)
settings.register_profile("fail-fast", settings.get_profile("ci"),
                          phases=(Phase.explicit, Phase.reuse, Phase.generate))
settings.load_profile("fail-fast" if (REPO / "tools" / "assignment.json").is_file() else "ci")


def pytest_configure(config: pytest.Config) -> None:
    """The tests check the stages of the repository they sit in; with another copy
    installed (the reference solution, in a student's environment, say) they would pass or
    fail for the wrong code, so they stop before running."""
    wrong = []
    for name in STAGES:
        spec = importlib.util.find_spec(name)
        home = REPO / name / "src" / name
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        if origin is None or not origin.is_relative_to(home):
            found = "is not installed" if spec is None else f"comes from {spec.origin or spec}"
            wrong.append(f"  {name} {found}, not {home}")
    if wrong:
        raise pytest.UsageError(
            f"These tests check the repository {REPO}, but Python imports other code:\n"
            + "\n".join(wrong) + "\nInstall this repository's stages into the environment "
            "you test with (from its root: pip install -e ./stage1_autodiff -e ./stage2_jit "
            "-e ./stage3_vmap -e ./stage4_sharding), or grade with python tools/grade.py, "
            "which puts them first on the path.")


def _launches_take_python_ints() -> None:
    """Under Numba's CUDA simulator a kernel's grid and block may be NumPy integers; on a
    GPU, numba-cuda's launch (cuda.core's ``LaunchConfig``) refuses them with a ValueError.
    The simulator is made as strict, so that the suite finds what only a GPU found."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    configure = FakeCUDAKernel.__getitem__

    def strict(self, configuration):  # noqa: ANN001, ANN202 -- the simulator's signature
        for dims in configuration[:2]:
            for d in dims if isinstance(dims, tuple) else (dims,):
                if type(d) is not int:
                    raise ValueError(f"a kernel's grid and block must be Python ints, as a "
                                     f"GPU's launch requires; got {dims!r}")
        return configure(self, configuration)

    FakeCUDAKernel.__getitem__ = strict


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and importlib.util.find_spec("numba.cuda"):
    _launches_take_python_ints()
