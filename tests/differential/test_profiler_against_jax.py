"""``jax.profiler`` against JAX 0.10.2 (an ``AttributeError`` under the import swap before):
the same program traced by both libraries writes a gzipped Chrome trace in the same place,
``log_dir/plugins/profile/<date>/<host>.trace.json.gz`` (and ``perfetto_trace.json.gz`` when
asked), holding the program's annotations with JAX's names and arguments and a span per
Python call named as JAX names them; the misuses raise JAX's errors."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402


def helper_the_trace_should_show(x):
    return x * 2


def _program(j):
    with j.profiler.TraceAnnotation("outer", batch=128):
        with j.profiler.StepTraceAnnotation("train", step_num=3):
            helper_the_trace_should_show(np.float32(1.0))
        j.profiler.annotate_function(lambda x: x, name="identity")(1)
        j.jit(lambda x: x + 1)(np.ones(3, np.float32))


def _traced(j, log_dir: Path, **options) -> tuple[list[Path], list[dict]]:
    with j.profiler.trace(log_dir, **options):
        _program(j)
    files = sorted(log_dir.glob("plugins/profile/*/*.json.gz"))
    events = json.load(gzip.open(files[0]))["traceEvents"]
    return files, events


def _spans(events: list[dict]) -> dict[str, dict]:
    return {e["name"]: e for e in events if e.get("ph") == "X"}


@pytest.mark.parametrize("perfetto", [False, True])
def test_the_trace_is_written_where_jax_writes_it(tmp_path, perfetto):
    names = []
    for j, where in ((jax, tmp_path / "jax"), (oj, tmp_path / "ours")):
        files, _ = _traced(j, where, create_perfetto_trace=perfetto)
        names.append({f.name for f in files})
    host = f"{socket.gethostname()}.trace.json.gz"
    assert host in names[0] and names[0] == names[1]
    assert ("perfetto_trace.json.gz" in names[1]) == perfetto


def test_annotations_and_python_calls_are_spans_as_jax_names_them(tmp_path):
    theirs = _spans(_traced(jax, tmp_path / "jax")[1])
    ours = _spans(_traced(oj, tmp_path / "ours")[1])
    for name in ("outer", "train", "identity"):
        assert ours[name].get("args") == theirs[name].get("args"), name
    assert ours["train"]["args"] == {"step_num": "3"}
    outer, train = ours["outer"], ours["train"]
    assert outer["ts"] <= train["ts"] and train["ts"] + train["dur"] <= outer["ts"] + outer["dur"]
    line = helper_the_trace_should_show.__code__.co_firstlineno
    call = f"${Path(__file__).name}:{line} helper_the_trace_should_show"
    assert call in theirs and call in ours


def test_python_tracer_level_0_records_only_annotations(tmp_path):
    options = oj.profiler.ProfileOptions()
    options.python_tracer_level = 0
    spans = _spans(_traced(oj, tmp_path, profiler_options=options)[1])
    assert {"outer", "train", "identity"} <= set(spans)
    assert not [name for name in spans if name.startswith("$")]


def test_annotate_function_keeps_the_function():
    for j in (jax, oj):
        step = j.profiler.annotate_function(helper_the_trace_should_show)
        assert step(3) == 6 and step.__name__ == "helper_the_trace_should_show"


def test_misuse_raises_as_jax(tmp_path):
    for j in (jax, oj):
        with pytest.raises(RuntimeError, match="No profile started"):
            j.profiler.stop_trace()
        j.profiler.start_trace(tmp_path / j.__name__)
        try:
            with pytest.raises(RuntimeError, match="already been started"):
                j.profiler.start_trace(tmp_path / j.__name__)
        finally:
            j.profiler.stop_trace()
