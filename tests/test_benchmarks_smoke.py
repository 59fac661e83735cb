"""The benchmark scripts run (``--quick``): each checks its results against NumPy or stage 1
before timing, so this catches a benchmark that has silently gone wrong. Speed itself is
never asserted. ``--quick`` times are not measurements, so it must leave the course's plots
alone; the plotting itself is checked on made-up figures, into a temporary folder."""

import os
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
