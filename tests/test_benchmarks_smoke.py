"""The benchmark scripts run (``--quick``): each checks its results against NumPy or stage 1
before timing, so this catches a benchmark that has silently gone wrong. Speed itself is
never asserted. ``--quick`` times are not measurements, so it must leave the course's plots
alone; the plotting itself is checked on made-up figures, into a temporary folder."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
ASSETS = BENCHMARKS.parent / "course" / "assets"


def course_plots() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in ASSETS.glob("*.png")}


@pytest.mark.slow
@pytest.mark.parametrize("script", ["bench_stage1.py", "bench_stage2.py", "bench_buffers.py",
                                    "bench_stage3.py", "bench_stage4.py"])
def test_benchmark_runs_quickly_and_checks_its_results(script, tmp_path):
    env = dict(os.environ, JAX_FROM_NUMPY_CACHE_DIR=str(tmp_path))
    plots_before = course_plots()
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "target" in done.stdout
    assert course_plots() == plots_before, f"{script} --quick rewrote a plot in course/assets/"


def why_mpi_cannot_run() -> str | None:
    """Why bench_mpi.py cannot start its processes here, or None when it can."""
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install mpi4py mpich)"
    beside = Path(sys.executable).parent / "mpiexec"  # where bench_mpi.py looks first
    if not beside.is_file() and shutil.which("mpiexec") is None:
        return f"no mpiexec beside {sys.executable} or on PATH (pip install mpich)"
    return None


@pytest.mark.skipif(why_mpi_cannot_run() is not None, reason=str(why_mpi_cannot_run()))
def test_the_mpi_benchmark_fits_latency_and_bandwidth_and_predicts_each_collective():
    plots_before = course_plots()
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_mpi.py"), "--quick",
                           "--processes", "2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "latency α =" in done.stdout and "bandwidth 1/β =" in done.stdout
    assert "measured/predicted" in done.stdout
    for collective in ("Allreduce", "Allgather", "Reduce_scatter_block", "Alltoall",
                       "Sendrecv"):
        assert f"  {collective}" in done.stdout, f"no row for {collective}"
    assert course_plots() == plots_before, "bench_mpi.py --quick rewrote a plot"


@pytest.fixture
def plotting(monkeypatch, tmp_path):
    """benchmarks/plotting.py, writing into tmp_path instead of course/assets/."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import plotting
    monkeypatch.setattr(plotting, "ASSETS", tmp_path)
    return plotting


def made_up_panels(plotting):
    return [plotting.PlotPanel("pairwise", "Python loop",
                               [("ours, jit", 7000.0), ("Python loop", 1.0),
                                ("JAX jit(vmap)", 1700.0)]),
            plotting.PlotPanel("MLP", "ours, 1 device",
                               [("ours, 8 devices", 0.8), ("ours, 1 device", 1.0)])]


def test_a_plot_is_a_png_stamped_with_the_run(plotting, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    plotting.write_course_plot(made_up_panels(plotting), "made_up", "a title", "ours", 1.5)
    assert (tmp_path / "made_up.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert str(tmp_path / "made_up.png") in capsys.readouterr().out
    stamp = plotting._stamp(1.5, ["JAX jit(vmap)"])
    for fact in ("cores", "load average 1.50", "NumPy", "Numba", "JAX"):
        assert fact in stamp


def test_without_matplotlib_the_plot_is_skipped_and_says_how_to_install_it(
        plotting, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    plotting.write_course_plot(made_up_panels(plotting), "made_up", "a title", "ours", 1.5)
    assert not (tmp_path / "made_up.png").exists()
    assert "pip install matplotlib" in capsys.readouterr().out


def test_the_cost_model_plot_is_a_png(plotting, tmp_path):
    pytest.importorskip("matplotlib")
    collectives = {"Allreduce (sum)": [(2e-6, 3e-6), (2e-4, 5e-4)],
                   "Sendrecv, ring": [(1e-6, 2e-6), (1e-4, 3e-4)]}
    plotting.write_cost_model_plot([8, 1024, 1 << 20], [1e-6, 1.2e-6, 1e-4], (1e-6, 1e-10),
                                   collectives, "made_up_mpi", "a title", 1.5, "MPICH 5")
    assert (tmp_path / "made_up_mpi.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
