"""Stage 4 on several processes (stage4_sharding/distributed.py), run under ``mpiexec``.

The same programs (programs.py) run here in one process with 8 devices, and under
``mpiexec -n 2`` and ``-n 4`` with 8 devices in all (4 or 2 per process, oversubscribed
on a small machine): the results must agree. Then the failures: an exception on one
process ends the job with its error, processes running different programs stop with an
error naming them, and a process that never arrives makes the others abort at the
timeout; none of them hangs.

Skipped without the ``mpi`` extra (``pip install -e './stage4_sharding[mpi]'``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
MPIEXEC = shutil.which("mpiexec", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                       os.environ.get("PATH", "")]))
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
    reason="needs mpi4py and mpiexec: pip install -e './stage4_sharding[mpi]'")

sys.path.insert(0, str(HERE))
import programs  # noqa: E402


def run(processes: int, name: str, tmp_path: Path, timeout: float = 120,
        **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Runs program ``name`` under ``mpiexec -n processes``, 8 devices in all."""
    out = tmp_path / f"{name}-{processes}.npz"
    environment = dict(os.environ, JAX_NUM_CPU_DEVICES=str(8 // processes), **env)
    result = subprocess.run([MPIEXEC, "-n", str(processes), sys.executable,
                             str(HERE / "programs.py"), name, str(out)],
                            capture_output=True, text=True, timeout=timeout, env=environment)
    return result, out


@pytest.fixture(scope="module")
def one_process() -> dict[str, dict[str, np.ndarray]]:
    """The programs' results in this process, on its 8 devices."""
    return {"training": programs.training(), "collectives": programs.collectives()}


@pytest.mark.parametrize("processes", [2, 4])
@pytest.mark.parametrize("name", ["training", "collectives"])
def test_several_processes_give_the_results_of_one(name, processes, one_process, tmp_path):
    """Data parallelism, FSDP and tensor parallelism, and shard_map with every collective
    (over an axis that crosses processes and one that does not)."""
    result, out = run(processes, name, tmp_path)
    assert result.returncode == 0, result.stderr
    got, want = np.load(out), one_process[name]
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("processes", [2, 4])
def test_each_process_sees_its_devices_and_blocks_of_global_arrays(processes, tmp_path):
    """jax.devices() and local_devices(), make_array_from_process_local_data, device_put of
    the same value everywhere, addressable_shards, is_fully_addressable, JAX's error for
    np.asarray of an array a process does not hold whole, process_allgather (programs.api
    asserts them in every process)."""
    result, out = run(processes, "api", tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(np.load(out)["sum"]) == float(programs.api()["sum"]) == 496.0


@pytest.mark.parametrize("processes, share", [(2, 2 / 8), (4, 4 / 8)])
def test_the_cost_model_counts_the_bytes_that_cross_processes(processes, share, tmp_path):
    """An all-reduce over 8 devices is a ring of 8 links; with 4 devices per process, 2
    of them join devices of different processes, with 2 per process, 4."""
    result, out = run(processes, "costs", tmp_path)
    assert result.returncode == 0, result.stderr
    got, alone = np.load(out), programs.costs()
    assert float(got["sent"]) == float(alone["sent"]) == 2 * 7 / 8 * 1024 * 4
    assert float(alone["across"]) == 0.0
    assert float(got["across"]) == pytest.approx(share * float(got["sent"]))


def test_an_exception_on_one_process_ends_the_job_with_its_error(tmp_path):
    result, _ = run(2, "fail_on_one_process", tmp_path, timeout=60)
    assert result.returncode != 0
    assert "ValueError: process 1 fails here on purpose" in result.stderr
    assert "aborting the job (MPI_Abort)" in result.stderr


def test_processes_running_different_programs_get_an_error(tmp_path):
    result, _ = run(2, "different_programs", tmp_path, timeout=60)
    assert result.returncode != 0
    assert "The processes run different programs at this call" in result.stderr


def test_a_process_that_never_arrives_makes_the_others_abort_at_the_timeout(tmp_path):
    result, _ = run(2, "late_process", tmp_path, timeout=50,
                    JAX_FROM_NUMPY_COLLECTIVE_TIMEOUT="3")
    assert result.returncode != 0
    assert "waited 3 s for the other processes" in result.stderr


def test_initialize_checks_how_it_is_called(tmp_path):
    """Outside mpiexec: an error saying how to launch, unless num_processes=1; once only;
    before the devices are first used; arguments that contradict mpiexec's."""
    script = """
import stage4_sharding as jax
for call in (lambda: jax.distributed.initialize(),
             lambda: jax.distributed.initialize(num_processes=2)):
    try:
        call()
    except ValueError as error:
        print("outside:", error)
jax.distributed.initialize(num_processes=1, process_id=0)
print("job:", jax.process_index(), jax.process_count(), jax.device_count())
try:
    jax.distributed.initialize(num_processes=1)
except RuntimeError as error:
    print("twice:", error)
jax.distributed.shutdown()
try:
    jax.distributed.initialize(num_processes=1)
except RuntimeError as error:
    print("late:", error)
"""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "OMPI"))}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, env=environment)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["outside", "outside", "job", "twice",
                                                      "late"]
    assert "mpiexec -n 2 python your_script.py" in lines[0]
    assert lines[2] == "job: 0 1 8"
    assert "should only be called once" in lines[3]
    assert "must be called before any JAX computations" in lines[4]
